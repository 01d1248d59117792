"""Pieces shared by the RETECO declarations (Track 1 TEMPO, Track 2 RECOR): the ``reteco``
contract with the domain-corpus check, and reading explicit reference files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..contracts.base import ValidationReport
from ..contracts.reteco import validate_reteco
from ..datasets.base import MissingDataError, data_root
from ..errors import Problem
from ..kernels.ranking import TIE_BREAKS
from .declaration import Option

__all__ = ["validate_reteco_domains", "COMMON_OPTIONS", "FILE_OPTIONS", "TIE_BREAK_OPTION", "domain_check",
           "explicit_file", "missing_release"]


def domain_check(
    cleaned: pd.DataFrame,
    topics: pd.DataFrame,
    corpus: pd.DataFrame,
    path: str | None,
    message: str,
) -> tuple[pd.DataFrame, list[Problem], int]:
    """Discard rows whose document is not in the corpus of the topic's own domain.

    ``message`` is formatted with ``doc`` and ``domain``. Returns the kept rows, one problem per
    discarded row (kind ``other_domain_doc`` for a document of another domain's corpus, ``unknown_doc``
    for one in no corpus) and how many of the discarded documents belong to
    another domain's corpus (the rest are in no corpus at all)."""
    if not len(cleaned):
        return cleaned, [], 0
    per_topic = topics.drop_duplicates("query_id")
    docs_index, domains, pair_keys = _corpus_keys(corpus)
    # codes by hash lookups over whole columns: row -> topic -> its domain's code; row -> document
    r_topic = positions(cleaned["query_id"], pd.Index(per_topic["query_id"].to_numpy(dtype=object)))
    topic_domain = np.r_[per_topic["domain"].to_numpy(dtype=object), np.array([np.nan], dtype=object)]
    topic_code = domains.get_indexer(topic_domain)  # the last entry stands for "no topic" (index -1)
    r_dom = np.where(r_topic >= 0, topic_code[r_topic], -1)
    r_doc = positions(cleaned["doc_id"], docs_index)
    key = r_dom.astype(np.int64) * max(len(docs_index), 1) + r_doc
    ok = (r_doc >= 0) & (r_dom >= 0) & np.isin(key, pair_keys)
    dropped = cleaned[~ok]
    other = int((r_doc[~ok] >= 0).sum())
    dropped_domain = topic_domain[r_topic[~ok]].tolist()
    in_corpus = (r_doc[~ok] >= 0).tolist()
    problems = [
        Problem(message.format(doc=row.doc_id, domain=d), line=int(row.line) or None, query_id=row.query_id,
                path=path, kind="other_domain_doc" if known else "unknown_doc", doc_id=row.doc_id)
        for row, d, known in zip(dropped.itertuples(index=False), dropped_domain, in_corpus, strict=True)
    ]
    return cleaned[ok].reset_index(drop=True), problems, other


def positions(values: pd.Series, index: pd.Index) -> np.ndarray:
    """The position of every value in ``index`` (unique), -1 where absent: ``index.get_indexer``,
    through arrow's hash lookup when ``values`` are strings (pandas hashes one Python object per
    row; arrow reads the column as it is, about ten times faster on a run's document ids)."""
    try:
        arr = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = None
    if arr is not None and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        try:
            value_set = pa.array(index.to_numpy(dtype=object), type=arr.type, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            value_set = None
        if value_set is not None:
            found = pc.index_in(arr, value_set=value_set).fill_null(-1)
            return found.to_numpy(zero_copy_only=False).astype(np.int64)
    return index.get_indexer(values.to_numpy(dtype=object))


#: id(corpus) -> (the corpus itself, keys): holding the frame keeps its id from being reused
_CORPUS_KEYS: dict[int, tuple[pd.DataFrame, tuple]] = {}


def _corpus_keys(corpus: pd.DataFrame) -> tuple[pd.Index, pd.Index, np.ndarray]:
    """(document ids, domains, ``domain_code * n_docs + doc_code`` of every corpus pair), built once
    per corpus frame (a leaderboard checks many runs against one corpus)."""
    cached = _CORPUS_KEYS.get(id(corpus))
    if cached is not None and cached[0] is corpus:
        return cached[1]
    docs = corpus["doc_id"].to_numpy(dtype=object)
    doms = corpus["domain"].astype(str).to_numpy(dtype=object)
    docs_index = pd.Index(docs).unique()
    domains = pd.Index(doms).unique()
    keys = np.unique(domains.get_indexer(doms).astype(np.int64) * max(len(docs_index), 1)
                     + docs_index.get_indexer(docs))
    if len(_CORPUS_KEYS) > 8:
        _CORPUS_KEYS.clear()
    _CORPUS_KEYS[id(corpus)] = (corpus, (docs_index, domains, keys))
    return docs_index, domains, keys


def validate_reteco_domains(
    frame: pd.DataFrame,
    read_problems: list[Problem],
    path: str | None,
    *,
    topics: pd.DataFrame,
    corpus: pd.DataFrame,
    corpus_scope: str,
    k: int,
    message: str,
    check_all_corpus: bool = True,
    query_ids: str = "exact",
) -> ValidationReport:
    """The ``reteco`` contract, then (``corpus_scope='domain'``) the domain-corpus check.

    ``query_ids``: ``'exact'`` (a run whose ids match the topics only in another form warns with a
    `QueryIdMismatchWarning`) or ``'normalize'`` (such ids are
    mapped to the topics' form, see `reteco_measures.query_ids`).
    ``check_all_corpus``: give the contract the whole corpus (unknown documents are reported by
    the contract) or only check per domain (every unknown document reported by the domain check).
    """
    if corpus_scope not in ("domain", "all"):
        raise ValueError(f"corpus_scope must be 'domain' or 'all', not {corpus_scope!r}")
    if len(frame) and len(topics):
        # never a silent zero: a run that names the topics in another id form is refused (or, with
        # query_ids='normalize', mapped) before the contract would discard every row as unknown
        # (a run sharing nothing with the topics even then is the contract's to report, row by row)
        from ..query_ids import check_query_ids, map_query_ids, match_query_ids

        match = match_query_ids(frame["query_id"], topics["query_id"])
        if query_ids == "normalize":
            frame = map_query_ids(frame, match)
        elif match.n_normalized > match.n_exact:
            check_query_ids(frame["query_id"], topics["query_id"], what="run", reference_what="topics",
                            mode="exact")
    whole = corpus[["doc_id"]] if (check_all_corpus or corpus_scope == "all") else None
    report = validate_reteco(frame, corpus=whole, queries=topics[["query_id", "domain"]], top_k=k)
    # the contract's rules: a removed row is a warning, the rest of the run still counts
    problems = _warnings(read_problems) + [replace(p, path=path) if p.path is None else p for p in report.errors]
    cleaned = report.run
    other = 0
    if corpus_scope == "domain":
        cleaned, dom_problems, other = domain_check(cleaned, topics, corpus, path, message)
        problems += _warnings(dom_problems)
        if len(report.run) and not len(cleaned):
            problems.insert(0, Problem("no usable row: every row was removed; there is nothing to score",
                                       path=path, kind="empty", **_severity("error")))
    report.errors = problems
    report.run = cleaned
    report.extra["other_domain_doc"] = other
    return report


def _severity(level: str) -> dict:
    """``{"severity": level}`` where problems carry a severity."""
    return {"severity": level} if "severity" in Problem.__dataclass_fields__ else {}


def _warnings(problems: list[Problem]) -> list[Problem]:
    return [replace(p, **_severity("warning")) for p in problems]


def read_run_any(run: Any) -> tuple[pd.DataFrame, list[Problem], str | None]:
    """The TREC run's rows with line numbers, read problems and the file name."""
    from ..contracts.reteco import load_run_rows

    return load_run_rows(run, "trec")


#: options of every RETECO preset
COMMON_OPTIONS = (
    Option("domain", None, "score only this domain (repeatable; default: all present)", action="append",
           data=True, flag="--domain"),
    Option("k", 10, "cutoff of every measure (10)", type=int),
    Option("corpus_scope", "domain", "documents must belong to the topic's domain corpus (default) or any "
           "loaded domain", choices=("domain", "all")),
    Option("query_ids", "exact", "read the run's query ids in the topics' form where only the form differs "
           "(#turnN / _turn_N, domain/id / id, 001 / 1); by default such a run is refused",
           choices=("exact", "normalize"), action="store_const", const="normalize", flag="--normalize-ids"),
)

def explicit_file(opts: dict, name: str, folder: Path | None, default: str) -> str | None:
    """The reference file of option ``name`` (``--qrels``, ``--topics``, ``--corpus`` ...) when
    given, else ``folder / default`` when that file exists (the organisers' sample layout), else None."""
    if opts.get(name):
        return str(opts[name])
    if folder is not None and (folder / default).is_file():
        return str(folder / default)
    return None


def missing_release(exc: MissingDataError, data: Any, track: str, what: str,
                    sample_files: tuple[str, ...]) -> MissingDataError:
    """A missing-release error in the words of the benchmark's own parameters (``data=``,
    ``topics=``, ``qrels=``; the command line turns them into ``--data``, ``--topics``,
    ``--qrels``), never in loader function names.

    When ``<data root>/<track>`` holds the organisers' sample files (``sample_files``) - the
    folder given is the sample's root, not the release root - the message names that folder:
    ``pass data='<root>/track1_tempo'``. ``track`` is the sample's folder name
    (``track1_tempo``), ``what`` the release (``the Track 1 (TEMPO) release``)."""
    try:
        root = data_root(data)
    except MissingDataError:
        return exc
    sample = root / track
    if all((sample / name).is_file() for name in sample_files):
        return MissingDataError(
            f"{root} holds the organisers' sample in {track}/ ({', '.join(sample_files)}), not "
            f"{what} under reteco/{track}/<domain>/: pass data='{sample}'")
    files = ", ".join(sample_files)
    return MissingDataError(
        f"missing {what}: put it at {root / 'reteco' / track}/<domain>/..., or pass data=... naming "
        f"a folder that holds the organisers' sample files ({files}), or give topics=... and qrels=...")


#: explicit reference files: score any layout (the organisers' public sample, a single folder)
FILE_OPTIONS = (
    Option("qrels", None, "qrels file (TREC) instead of the release layout under --data", data=True),
    Option("topics", None, "topics file instead of the release layout (TEMPO: examples JSONL; RECOR: "
           "benchmark JSON/JSONL conversations)", data=True),
    Option("corpus", None, "documents JSONL (doc_id / id per line) for the unknown-document check", data=True),
)

#: ordering of tied scores (trec_eval's, as the official pytrec_eval scoring; every policy of
#: `reteco_measures.kernels.ranking.TIE_BREAKS` is accepted)
TIE_BREAK_OPTION = Option("tie_break", "trec_eval", "ordering of tied scores (default trec_eval, as the official "
                          "pytrec_eval scoring)", choices=tuple(TIE_BREAKS))
