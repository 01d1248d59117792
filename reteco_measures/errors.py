"""Problems found in user data are values, not stack traces.

Every reader and validator returns (or attaches) a list of `Problem`; each prints as
``path:line: query_id: what is wrong`` so it can be pasted into an editor's "go to line".
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Problem",
    "Severity",
    "SEVERITIES",
    "DataFormatError",
    "DataFormatWarning",
    "QueryIdMismatchWarning",
    "QueryIdFormWarning",
    "EmptyInputWarning",
    "GroupMismatchWarning",
    "InputMismatchError",
    "report_problems",
    "MAX_PROBLEMS_PER_KIND",
    "cap_problems",
    "count_problems",
    "KIND_NAMES",
    "describe_kinds",
    "user_stacklevel",
    "warn",
    "display",
    "display_message",
    "DISPLAY_LIMIT",
    "InputTooLargeError",
    "InputOutOfMemoryError",
    "JSONTextError",
    "DuplicateKeyError",
    "MissingDataError",
    "NativeFallback",
    "LikertWarning",
    "IncompleteGridWarning",
    "UnscorableSubmissionWarning",
    "TooFewScoredError",
    "SubmissionError",
    "BoundedRunError",
    "JudgeFatalError",
    "JudgeQueueingWarning",
    "ReplyError",
    "BatchUnsupported",
    "BatchPending",
]

#: characters of a user value (an id, a path, a field) shown in a message; the rest is replaced by
#: ``… (N characters)``, so that a 100 MB field never reaches a terminal, a page or a JSON report whole
DISPLAY_LIMIT = 80

# C0 and C1 control characters, DEL, and the bidirectional overrides / isolates that reorder what
# a terminal or a browser shows (a value can hide itself or rewrite the rest of its line with them)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def display(value: object, limit: int | None = DISPLAY_LIMIT) -> str:
    """A user value made safe to show anywhere (a terminal, an HTML or Markdown page, JSON):
    control characters (ESC, BEL, NUL, CR, LF, tab, DEL, the C1 range) and the bidirectional
    overrides are written as Python escapes (``\\x1b``, ``\\n``, ``\\u202e``), and a value
    longer than ``limit`` characters is cut to its first ``limit`` ones followed by
    ``… (104,857,600 characters)`` (the length of the whole value). ``limit=None``: never cut.
    ``None`` stays ``'None'``."""
    text = value if isinstance(value, str) else str(value)
    n = len(text)
    if limit is not None and n > limit:
        text = f"{text[:limit]}… ({n:,} characters)"
    return _CONTROL.sub(_escape_char, text) if _CONTROL.search(text) else text


def display_message(text: object, line_limit: int = 2000) -> str:
    """A whole message (ours, holding user values) made safe to print: control characters escaped
    as in `display`, line breaks and tabs kept, and each line cut to ``line_limit`` characters."""
    lines = str(text).split("\n")
    out = []
    for line in lines:
        if len(line) > line_limit:
            line = f"{line[:line_limit]}… ({len(line):,} characters)"
        out.append(_CONTROL_KEEP_LINES.sub(_escape_char, line) if _CONTROL_KEEP_LINES.search(line) else line)
    return "\n".join(out)


#: a problem's consequence, from the gravest: refused / partly lost or warned / informational
Severity = Literal["error", "warning", "note"]
SEVERITIES: tuple[str, ...] = ("error", "warning", "note")


@dataclass(frozen=True)
class Problem:
    """One problem in an input file or table.

    Attributes:
        message: what is wrong, in words.
        line: 1-based line number in the file (None for in-memory data without lines).
        query_id: the query the row belongs to, when known.
        path: the file, when known.
        kind: a short machine-readable category (``format``, ``duplicate``, ``unknown_doc``,
            ``other_domain_doc``, ``unknown_query``, ``missing_query``, ``score``, ``order``,
            ``field`` ...); `KIND_NAMES` gives the words every message uses for them.
        doc_id: the document concerned, when there is one.
        severity: ``'error'`` (the submission as a whole is refused: a validator report with an
            error is not ``valid``), ``'warning'`` (part of the submission is lost or changed, or
            the organisers' own validator warns; the rest still scores) or ``'note'`` (a check
            only we make; nothing is lost). Each contract documents which problem gets which.
        count: how many problems this one stands for: 1, or, for the summary a reader writes
            after the first `MAX_PROBLEMS_PER_KIND` problems of a kind (``... and 4,999,000 more
            line(s) like this``), the number of problems it summarises (see `cap_problems`;
            `count_problems` adds them up).
    """

    message: str
    line: int | None = None
    query_id: str | None = None
    path: str | None = None
    kind: str = "format"
    doc_id: str | None = None
    severity: Severity = "error"
    count: int = 1

    def __str__(self) -> str:
        where = display(self.path, _PATH_LIMIT) if self.path else "<data>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        qid = display(self.query_id) if self.query_id is not None else "-"
        return f"{where}: {qid}: {display(self.message, _MESSAGE_LIMIT)}"

    def as_dict(self) -> dict:
        """The problem as a JSON-ready dict, every value shown as `display` shows it (control
        characters escaped, long values cut): what reports, pages and tables print."""
        def shown(value: object, limit: int = DISPLAY_LIMIT) -> str | None:
            return None if value is None else display(value, limit)

        return {
            "path": shown(self.path, _PATH_LIMIT),
            "line": self.line,
            "query_id": shown(self.query_id),
            "doc_id": shown(self.doc_id),
            "kind": self.kind,
            "severity": self.severity,
            "message": display(self.message, _MESSAGE_LIMIT),
            **({"count": self.count} if self.count != 1 else {}),
        }


#: characters of a path, and of a problem's message, shown (see `display`)
_PATH_LIMIT = 300
_MESSAGE_LIMIT = 1000


#: problems of one kind a reader keeps as `Problem` values per file; the rest of that kind are
#: counted in one summary problem (``count`` > 1), so that a file of millions of bad lines costs
#: memory and time in proportion to its bytes, not a Python object per line
MAX_PROBLEMS_PER_KIND = 1000


def count_problems(problems: Iterable[Problem], by: str | None = None) -> int | dict[str, int]:
    """The true number of problems, summaries counted as the problems they stand for; with
    ``by='kind'`` (or ``'severity'``) a dict of counts per kind (severity)."""
    if by is None:
        return sum(p.count for p in problems)
    out: dict[str, int] = {}
    for p in problems:
        key = getattr(p, by)
        out[key] = out.get(key, 0) + p.count
    return out


def cap_problems(problems: Iterable[Problem], more: dict[str, int] | None = None, *,
                 limit: int = MAX_PROBLEMS_PER_KIND, path: str | None = None) -> list[Problem]:
    """The first ``limit`` problems of each kind (in the given order), then one summary problem per
    kind that had more (``... and 12,345 more line(s) like this``, ``count`` = how many; no line),
    so that every count stays exact. ``more`` adds problems of a kind that were counted but never
    made (a reader stops making them once it has ``limit``)."""
    kept: list[Problem] = []
    seen: dict[str, int] = {}
    extra: dict[str, int] = dict(more or {})
    last: dict[str, Problem] = {}
    for p in problems:
        n = seen.get(p.kind, 0)
        if n < limit and p.count == 1:
            kept.append(p)
            seen[p.kind] = n + 1
            last[p.kind] = p
        else:
            extra[p.kind] = extra.get(p.kind, 0) + p.count
            last.setdefault(p.kind, p)
    for kind, n in extra.items():
        if n <= 0:
            continue
        like = last.get(kind)
        kept.append(Problem(f"... and {n:,} more problem(s) of kind '{kind}' like the ones above (only the first "
                            f"{limit:,} of each kind are listed)", path=path if like is None else like.path,
                            kind=kind, severity=like.severity if like is not None else "error", count=n))
    return kept


class DataFormatError(ValueError):
    """Raised (only when asked, ``on_bad_lines='error'``) for malformed input.

    ``problems`` holds every problem found, not just the first.
    """

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        total = count_problems(self.problems)
        shown = "\n".join(str(p) for p in self.problems[:20])
        more = total - sum(p.count for p in self.problems[:20])
        if more > 0:
            shown += f"\n... and {more} more"
        super().__init__(f"{total} problem(s) in input:\n{shown}")


class InputTooLargeError(DataFormatError):
    """An input beyond a reading limit (``--max-lines``, ``--max-unpacked``, ``--max-ratio``), or
    one the machine's memory could not hold; ``problems`` holds one problem naming the file, the
    limit and the option (or parameter) that changes it. The command line exits with code 1."""


class InputOutOfMemoryError(InputTooLargeError, MemoryError):
    """A file the machine's memory (or the process's memory limit) could not hold while it was read:
    an `InputTooLargeError` naming the file, and a ``MemoryError``, so that whoever bounds the
    memory of a scoring (Codabench, Harbor) reports it as the limit reached, not as broken data."""


class DataFormatWarning(UserWarning):
    """Warning category for skipped malformed rows."""


class QueryIdMismatchWarning(DataFormatWarning):
    """The run, the qrels (or the topics / labels) do not share the query ids they should.

    Raised as a warning when the two sides share no query id at all, or fewer than a known
    id-form mapping would give (``<conversation>#turn<t>`` and ``<conversation>_turn_<t>``,
    ``<domain>/<id>`` and ``<id>``, ``001`` and ``1``). The message shows one id of each side and
    the switch that makes such a pair score correctly: ``query_ids="normalize"`` in Python,
    ``--normalize-ids`` on the command line. The command line treats it as an error.
    """


class QueryIdFormWarning(QueryIdMismatchWarning):
    """The `QueryIdMismatchWarning` case that a known id-form mapping repairs: the sides share
    fewer query ids as written than once normalised (``#turn1`` / ``_turn_1``, ``<domain>/<id>`` /
    ``<id>``, ``001`` / ``1``). ``rm.calc_aggregate``, ``rm.iter_calc`` and ``rm.evaluate`` refuse
    it by default (``on_mismatch="refuse_forms"``: an `InputMismatchError` naming
    ``query_ids="normalize"``); a plain ``ir_measures`` call gives it as a warning."""


class EmptyInputWarning(DataFormatWarning):
    """A run or qrels without a single usable row: every value would be 0 or undefined.

    The command line treats it as an error.
    """


class GroupMismatchWarning(DataFormatWarning):
    """Evaluated queries without a row in the topics used for grouping (they land in ``(none)``)."""


class InputMismatchError(ValueError):
    """A number from inputs that do not match, refused: a run and the qrels (or the topics /
    labels) that share no query id or fewer than a known id-form mapping would give
    (`QueryIdMismatchWarning`), or an empty run / qrels (`EmptyInputWarning`).

    Raised by the multi-run entry points (``rm.compare``, ``rm.leaderboard``) unless the caller
    passes ``on_mismatch="warn"``; ``warning`` is the warning that would have been given (its
    category tells which case), the message names the run."""

    def __init__(self, message: str, warning: Warning | None = None):
        super().__init__(message)
        self.warning = warning


def report_problems(problems: list[Problem], on_bad_lines: str, what: str = "input") -> None:
    """Apply the pandas-style ``on_bad_lines`` policy ('error' | 'warn' | 'skip') to the
    problems of severity ``'error'`` (lines skipped). Problems of severity ``'warning'`` (rows
    kept, e.g. a pair judged twice with different grades) are warned unless ``'skip'``; notes
    are only kept with the data."""
    kept = [p for p in problems if p.severity == "warning"]
    problems = [p for p in problems if p.severity == "error"]
    if kept and on_bad_lines in ("warn", "error"):
        total = count_problems(kept)
        first = "\n".join(str(p) for p in kept[:5])
        rest = total - sum(p.count for p in kept[:5])
        more = f"\n... and {rest} more" if rest > 0 else ""
        warnings.warn(f"{total} warning(s) in {what} (rows kept):\n{first}{more}", DataFormatWarning,
                      stacklevel=user_stacklevel())
    if not problems:
        return
    if on_bad_lines == "error":
        raise DataFormatError(problems)
    if on_bad_lines == "warn":
        total = count_problems(problems)
        first = "\n".join(str(p) for p in problems[:5])
        rest = total - sum(p.count for p in problems[:5])
        more = f"\n... and {rest} more" if rest > 0 else ""
        warnings.warn(
            f"skipped {total} bad row(s) in {what}:\n{first}{more}",
            DataFormatWarning,
            stacklevel=user_stacklevel(),
        )
    elif on_bad_lines != "skip":
        raise ValueError(f"on_bad_lines must be 'error', 'warn' or 'skip', not {on_bad_lines!r}")


#: the words every message uses for a problem kind, counted (one vocabulary for the contracts,
#: ``eval`` and ``score``): an *unknown document* is in no corpus at all; a *document of another
#: domain* is in the corpus, but not in the corpus of its topic's domain
KIND_NAMES: dict[str, str] = {
    "format": "unreadable line(s)",
    "unknown_query": "row(s) of unknown topics",
    "ambiguous_query": "row(s) of ambiguous topics",
    "duplicate": "duplicate document(s)",
    "unknown_doc": "unknown document(s)",
    "other_domain_doc": "document(s) of another domain",
    "missing_query": "missing topic(s) (score 0)",
    "removed_duplicate": "removed duplicate(s) (data v1.1)",
    "skipped_query": "missing topic(s) (skipped: kit rules)",
    "extra_fields": "line(s) with fields after the run id (ignored)",
}


def describe_kinds(counts: dict[str, int], names: dict[str, str] | None = None) -> str:
    """Problem counts in words, in the order of `KIND_NAMES` (the order the RETECO contract
    applies its rules), other kinds after them by their key: ``{"unknown_doc": 2, "duplicate": 1}``
    → ``'1 duplicate document(s), 2 unknown document(s)'``; counts of 0 are left out; ``'nothing'``
    when there is none. ``names`` overrides words of `KIND_NAMES` for a benchmark whose topics
    have another name (iKAT: ``missing turn(s)``)."""
    words = {**KIND_NAMES, **(names or {})}
    order = {kind: i for i, kind in enumerate(KIND_NAMES)}
    kinds = sorted((k for k, n in counts.items() if n), key=lambda k: (order.get(k, len(order)), k))
    return ", ".join(f"{counts[k]} {words.get(k, k)}" for k in kinds) or "nothing"


# ------------------------------------------------------------------------------------------------
# warnings that point at the caller's line

#: folders whose frames a warning never points at: this package, and ir_measures (whose calls run
#: our measures); filled on first use
_INTERNAL: tuple[str, ...] = ()


def _internal_prefixes() -> tuple[str, ...]:
    global _INTERNAL
    if not _INTERNAL:
        import ir_measures  # a dependency, always imported by then

        prefixes = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
        if getattr(ir_measures, "__file__", None):
            prefixes.append(os.path.dirname(os.path.abspath(ir_measures.__file__)) + os.sep)
        _INTERNAL = tuple(prefixes)
    return _INTERNAL


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` call in the calling function point at the
    first frame outside reteco_measures (and ir_measures, and the import machinery): the user's
    line, however deep in the package the warning was raised.

    Use it as ``warnings.warn(message, Category, stacklevel=user_stacklevel())``."""
    prefixes = _internal_prefixes()
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(prefixes) or name.startswith("<frozen ")):
            break
        frame = frame.f_back
        level += 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` pointing at the user's line (see `user_stacklevel`)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())


# -- the errors and warnings of the other modules (raised there, defined here) -----------------


class JSONTextError(ValueError):
    """Text that is not one valid JSON value; ``lineno`` is the 1-based line inside the text
    when the parser knows it."""

    def __init__(self, message: str, lineno: int | None = None):
        super().__init__(message)
        self.lineno = lineno


class DuplicateKeyError(Exception):
    """A key twice in one JSON object (raised by `unique_keys`; ``args[0]`` is the key)."""


class MissingDataError(FileNotFoundError):
    """A benchmark file is not where the loader expects it; the message says where to put it."""


class NativeFallback(Exception):
    """Raised when an input cannot be computed natively with certainty (NaN scores, a hash
    collision inside one query's qrels); the caller evaluates with pytrec_eval instead."""


class LikertWarning(UserWarning):
    """Some target turns had an invalid or missing judgment."""


class IncompleteGridWarning(UserWarning):
    """Some collection × condition cell has no evaluated request: the macro average is over
    the cells present only."""


class UnscorableSubmissionWarning(DataFormatWarning):
    """Some submissions of a leaderboard could not be scored (unreadable, empty, or sharing no query
    id with the benchmark): they are listed in ``Leaderboard.failed`` and not ranked."""


class TooFewScoredError(ValueError):
    """A leaderboard needs two scored submissions; ``scored`` lists the ones it had and ``failed``
    the ones not scored, with their reasons."""

    def __init__(self, scored: list[str], failed: dict[str, str]) -> None:
        self.scored, self.failed = list(scored), dict(failed)
        super().__init__(f"a leaderboard needs at least two scored submissions; scored: {', '.join(scored) or 'none'}"
                         + "".join(f"; not scored: {name}: {msg}" for name, msg in failed.items()))


class SubmissionError(ValueError):
    """The submission cannot be scored; the message is for the participant."""


class BoundedRunError(RuntimeError):
    """The bounded run did not finish: ``reason`` is ``time``, ``memory`` or ``crash``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class JudgeFatalError(RuntimeError):
    """The endpoint refuses every request (bad key, URL or model) or cannot be reached: stop the run."""


class JudgeQueueingWarning(UserWarning):
    """The endpoint answers about one request at a time although several are in flight: the
    others wait in its queue, and that wait counts against each attempt's ``timeout``."""


class ReplyError(ValueError):
    """The model's reply is not a valid judgment (the message says why; ``cause`` names the kind:
    ``invalid_reply``, or ``echoed_placeholder`` when the reply copies the prompt's template)."""

    def __init__(self, message: str, cause: str = "invalid_reply") -> None:
        super().__init__(message)
        self.cause = cause


class BatchUnsupported(RuntimeError):
    """The endpoint does not offer the Batch API (nothing was submitted)."""


class BatchPending(RuntimeError):
    """Batches are still running (their ids are recorded in the cache): run the same command again
    to collect them."""
