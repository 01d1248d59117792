"""Run and output contracts (each benchmark's submission rules): ``validate_run(run, contract, ...)``."""

from __future__ import annotations

from typing import Any

# one module per contract; each registers its validator with ``@contract(name)``
from . import chunqiu, ikat, reteco, spoken  # noqa: F401
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
        raise ValueError(f"unknown contract {contract!r}; choose one of {sorted(CONTRACTS)}") from None
    return fn(run, corpus=corpus, queries=queries, top_k=top_k)
