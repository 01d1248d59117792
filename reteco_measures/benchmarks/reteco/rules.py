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

from ...contracts.base import ValidationReport
from ...datasets.base import MissingDataError, data_root
from ...errors import Problem
from ...kernels.ranking import TIE_BREAKS
from ...query_ids import check_query_ids, map_query_ids, match_query_ids
from ..declaration import Option
from .contract import (
    check_rows,
    corpus_codes,
    doc_id_index,
    id_positions,
    ids_only,
    load_run_rows,
    reteco_report,
    validate_reteco,
)

__all__ = ["validate_reteco_domains", "COMMON_OPTIONS", "FILE_OPTIONS", "TIE_BREAK_OPTION", "domain_check",
           "explicit_file", "RULES", "RULES_OPTION", "KIT_AGGREGATION", "RULES_TEXT", "kit_run", "kit_qrels", "kit_macro",
           "gold_outside_corpus", "gold_notes", "whole_corpus_topics", "BASELINES", "BASELINE_SOURCE", "baseline_note",
           "missing_release"]


def domain_check(
    cleaned: pd.DataFrame,
    topics: pd.DataFrame,
    corpus: pd.DataFrame,
    path: str | None,
    message: str,
    doc_positions: tuple[pa.Array, np.ndarray] | None = None,
) -> tuple[pd.DataFrame, list[Problem], int]:
    """Discard rows whose document is not in the corpus of the topic's own domain.

    ``message`` is formatted with ``doc`` and ``domain``. Returns the kept rows (a ``rank`` column,
    the trec_eval ranks of ``cleaned``, renumbered among the kept rows), one problem (a
    warning: the row is discarded, the rest of the run counts) per
    discarded row (kind ``other_domain_doc`` for a document of another domain's corpus, ``unknown_doc``
    for one in no corpus) and how many of the discarded documents belong to
    another domain's corpus (the rest are in no corpus at all). ``doc_positions``: (an id index,
    each row's position in it) already computed by the contract, used when that index is the
    corpus' own."""
    if not len(cleaned):
        return cleaned, [], 0
    drop, problems, other, r_topic = _domain_discards(cleaned, np.ones(len(cleaned), dtype=bool), topics, corpus,
                                                      path, message, doc_positions)
    kept = cleaned[~drop].reset_index(drop=True)
    if "rank" in cleaned.columns and drop.any():
        kept["rank"] = _renumbered(cleaned["rank"].to_numpy(), r_topic, ~drop)
    return kept, problems, other


def _domain_discards(frame: pd.DataFrame, keep: np.ndarray, topics: pd.DataFrame, corpus: pd.DataFrame,
                     path: str | None, message: str, doc_positions: tuple[pa.Array, np.ndarray] | None = None,
                     ) -> tuple[np.ndarray, list[Problem], int, np.ndarray]:
    """The domain check over the rows ``keep`` of ``frame`` (see `domain_check`): (the rows it
    discards, their problems in row order, how many of them are in another domain's corpus, each
    row's topic code). ``doc_positions`` are those of every row of ``frame``."""
    per_topic = topics.drop_duplicates("query_id")
    docs_index, domains, pair_keys, doc_domain = _corpus_keys(corpus)
    # codes by hash lookups over whole columns: row -> topic -> its domain's code; row -> document
    r_topic = positions(frame["query_id"], pd.Index(per_topic["query_id"].to_numpy(dtype=object)))
    topic_domain = np.r_[per_topic["domain"].to_numpy(dtype=object), np.array([np.nan], dtype=object)]
    topic_code = domains.get_indexer(topic_domain)  # the last entry stands for "no topic" (index -1)
    r_dom = np.where(r_topic >= 0, topic_code[r_topic], -1)
    if doc_positions is not None and doc_positions[1] is not None and len(doc_positions[1]) == len(frame) and \
            (doc_positions[0] is docs_index or doc_positions[0].equals(docs_index)):
        r_doc = doc_positions[1]
    else:
        r_doc = id_positions(frame["doc_id"], docs_index)
    if doc_domain is not None:  # every document in one domain: compare codes
        ok = (r_doc >= 0) & (r_dom >= 0) & (doc_domain[np.maximum(r_doc, 0)] == r_dom)
    else:
        key = r_dom.astype(np.int64) * max(len(docs_index), 1) + r_doc
        ok = (r_doc >= 0) & (r_dom >= 0) & np.isin(key, pair_keys)
    drop = keep & ~ok
    rows = np.flatnonzero(drop)
    other = int((r_doc[rows] >= 0).sum())
    # the discarded rows' values, fetched for those rows only (one take per column)
    doc_ids = frame["doc_id"].take(rows).tolist() if len(rows) else []
    query_ids = frame["query_id"].take(rows).tolist() if len(rows) else []
    lines = frame["line"].to_numpy()[rows].tolist()
    level = _severity("warning")
    problems = [
        Problem(message.format(doc=doc, domain=d), line=int(line) or None, query_id=qid, path=path,
                kind="other_domain_doc" if known else "unknown_doc", doc_id=doc, **level)
        for doc, qid, line, d, known in zip(doc_ids, query_ids, lines, topic_domain[r_topic[rows]].tolist(),
                                            (r_doc[rows] >= 0).tolist(), strict=True)
    ]
    return drop, problems, other, r_topic


def _renumbered(rank: np.ndarray, query: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The kept rows' ranks renumbered among the kept rows: each loses one per removed row of its
    query ranked above it (``query``: any integer code per row, -1 for rows of no kept query), so
    trec_eval ranks of the whole run become the trec_eval ranks of the kept run (removing rows
    changes no other row's order)."""
    rank = rank.astype(np.int64, copy=False)
    width = int(rank.max()) + 1 if len(rank) else 1
    gone = ~keep & (query >= 0)
    removed = np.sort(query[gone].astype(np.int64) * width + rank[gone])
    base = query[keep].astype(np.int64) * width
    above = np.searchsorted(removed, base + rank[keep]) - np.searchsorted(removed, base)
    return rank[keep] - above


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


def _dictionary(column: pd.Series) -> tuple[np.ndarray, list]:
    """(each row's code, the distinct values in first-appearance order) of a text column, from one
    Arrow dictionary encoding."""
    try:
        values = pa.array(column.array, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        values = pa.array(column.astype(str).to_numpy(dtype=object), type=pa.large_string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = pc.dictionary_encode(values)
    return (encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary.to_pylist())


def _corpus_keys(corpus: pd.DataFrame) -> tuple[pa.Array, pd.Index, np.ndarray, np.ndarray | None]:
    """(the corpus' id index `doc_id_index`, domains, ``domain_code * n_docs + doc_code`` of every
    corpus pair, sorted and distinct, and - when every document is in one domain only - each
    indexed document's domain code, else None), built once per corpus frame (a leaderboard checks
    many runs against one corpus)."""
    cached = _CORPUS_KEYS.get(id(corpus))
    if cached is not None and cached[0] is corpus:
        return cached[1]
    docs_index, doc_codes = corpus_codes(corpus)
    dom_codes, dom_values = _dictionary(corpus["domain"].astype(str))
    domains = pd.Index(dom_values, dtype=object)
    width = max(len(docs_index), 1)
    valid = (doc_codes >= 0) & (dom_codes >= 0)
    doc_codes, dom_codes = doc_codes[valid], dom_codes[valid]
    # the usual corpus: every document in one domain (then no sort of the pairs is needed)
    doc_domain = np.full(len(docs_index), -1, dtype=np.int64)
    doc_domain[doc_codes] = dom_codes
    if len(doc_codes) and bool(np.all(doc_domain[doc_codes] == dom_codes)) and bool(np.all(doc_domain >= 0)):
        keys = np.sort(doc_domain * width + np.arange(len(docs_index), dtype=np.int64))
    else:
        keys = np.unique(dom_codes * width + doc_codes)
        doc_domain = None
    if len(_CORPUS_KEYS) > 8:
        _CORPUS_KEYS.clear()
    _CORPUS_KEYS[id(corpus)] = (corpus, (docs_index, domains, keys, doc_domain))
    return docs_index, domains, keys, doc_domain


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
    rules: str = "page",
) -> ValidationReport:
    """The ``reteco`` contract, then (``corpus_scope='domain'``) the domain-corpus check.

    ``rules='kit'``: the starter kit's reading (a repeated document keeps its last score; unknown
    documents stay in the ranking, counted in ``report.extra["kit_unknown_doc"]``).

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

        match = match_query_ids(frame["query_id"], topics["query_id"])
        if query_ids == "normalize":
            frame = map_query_ids(frame, match)
        elif match.n_normalized > match.n_exact:
            check_query_ids(frame["query_id"], topics["query_id"], what="run", reference_what="topics",
                            mode="exact")
    if rules == "kit":
        frame = kit_run(frame)
        n_unknown = int((id_positions(frame["doc_id"].astype(str), doc_id_index(corpus)) < 0).sum()) \
            if len(frame) else 0
        report = validate_reteco(frame, corpus=None, queries=topics[["query_id", "domain"]], top_k=k, path=path)
        # the kit skips a topic absent from the run (the evaluation page scores it 0)
        report.errors = _warnings(read_problems) + [
            replace(p, path=p.path or path, message="topic missing from the run (skipped: kit rules)",
                    kind="skipped_query") if p.kind == "missing_query" else
            p if p.path or not path else replace(p, path=path)
            for p in report.errors]
        report.extra["other_domain_doc"] = 0
        report.extra["kit_unknown_doc"] = n_unknown
        return report
    whole = ids_only(corpus) if (check_all_corpus or corpus_scope == "all") else None
    checked = check_rows(frame, corpus=whole, queries=topics[["query_id", "domain"]], path=path)
    n_kept = int(checked.keep.sum())
    discard, dom_problems, other = None, [], 0
    if corpus_scope == "domain" and n_kept:
        # on the rows the contract keeps, before they are taken: the run is taken and ranked once
        discard, dom_problems, other, _ = _domain_discards(checked.frame, checked.keep, topics, corpus, path,
                                                           message, (checked.doc_index, checked.doc_positions))
    report = reteco_report(checked, discard)
    report.extra.pop("doc_positions", None)
    # the contract's rules: a removed row is a warning, the rest of the run still counts
    problems = _warnings(read_problems) + [replace(p, path=path) if p.path is None else p for p in report.errors]
    problems += _warnings(dom_problems)
    if n_kept and not len(report.run):
        problems.insert(0, Problem("no usable row: every row was removed; there is nothing to score",
                                   path=path, kind="empty", **_severity("error")))
    report.errors = problems
    report.extra["other_domain_doc"] = other
    return report


def _severity(level: str) -> dict:
    """``{"severity": level}`` where problems carry a severity."""
    return {"severity": level} if "severity" in Problem.__dataclass_fields__ else {}


def _warnings(problems: list[Problem]) -> list[Problem]:
    """The problems as warnings (a problem that already is one is kept as it is)."""
    level = _severity("warning")
    return [p if not level or p.severity == "warning" else replace(p, **level) for p in problems]


def read_run_any(run: Any) -> tuple[pd.DataFrame, list[Problem], str | None]:
    """The TREC run's rows with line numbers, read problems and the file name.

    A list or tuple of paths is one submission written as several files (the starter kit writes
    one run file per domain): their rows are concatenated in the order given, each problem names
    its own file, and the returned name lists every file."""

    if isinstance(run, (list, tuple)) and run and all(isinstance(r, (str, Path)) for r in run) \
            and all(Path(r).is_file() for r in run):
        frames, problems, names = [], [], []
        for part in run:
            frame, probs, name = load_run_rows(str(part), "trec")
            frames.append(frame)
            problems += [replace(p, path=p.path or name) for p in probs]
            names.append(name or str(part))
        return pd.concat(frames, ignore_index=True), problems, ", ".join(names)
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


# ------------------------------------------------------------------------------------------------
# the two rule sets: the evaluation page (default) and the starter kit's baseline scoring

#: ``rules`` values: ``page`` = the RETECO evaluation page (https://datascienceuibk.github.io/RETECO/
#: evaluation.html); ``kit`` = the scoring of the organisers' starter kit (DataScienceUIBK/RETECO,
#: ``starter_kit/``), behind every published baseline number
RULES = ("page", "kit")

RULES_OPTION = Option(
    "rules", "page", "rule set: page (the RETECO evaluation page: missing topics score 0, unknown documents "
    "discarded, first occurrence of a repeated document kept, mean over topics; default) or kit (the "
    "organisers' starter-kit baseline scoring: gold outside the corpus and topics left without gold dropped, "
    "missing topics skipped, unknown documents kept, last score of a repeated document kept, per-domain "
    "means rounded to 5 decimals and averaged over domains)", choices=RULES)

#: how the official number aggregates under the kit's rules
KIT_AGGREGATION = ("starter-kit rules: mean over each domain's evaluated topics, rounded to 5 decimals, then the "
                   "mean over domains")

#: printed with every score: which rules produced the numbers
RULES_TEXT = {
    "page": "rules: page (RETECO evaluation page: mean over topics, missing topics score 0)",
    "kit": "rules: kit (RETECO starter kit: per-domain mean over evaluated topics rounded to 5 decimals, "
           "averaged over domains)",
}


def kit_run(frame: pd.DataFrame) -> pd.DataFrame:
    """The starter kit's reading of a run: a document repeated within a topic keeps its *last* score
    (the kit loads the run into a ``{topic: {doc: score}}`` mapping, so a later line overwrites an
    earlier one); the first-occurrence rule of the evaluation page then has nothing left to remove."""
    if not len(frame):
        return frame
    last = ~frame.duplicated(["query_id", "doc_id"], keep="last").to_numpy()
    return frame[last].reset_index(drop=True)


def gold_outside_corpus(qrels: pd.DataFrame, corpus: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str]]:
    """The relevant qrels rows whose document is not in the corpus of the row's domain (the whole
    corpus when the qrels carry no ``domain``), and the topics left with no relevant document in
    the corpus. Empty when there is no corpus."""
    empty = qrels.iloc[:0]
    if corpus is None or not len(qrels):
        return empty, []
    rel = qrels[qrels["relevance"] > 0]
    # membership on integer codes against the corpus' id index (built once per corpus frame)
    if "domain" in qrels.columns and "domain" in corpus.columns and corpus["domain"].astype(str).ne("").any():
        docs_index, domains, pair_keys, _ = _corpus_keys(corpus)
        r_doc = id_positions(rel["doc_id"].astype(str), docs_index)
        r_dom = domains.get_indexer(rel["domain"].astype(str).to_numpy(dtype=object))
        key = r_dom.astype(np.int64) * max(len(docs_index), 1) + r_doc
        inside = (r_doc >= 0) & (r_dom >= 0) & np.isin(key, pair_keys)
    else:
        inside = id_positions(rel["doc_id"].astype(str), doc_id_index(corpus)) >= 0
    outside = rel[~inside]
    kept_topics = set(rel.loc[inside, "query_id"].astype(str).tolist())
    left = [q for q in pd.unique(rel["query_id"].astype(str)) if q not in kept_topics]
    return outside, left


def whole_corpus_topics(qrels: pd.DataFrame, corpus: pd.DataFrame | None) -> list[tuple[str, str]]:
    """``(topic, domain)`` pairs whose relevant documents are the whole corpus of their domain (the
    organisers' public sample: each domain's corpus holds only its topic's gold documents), sorted;
    empty when the qrels or the corpus carry no ``domain``. On integer codes against the corpus'
    id index (`doc_id_index`, built once per corpus frame)."""
    if corpus is None or "domain" not in qrels.columns or "domain" not in corpus.columns or not len(corpus):
        return []
    docs_index, domains, pair_keys, _ = _corpus_keys(corpus)
    width = max(len(docs_index), 1)
    size = np.bincount(pair_keys // width, minlength=len(domains))  # distinct documents per domain
    rel = qrels.loc[qrels["relevance"] >= 1, ["query_id", "doc_id", "domain"]]
    r_doc = id_positions(rel["doc_id"].astype(str), docs_index)
    r_dom = domains.get_indexer(rel["domain"].astype(str).to_numpy(dtype=object))
    key = r_dom.astype(np.int64) * width + r_doc
    inside = (r_doc >= 0) & (r_dom >= 0) & np.isin(key, pair_keys)
    if not inside.any():
        return []
    found = pd.DataFrame({"query_id": rel["query_id"].astype(str).to_numpy(dtype=object)[inside],
                          "domain": domains.to_numpy(dtype=object)[r_dom[inside]], "key": key[inside]})
    n_rel = found.drop_duplicates().groupby(["query_id", "domain"]).size()
    need = size[domains.get_indexer(n_rel.index.get_level_values("domain"))]
    return [(str(q), str(d)) for q, d in n_rel.index[n_rel.to_numpy() >= need]]


def gold_notes(qrels: pd.DataFrame, corpus: pd.DataFrame | None, rules: str, unit: str = "topic") -> list[str]:
    """Gold documents absent from the corpus and topics left with no gold, counted and named (in
    every rule set; what happens to them depends on ``rules``)."""
    outside, left = gold_outside_corpus(qrels, corpus)
    notes = []
    if len(outside):
        named = ", ".join(f"{q}:{d}" for q, d in zip(outside["query_id"].head(5), outside["doc_id"].head(5),
                                                      strict=True))
        more = f" (+{len(outside) - 5} more)" if len(outside) > 5 else ""
        what = ("dropped from the qrels, as the starter kit does" if rules == "kit"
                else "kept in the qrels: they count in the ideal ranking but no run can retrieve them")
        notes.append(f"{len(outside)} gold document(s) are not in the corpus ({named}{more}): {what}")
    if left:
        named = ", ".join(left[:5]) + (f" (+{len(left) - 5} more)" if len(left) > 5 else "")
        what = "not evaluated (kit rules)" if rules == "kit" else "they score 0"
        notes.append(f"{len(left)} {unit}(s) have no gold document in the corpus ({named}): {what}")
    return notes


def kit_qrels(qrels: pd.DataFrame, corpus: pd.DataFrame | None, run_topics: Any) -> pd.DataFrame:
    """The qrels the starter kit evaluates: relevant rows whose document is not in the corpus are
    dropped, then topics left with no relevant document, then topics absent from the run (the kit
    skips them; the evaluation page scores them 0)."""
    outside, _ = gold_outside_corpus(qrels, corpus)
    q = qrels[~qrels.index.isin(outside.index)]
    has_gold = set(q.loc[q["relevance"] > 0, "query_id"].astype(str))
    present = set(pd.Series(run_topics, dtype=object).astype(str))
    keep = q["query_id"].astype(str).map(lambda x: x in has_gold and x in present)
    return q[keep.to_numpy(dtype=bool)].reset_index(drop=True)


def kit_macro(long: pd.DataFrame, official: str, topics: pd.DataFrame | None) -> tuple[float, dict[str, float]]:
    """The starter kit's number: the mean of ``official`` over each domain's evaluated topics,
    rounded to 5 decimals, then the plain mean over the domains that have an evaluated topic.
    Returns ``(macro, {domain: rounded mean})``."""
    rows = long[long["measure"] == official]
    if not len(rows):
        return float("nan"), {}
    if topics is not None and "domain" in topics.columns:
        dom = topics.drop_duplicates("query_id").set_index("query_id")["domain"]
        domains = rows["query_id"].map(dom).fillna("").astype(str)
    else:
        domains = pd.Series("", index=rows.index)
    means = rows["value"].groupby(domains.to_numpy(), sort=True).mean()
    per_domain = {str(d): round(float(v), 5) for d, v in means.items()}
    return float(np.mean(list(per_domain.values()))), per_domain


# ------------------------------------------------------------------------------------------------
# the organisers' published BM25 baselines (nDCG@10, starter-kit rules, data v1.1)

#: source of `BASELINES`
BASELINE_SOURCE = ("RETECO starter kit, starter_kit/BASELINE_RESULTS.md (github.com/DataScienceUIBK/RETECO): "
                   "BM25 k1=0.9 b=0.4, pytrec_eval ndcg_cut_10, data v1.1")

#: sub-track -> split -> "(macro)" or domain -> published nDCG@10 (starter-kit rules)
BASELINES: dict[str, dict[str, dict[str, float]]] = {
    "1a": {"train": {"(macro)": 0.1075, "bitcoin": 0.0856, "cardano": 0.1848, "economics": 0.0382,
                     "genealogy": 0.1242, "history": 0.0654, "hsm": 0.1736, "iota": 0.1563, "law": 0.0946,
                     "monero": 0.0382, "politics": 0.2810, "quant": 0.0255, "travel": 0.0506,
                     "workplace": 0.0798},
           "dev": {"(macro)": 0.1147, "bitcoin": 0.0370, "cardano": 0.1027, "economics": 0.0467,
                   "genealogy": 0.1949, "history": 0.0873, "hsm": 0.2489, "iota": 0.3309, "law": 0.0574,
                   "monero": 0.0320, "politics": 0.2625, "quant": 0.0237, "travel": 0.0442, "workplace": 0.0230}},
    "1b": {"train": {"(macro)": 0.1024, "bitcoin": 0.0888, "cardano": 0.1655, "economics": 0.0300,
                     "genealogy": 0.1181, "history": 0.0614, "hsm": 0.1729, "iota": 0.1403, "law": 0.0854,
                     "monero": 0.0622, "politics": 0.2403, "quant": 0.0085, "travel": 0.0423,
                     "workplace": 0.1162},
           "dev": {"(macro)": 0.1177, "bitcoin": 0.0299, "cardano": 0.0627, "economics": 0.0463,
                   "genealogy": 0.2183, "history": 0.1015, "hsm": 0.2140, "iota": 0.4195, "law": 0.0549,
                   "monero": 0.0113, "politics": 0.2371, "quant": 0.0403, "travel": 0.0645, "workplace": 0.0297}},
    "2a": {"train": {"(macro)": 0.1837, "biology": 0.2250, "drones": 0.1400, "earth_science": 0.2757,
                     "economics": 0.1573, "hardware": 0.1472, "law": 0.1047, "medicalsciences": 0.1188,
                     "politics": 0.1609, "psychology": 0.2208, "robotics": 0.1847, "sustainable_living": 0.2851},
           "dev": {"(macro)": 0.1827, "biology": 0.2034, "drones": 0.1695, "earth_science": 0.2195,
                   "economics": 0.1629, "hardware": 0.1605, "law": 0.1147, "medicalsciences": 0.1168,
                   "politics": 0.1514, "psychology": 0.2596, "robotics": 0.1574, "sustainable_living": 0.2938}},
    "2a_history": {"train": {"(macro)": 0.4539, "biology": 0.6369, "drones": 0.3162, "earth_science": 0.6324,
                             "economics": 0.4593, "hardware": 0.2935, "law": 0.2721, "medicalsciences": 0.2267,
                             "politics": 0.4423, "psychology": 0.5558, "robotics": 0.5773,
                             "sustainable_living": 0.5801},
                   "dev": {"(macro)": 0.4379, "biology": 0.6065, "drones": 0.2954, "earth_science": 0.6264,
                           "economics": 0.4739, "hardware": 0.3378, "law": 0.3437, "medicalsciences": 0.1730,
                           "politics": 0.3219, "psychology": 0.5726, "robotics": 0.5123,
                           "sustainable_living": 0.5531}},
}


def baseline_note(track: str, split: str | None, rules: str, value: float, per_domain: dict[str, float]) -> str | None:
    """A line putting the published BM25 baseline of ``track`` and ``split`` beside a run's score,
    for the domains scored (the published macro when every domain is scored, else the mean of the
    published per-domain values of those domains). The baselines were computed with the starter
    kit's rules: under ``rules='page'`` the line says so and points to ``rules='kit'``. None when
    the split or the domains have no published baseline."""
    table = BASELINES.get(track, {}).get(split or "")
    if not table:
        return None
    doms = [d for d in per_domain if d in table]
    if not doms:
        return None
    if len(doms) == len(table) - 1:
        base, what = table["(macro)"], "macro over domains"
    else:
        base, what = float(np.mean([table[d] for d in doms])), f"mean over {', '.join(doms)}"
    extra = f"; with history {BASELINES['2a_history'][split]['(macro)']:.4f}" if track == "2a" and len(doms) == len(
        table) - 1 else ""
    if rules != "kit":
        return (f"published BM25 baseline {track} {split} ({what}): {base:.4f}{extra}, computed with the starter "
                f"kit's rules: compare with --rules kit / rules='kit' (source: {BASELINE_SOURCE})")
    verdict = "above" if value > base else ("equal to" if value == base else "below")
    return (f"published BM25 baseline {track} {split} ({what}): {base:.4f}{extra}; this run {value:.4f} is "
            f"{verdict} it (source: {BASELINE_SOURCE})")
