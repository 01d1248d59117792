"""RETECO Track 2 (RECOR) conversational retrieval data: readers and ir_datasets registrations.

Release layout (the RETECO release of RECOR, arXiv:2601.05461), under ``$RETECO_DATA/reteco/track2_recor/<domain>/``:

* ``documents.jsonl`` — one ``{"doc_id", "content"}`` per line (``id`` is accepted for ``doc_id``);
* ``benchmark_{train,dev}.json`` — a JSON array of conversations ``{"id", "turns": [{"turn_id",
  "query", "answer", "gold_doc_ids", "conversation_history"}]}`` (JSONL, one conversation a line,
  is accepted too);
* ``qrels_{split}.txt`` — TREC qrels whose topic ids are ``<conversation_id>_turn_<turn_id>``.

Every sub-folder of ``track2_recor/`` holding ``benchmark_<split>.json`` is a domain.

Id scheme
---------
Conversation ids repeat between domains (``2`` and ``5`` exist in several BRIGHT-derived domains),
so a turn is keyed by (domain, topic):

* a **single-domain** dataset (``reteco/recor/<domain>/<split>``) keeps the release ids
  ``<conversation_id>_turn_<t>`` exactly as the qrels and runs of that domain use them;
* the **all-domains** dataset (``reteco/recor/<split>``) qualifies every turn as
  ``<domain>/<conversation_id>_turn_<t>`` (conversation id ``<domain>/<conversation_id>``), in
  the topics *and* the qrels. Document ids are kept as released (they are only compared within
  a turn's own qrels). A run may use the qualified ids, or the plain release ids wherever a
  plain id names exactly one turn; `map_run_query_ids` does that mapping and reports every
  plain id that is ambiguous (present in several domains) instead of guessing.

The organiser sample (``reteco_sample/track2_recor``) writes topic ids as
``<conversation_id>#turn<t>`` in its qrels; such ids are normalised to ``_turn_`` with a
`DataFormatWarning` (``hash_turn_ids='normalise'``, default) or
rejected (``hash_turn_ids='reject'``: `DataFormatError`). They are
never left as they are, because a correct run would then silently score 0.
"""


import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Tuple  # noqa: UP035  (ir_datasets export needs typing.Tuple)

import numpy as np
import pandas as pd

from ...datasets.base import ENV_VAR, DataFile, MissingDataError, add_topics, data_root
from ...errors import DataFormatError, DataFormatWarning, Problem, user_stacklevel
from ...io.jsonl import iter_jsonl
from ...io.readers import read_qrels_with_problems

__all__ = [
    "RECOR_DOMAINS",
    "RECOR_SPLITS",
    "TRACK_DIR",
    "RecorDoc",
    "RecorQuery",
    "RecorData",
    "turn_query_id",
    "qualify",
    "normalise_turn_ids",
    "read_conversations",
    "conversations_to_topics",
    "read_documents",
    "read_recor_qrels",
    "recor_domains",
    "load_recor",
    "load_organiser_sample",
    "map_run_query_ids",
]

#: the RECOR domains of the RETECO release
RECOR_DOMAINS: tuple[str, ...] = (
    "biology",
    "earth_science",
    "economics",
    "psychology",
    "robotics",
    "sustainable_living",
    "drones",
    "hardware",
    "law",
    "medicalsciences",
    "politics",
)
#: released splits (a hidden ``test`` split in the same layout works the same way)
RECOR_SPLITS: tuple[str, ...] = ("train", "dev")
#: folder of Track 2 under the data root
TRACK_DIR = "reteco/track2_recor"

HashPolicy = Literal["normalise", "reject"]
_HASH_TURN = re.compile(r"^(?P<conv>.+)#turn(?P<turn>\d+)$")
_NO_HISTORY = "No previous conversation."


class RecorDoc(NamedTuple):
    """A RECOR passage. ``domain`` is the release folder it came from."""

    doc_id: str
    text: str
    domain: str

    def default_text(self) -> str:
        return self.text


class RecorQuery(NamedTuple):
    """A RECOR target turn.

    ``text`` is the turn's own question (``query``); ``history`` the release's
    ``conversation_history`` text ("Q: …\\nA: …" blocks; empty for the first turn), so a system
    chooses itself how to use the context. ``gold_doc_ids`` are the release's per-turn gold ids.
    """

    query_id: str
    text: str
    conversation_id: str
    turn: int
    domain: str
    history: str
    answer: str
    gold_doc_ids: Tuple[str, ...]  # noqa: UP006  (the form ir_datasets' exporters understand)

    def default_text(self) -> str:
        return self.text


# ------------------------------------------------------------------------------------------------
# ids


def turn_query_id(conversation_id: Any, turn: Any) -> str:
    """The release id of a target turn: ``<conversation_id>_turn_<turn>``."""
    return f"{conversation_id}_turn_{int(turn)}"


def qualify(domain: str, query_id: str) -> str:
    """The all-domains id of a turn (or conversation): ``<domain>/<id>``."""
    return f"{domain}/{query_id}"


def normalise_turn_ids(ids: pd.Series | list) -> tuple[pd.Series, np.ndarray]:
    """Rewrite the organiser-sample form ``<conversation_id>#turn<t>`` as ``<conversation_id>_turn_<t>``.

    Returns the rewritten ids (str Series) and a boolean mask of the ids that were rewritten.
    """
    s = pd.Series(ids, dtype="str").reset_index(drop=True)
    parsed = s.str.extract(_HASH_TURN)
    changed = parsed["conv"].notna().to_numpy()
    if changed.any():
        fixed = parsed["conv"] + "_turn_" + parsed["turn"].astype(str).str.lstrip("0").replace("", "0")
        s = s.where(~changed, fixed)
    return s.astype("str"), changed


def _apply_hash_policy(
    frame: pd.DataFrame, policy: HashPolicy, path: str | None, what: str, problems: list[Problem]
) -> pd.DataFrame:
    """Normalise / reject ``#turn`` ids in ``frame.query_id`` (frame has a ``line`` column)."""
    if policy not in ("normalise", "reject"):
        raise ValueError(f"hash_turn_ids must be 'normalise' or 'reject', not {policy!r}")
    fixed, changed = normalise_turn_ids(frame["query_id"])
    if not changed.any():
        return frame
    first = int(np.flatnonzero(changed)[0])
    example = f"{frame['query_id'].iloc[first]!r} -> {fixed.iloc[first]!r}"
    if policy == "reject":
        bad = [
            Problem(
                f"topic id {q!r} uses the '#turn' form; the release form is {f!r}",
                line=int(ln) or None,
                query_id=q,
                path=path,
                kind="id_form",
            )
            for q, f, ln in zip(
                frame["query_id"][changed], fixed[changed], frame["line"].to_numpy()[changed], strict=True
            )
        ]
        raise DataFormatError(bad)
    warnings.warn(
        f"{path or what}: {int(changed.sum())} row(s) use the organiser-sample topic form "
        f"'<conversation_id>#turn<t>'; read as '<conversation_id>_turn_<t>' (e.g. {example})",
        DataFormatWarning,
        stacklevel=user_stacklevel(),
    )
    problems.append(
        Problem(
            f"{int(changed.sum())} topic id(s) in the '#turn' form normalised to '_turn_' (e.g. {example})",
            line=int(frame["line"].iloc[first]) or None,
            query_id=str(frame["query_id"].iloc[first]),
            path=path,
            kind="id_form",
        )
    )
    frame = frame.copy()
    frame["query_id"] = fixed.to_numpy()
    return frame


# ------------------------------------------------------------------------------------------------
# readers


def read_conversations(path: str | os.PathLike) -> list[dict]:
    """Conversations from a RECOR benchmark file: a JSON array (release) or JSONL (organiser sample,
    upstream). Raises `DataFormatError` with ``path:line`` for invalid JSON."""
    path = Path(path)
    if not path.exists():
        raise MissingDataError(f"missing RECOR benchmark file: {path}")
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFormatError(
                [Problem(f"not valid JSON: {exc.msg}", line=exc.lineno, path=str(path))]
            ) from None
        return data
    records, problems = [], []
    for i, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError as exc:
                problems.append(
                    Problem(f"not valid JSON: {exc.msg} (column {exc.colno})", line=i, path=str(path))
                )
    if problems:
        raise DataFormatError(problems)
    return records


def _history_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):  # tolerate a list of {"role","content"} / strings
        parts = [v.get("content", "") if isinstance(v, dict) else str(v) for v in value]
        return "\n".join(parts)
    text = str(value)
    return "" if text.strip() == _NO_HISTORY else text


def _conversation(conv: Any, n: int, domain: str | None, seen: dict[tuple[str, str], int], path: str | None,
                  problems: list[Problem]) -> tuple[str, str, list] | None:
    """The id, domain and turns of conversation ``n`` (1-based), or None when it is skipped (its
    problem added): no id, no domain, an id repeated in its domain, ``turns`` not a list."""
    if not isinstance(conv, dict) or conv.get("id") is None:
        problems.append(Problem(f"conversation {n} has no 'id'", line=n, path=path, kind="field"))
        return None
    conv_id = str(conv["id"])
    dom = domain if domain is not None else str(conv.get("task") or conv.get("domain") or "").lower()
    if not dom:
        problems.append(Problem("no domain (give domain=... or a 'task' field)", line=n, query_id=conv_id,
                                path=path, kind="field"))
        return None
    if (dom, conv_id) in seen:
        problems.append(Problem(f"conversation id repeated in domain {dom} (first: conversation "
                                f"{seen[(dom, conv_id)]}); later copy skipped", line=n, query_id=conv_id, path=path,
                                kind="duplicate"))
        return None
    seen[(dom, conv_id)] = n
    turns = conv.get("turns")
    if not isinstance(turns, list):
        problems.append(Problem("'turns' must be a list", line=n, query_id=conv_id, path=path, kind="field"))
        return None
    return conv_id, dom, turns


def _turn_rows(turns: list, conv_id: str, dom: str, n: int, qualified: bool, path: str | None, rows: list[dict],
               problems: list[Problem]) -> None:
    """One topics row per well-formed turn of conversation ``n`` (appended to ``rows``); a turn
    whose ``turn_id`` is not a positive integer, or is repeated, is skipped with a problem."""
    turn_numbers: set[int] = set()
    for position, turn in enumerate(turns, start=1):
        tid = turn.get("turn_id", position) if isinstance(turn, dict) else None
        if isinstance(tid, bool) or not isinstance(tid, (int, str)) or not str(tid).isdigit():
            problems.append(Problem(f"turn {position}: 'turn_id' {tid!r} is not a positive integer", line=n,
                                    query_id=conv_id, path=path, kind="field"))
            continue
        t = int(tid)
        if t < 1 or t in turn_numbers:
            problems.append(Problem(f"turn {position}: turn_id {t} is repeated or < 1; skipped", line=n,
                                    query_id=conv_id, path=path, kind="duplicate"))
            continue
        turn_numbers.add(t)
        gold = turn.get("gold_doc_ids") or []
        release_qid = turn_query_id(conv_id, t)
        rows.append({
            "query_id": qualify(dom, release_qid) if qualified else release_qid,
            "conversation_id": qualify(dom, conv_id) if qualified else conv_id,
            "turn": t,
            "domain": dom,
            "text": str(turn.get("query") or ""),
            "history": _history_text(turn.get("conversation_history")),
            "answer": str(turn.get("answer") or ""),
            "gold_doc_ids": [str(d) for d in gold] if isinstance(gold, list) else [],
            "release_query_id": release_qid,
            "release_conversation_id": conv_id,
        })


def conversations_to_topics(
    conversations: list[dict],
    domain: str | None = None,
    *,
    qualified: bool = False,
    path: str | None = None,
) -> tuple[pd.DataFrame, list[Problem]]:
    """One row per target turn of ``conversations``.

    Args:
        conversations: records ``{id, turns: [{turn_id, query, answer, gold_doc_ids,
            conversation_history}]}``.
        domain: the domain of every record (the release folder); None = each record's ``task``
            (organiser sample / upstream files), lower-cased.
        qualified: use the all-domains ids ``<domain>/<conversation_id>_turn_<t>``.
        path: the file, for problem messages.

    Returns:
        ``(topics, problems)``. Topics columns: ``query_id, conversation_id, turn, domain, text,
        history, answer, gold_doc_ids, release_query_id, release_conversation_id``. Malformed
        records/turns are skipped and reported (``line`` = 1-based index of the conversation).
    """
    rows: list[dict] = []
    problems: list[Problem] = []
    seen: dict[tuple[str, str], int] = {}
    for n, conv in enumerate(conversations, start=1):
        header = _conversation(conv, n, domain, seen, path, problems)
        if header is not None:
            conv_id, dom, turns = header
            _turn_rows(turns, conv_id, dom, n, qualified, path, rows, problems)
    cols = [
        "query_id",
        "conversation_id",
        "turn",
        "domain",
        "text",
        "history",
        "answer",
        "gold_doc_ids",
        "release_query_id",
        "release_conversation_id",
    ]
    frame = pd.DataFrame(rows, columns=cols)
    frame["turn"] = frame["turn"].astype("Int64")
    for c in ("query_id", "conversation_id", "domain", "release_query_id", "release_conversation_id"):
        frame[c] = frame[c].astype("str")
    return frame, problems


def read_documents(path: str | os.PathLike, domain: str, *, text: bool = True) -> pd.DataFrame:
    """A RECOR ``documents.jsonl``: ``doc_id`` (``id`` accepted), ``domain`` and, with ``text``,
    the ``text`` (``content``). Raises `DataFormatError` listing every bad line."""
    path = Path(path)
    if not path.exists():
        raise MissingDataError(f"missing RECOR documents file: {path}")
    ids, texts, problems = [], [], []
    for i, rec in iter_jsonl(path, problems):
        did = rec.get("doc_id", rec.get("id"))
        if did is None:
            problems.append(Problem("no 'doc_id'", line=i, path=str(path), kind="field"))
            continue
        ids.append(str(did))
        if text:
            texts.append(str(rec.get("content", rec.get("text", ""))))
    if problems:
        raise DataFormatError(problems)
    frame = pd.DataFrame({"doc_id": pd.array(ids, dtype="str")})
    frame["domain"] = domain
    if text:
        frame["text"] = texts
    return frame


def read_recor_qrels(
    path: str | os.PathLike,
    domain: str | None = None,
    *,
    qualified: bool = False,
    hash_turn_ids: HashPolicy = "normalise",
) -> tuple[pd.DataFrame, list[Problem]]:
    """RECOR qrels with topic ids in the release form (``#turn`` ids normalised or rejected).

    Args:
        path: TREC qrels file.
        domain: the domain of every row (needed with ``qualified``).
        qualified: prefix topic ids with ``<domain>/`` (all-domains id scheme).
        hash_turn_ids: ``'normalise'`` (default; warns) or ``'reject'`` (raises).

    Returns:
        ``(qrels with query_id, doc_id, relevance, line, domain, problems)``.
    """
    if not Path(path).exists():
        raise MissingDataError(f"missing RECOR qrels file: {path}")
    frame, problems = read_qrels_with_problems(path, "trec")
    frame = _apply_hash_policy(frame, hash_turn_ids, str(path), "qrels", problems)
    if qualified:
        if domain is None:
            raise ValueError("qualified qrels need the domain")
        frame = frame.assign(query_id=(domain + "/" + frame["query_id"].astype(str)).astype("str"))
    frame = frame.assign(domain=domain if domain is not None else "")
    return frame[["query_id", "doc_id", "relevance", "line", "domain"]].reset_index(drop=True), problems


# ------------------------------------------------------------------------------------------------
# whole splits


@dataclass
class RecorData:
    """One RECOR split as DataFrames (what the scorer and the datasets use).

    Attributes:
        topics: one row per target turn (see `conversations_to_topics`).
        qrels: ``query_id, doc_id, relevance`` (+ ``line``, ``domain``).
        corpus: ``doc_id, domain`` (+ ``text`` when loaded with text) of every domain.
        domains: the domains loaded, in order.
        qualified: whether ids use the all-domains scheme ``<domain>/<conversation_id>_turn_<t>``.
        problems: what the readers reported (skipped records, normalised ids, qrels topics
            missing from the benchmark file, ...).
    """

    topics: pd.DataFrame
    qrels: pd.DataFrame
    corpus: pd.DataFrame
    domains: list[str]
    qualified: bool
    problems: list[Problem] = field(default_factory=list)


def _track_dir(root: str | os.PathLike | None) -> Path:
    return data_root(root) / TRACK_DIR


def recor_domains(split: str = "dev", root: str | os.PathLike | None = None) -> list[str]:
    """Domains present for ``split``: sub-folders of ``track2_recor/`` holding
    ``benchmark_<split>.json``, official RECOR domains first (in `RECOR_DOMAINS` order), then others sorted."""
    base = _track_dir(root)
    if not base.is_dir():
        raise MissingDataError(
            f"missing RECOR release folder: put the Track 2 release at {base}/<domain>/..."
            + (f" (that is ${ENV_VAR}/{TRACK_DIR}/<domain>/...)" if root is None else "")
        )
    present = sorted(p.name for p in base.iterdir() if (p / f"benchmark_{split}.json").is_file())
    ordered = [d for d in RECOR_DOMAINS if d in present] + [d for d in present if d not in RECOR_DOMAINS]
    if not ordered:
        raise MissingDataError(
            f"no RECOR domain has benchmark_{split}.json: put the release at "
            f"{base}/<domain>/benchmark_{split}.json"
        )
    return ordered


def check_qrels_topics(
    qrels: pd.DataFrame, topics: pd.DataFrame, path: str | None, problems: list[Problem]
) -> None:
    """Add to ``problems`` one problem per qrels query that ``topics`` do not know (at its first line)."""
    known = set(topics["query_id"].tolist())
    unknown = ~qrels["query_id"].isin(known)
    for qid, first in (
        qrels.loc[unknown, ["query_id", "line"]].drop_duplicates("query_id").itertuples(index=False)
    ):
        problems.append(
            Problem(
                "qrels topic is not a turn of the benchmark file (kept; check the id form)",
                line=int(first) or None,
                query_id=str(qid),
                path=path,
                kind="unknown_query",
            )
        )


def load_recor(
    split: str = "dev",
    *,
    root: str | os.PathLike | None = None,
    domains: list[str] | str | None = None,
    qualified: bool | None = None,
    hash_turn_ids: HashPolicy = "normalise",
    doc_text: bool = False,
) -> RecorData:
    """Load a RECOR split from the release layout.

    Args:
        split: ``'train'``, ``'dev'`` (or any split with ``benchmark_<split>.json`` files).
        root: data root (default ``$RETECO_DATA``).
        domains: one domain, a list, or None for every domain present.
        qualified: ids in the all-domains scheme ``<domain>/<conversation_id>_turn_<t>``.
            Default: True when ``domains`` is None or names several domains, False for one.
        hash_turn_ids: what to do with ``#turn`` topic ids in the qrels (see module docs).
        doc_text: also load the passage texts into ``corpus`` (ids only by default).
    """
    if isinstance(domains, str):
        domains = [domains]
    doms = list(domains) if domains is not None else recor_domains(split, root)
    if qualified is None:
        qualified = domains is None or len(doms) > 1
    base = _track_dir(root)
    topics_parts, qrels_parts, corpus_parts, problems = [], [], [], []
    for dom in doms:
        folder = base / dom
        bench = DataFile(
            f"{TRACK_DIR}/{dom}/benchmark_{split}.json", f"RECOR {dom} {split} conversations", root
        )
        qrels_file = DataFile(f"{TRACK_DIR}/{dom}/qrels_{split}.txt", f"RECOR {dom} {split} qrels", root)
        docs_file = DataFile(f"{TRACK_DIR}/{dom}/documents.jsonl", f"RECOR {dom} documents", root)
        topics, probs = conversations_to_topics(
            read_conversations(bench.path()),
            dom,
            qualified=qualified,
            path=str(folder / f"benchmark_{split}.json"),
        )
        problems += probs
        qrels, probs = read_recor_qrels(
            qrels_file.path(), dom, qualified=qualified, hash_turn_ids=hash_turn_ids
        )
        problems += probs
        check_qrels_topics(qrels, topics, qrels_file.path(), problems)
        topics_parts.append(topics)
        qrels_parts.append(qrels)
        corpus_parts.append(read_documents(docs_file.path(), dom, text=doc_text))
    return RecorData(
        topics=pd.concat(topics_parts, ignore_index=True),
        qrels=pd.concat(qrels_parts, ignore_index=True),
        corpus=pd.concat(corpus_parts, ignore_index=True),
        domains=doms,
        qualified=bool(qualified),
        problems=problems,
    )


def load_organiser_sample(
    folder: str | os.PathLike,
    *,
    qualified: bool = True,
    hash_turn_ids: HashPolicy = "normalise",
    doc_text: bool = False,
) -> RecorData:
    """The RETECO organisers' public RECOR sample (``benchmark.jsonl``, ``documents.jsonl``,
    ``qrels.txt`` in one folder; each conversation's domain is its ``task`` field).

    Its qrels use ``<conversation_id>#turn<t>`` topic ids: they are normalised (with a warning) or
    rejected per ``hash_turn_ids``. ``qualified`` (default True: the sample mixes domains) gives
    all-domains ids; qrels rows get their domain from the turn they belong to.
    """
    folder = Path(folder)
    topics, problems = conversations_to_topics(
        read_conversations(folder / "benchmark.jsonl"),
        None,
        qualified=qualified,
        path=str(folder / "benchmark.jsonl"),
    )
    qrels, probs = read_recor_qrels(folder / "qrels.txt", None, hash_turn_ids=hash_turn_ids)
    problems += probs
    release = topics.drop_duplicates("release_query_id").set_index("release_query_id")
    dom = qrels["query_id"].map(release["domain"])
    qrels["domain"] = dom.fillna("").astype(str).to_numpy()
    if qualified:
        mapped = qrels["query_id"].map(release["query_id"])
        qrels["query_id"] = mapped.where(mapped.notna(), qrels["query_id"]).astype("str").to_numpy()
    check_qrels_topics(qrels, topics, str(folder / "qrels.txt"), problems)
    docs = read_documents(folder / "documents.jsonl", "", text=doc_text)
    # a document's domain: the domain of the turns that cite it (the sample has one folder)
    gold = topics[["domain", "gold_doc_ids"]].explode("gold_doc_ids").dropna()
    doc_domain = gold.drop_duplicates("gold_doc_ids").set_index("gold_doc_ids")["domain"]
    docs["domain"] = docs["doc_id"].map(doc_domain).fillna("").astype(str).to_numpy()
    domains = list(dict.fromkeys(topics["domain"].tolist()))
    return RecorData(topics, qrels, docs, domains, qualified, problems)


def map_run_query_ids(
    run: pd.DataFrame,
    topics: pd.DataFrame,
    *,
    hash_turn_ids: HashPolicy = "normalise",
    path: str | None = None,
) -> tuple[pd.DataFrame, list[Problem]]:
    """Bring a run's query ids to the ids of ``topics`` (rows of unknown turns are left alone).

    * ``<conversation_id>#turn<t>`` ids are read as ``<conversation_id>_turn_<t>`` (reported once
      per id) or, with ``hash_turn_ids='reject'``, reported and their rows discarded;
    * an id equal to a topics ``query_id`` is kept;
    * a plain release id (``release_query_id``) that names exactly one turn of ``topics`` is
      rewritten to that turn's id (the all-domains ``<domain>/…`` form), silently: that is the
      documented id scheme;
    * a plain id naming turns of several domains is ambiguous: reported, rows discarded.

    Args:
        run: DataFrame with ``query_id`` (+ anything; a ``line`` column is used in messages).
        topics: topics with ``query_id`` and, for mapping, ``release_query_id`` and ``domain``.

    Returns:
        ``(run with mapped ids and the same other columns, problems)``.
    """
    if hash_turn_ids not in ("normalise", "reject"):
        raise ValueError(f"hash_turn_ids must be 'normalise' or 'reject', not {hash_turn_ids!r}")
    problems: list[Problem] = []
    frame = run.copy().reset_index(drop=True)
    lines = frame["line"].to_numpy() if "line" in frame.columns else np.zeros(len(frame), dtype=np.int64)
    keep = np.ones(len(frame), dtype=bool)
    original = frame["query_id"].astype(str).reset_index(drop=True)
    fixed, changed = normalise_turn_ids(original)
    if changed.any():
        firsts = original[changed].drop_duplicates()  # first row of each distinct id (one message per id)
        for i, qid in firsts.items():
            if hash_turn_ids == "reject":
                message = (
                    f"query id uses the '#turn' form; the release form is {fixed.iloc[i]!r}; rows discarded"
                )
            else:
                message = f"query id in the '#turn' form read as {fixed.iloc[i]!r}"
            problems.append(
                Problem(message, line=int(lines[i]) or None, query_id=qid, path=path, kind="id_form")
            )
        if hash_turn_ids == "reject":
            keep &= ~changed
        else:
            frame["query_id"] = fixed.to_numpy()
    if "release_query_id" in topics.columns:
        qids = frame["query_id"].astype(str).reset_index(drop=True)
        known = qids.isin(set(topics["query_id"].astype(str)))
        targets = topics.groupby("release_query_id")["query_id"].agg(list)
        sizes = targets.str.len()
        unique_target = targets[sizes == 1].str[0]
        mapped = qids.map(unique_target)
        use = (~known & mapped.notna()).to_numpy()
        ambiguous = (~known & qids.isin(set(targets[sizes > 1].index))).to_numpy() & keep
        domains = topics.groupby("release_query_id")["domain"].agg(lambda d: ", ".join(sorted(map(str, d))))
        for i, qid in qids[ambiguous].drop_duplicates().items():
            problems.append(
                Problem(
                    f"query id is ambiguous: it names a turn in several domains ({domains[qid]}); "
                    "use '<domain>/<id>'; rows discarded",
                    line=int(lines[i]) or None,
                    query_id=qid,
                    path=path,
                    kind="ambiguous_query",
                )
            )
        keep &= ~ambiguous
        frame["query_id"] = pd.array(
            np.where(use, mapped.to_numpy(dtype=object), qids.to_numpy(dtype=object)), dtype="str"
        )
    return frame[keep].reset_index(drop=True), problems


def _topics_factory(split: str, domains: tuple[str, ...] | None):
    def factory() -> pd.DataFrame:
        return load_recor(split, domains=list(domains) if domains else None).topics

    return factory


def _declare_topics() -> None:
    for split in RECOR_SPLITS:
        add_topics(f"reteco/recor/{split}", _topics_factory(split, None))
        for dom in RECOR_DOMAINS:
            add_topics(f"reteco/recor/{dom}/{split}", _topics_factory(split, (dom,)))


_declare_topics()
