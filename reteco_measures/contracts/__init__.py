"""Run and output contracts (each benchmark's submission rules): ``validate_run(run, contract, ...)``.

The machinery lives here (`ValidationReport`, the `CONTRACTS` registry, the `contract`
decorator); the contracts themselves live in their benchmark's folder
(`reteco_measures.benchmarks.reteco.contract`, ``...chunqiu.contract``, ``...spoken.contract``,
``...ikat2023.contract``) and register themselves when ``reteco_measures`` is imported."""

from __future__ import annotations

from typing import Any

from .base import CONTRACTS, ValidationReport, contract

__all__ = ["validate_run", "ValidationReport", "CONTRACTS", "contract"]


def validate_run(
    run: Any,
    contract: str,
    *,
    corpus: Any = None,
    queries: Any = None,
    top_k: int = 10,
) -> ValidationReport:
    """Check a run against a benchmark's contract and return the cleaned run.

    Args:
        run: a path (or text) of the run file, or a DataFrame / dict run.
        contract: ``'reteco'``, ``'chunqiu'``, ``'spoken'`` or ``'ikat'``.
        corpus: doc ids in corpus order, or a DataFrame with ``doc_id`` (+ ``domain``).
        queries: expected query ids, or a DataFrame with ``query_id`` (+ ``domain``).
        top_k: the maximum results per query the contract allows (where it has one).

    Returns:
        A `ValidationReport` (``.ok``, ``.valid``, ``.errors``, ``.run``). Problems in
        the data never raise; only an unknown contract name or a missing file does.
    """
    try:
        fn = CONTRACTS[contract]
    except KeyError:
        if not CONTRACTS:  # no benchmark folder imported yet: they register the contracts
            raise ValueError(f"unknown contract {contract!r}: no contract is registered yet; import "
                             "reteco_measures.benchmarks first (rm.validate_run does)") from None
        raise ValueError(f"unknown contract {contract!r}; choose one of {sorted(CONTRACTS)}") from None
    return fn(run, corpus=corpus, queries=queries, top_k=top_k)
