"""Library messages in command-line words, and the install hint of a missing optional extra.

The library names Python parameters (``pass root=...``, ``give topics=...``); under the command
line the same message must name the flag (``--data DIR``, ``--topics FILE``). `CLI_FLAGS`
is the one table from parameter to flag; `cli_message` applies it to a message, where the
running command has that flag. `install_hint` words an ``ImportError`` of an optional extra
(exit code 5 of ``reteco-measures``).
"""

from __future__ import annotations

import argparse
import re
import shlex

__all__ = ["CLI_FLAGS", "EXTRAS", "cli_message", "install_hint"]


#: Python parameter named in a library message -> (argument dests that show the command has the
#: flag, the flag as the message should name it); the one table that words messages for the CLI
CLI_FLAGS: dict[str, tuple[tuple[str, ...], str]] = {
    "root": (("data",), "--data DIR"),
    "data": (("data",), "--data DIR"),
    "data_dir": (("data",), "--data DIR"),
    "topics": (("topics",), "--topics FILE"),
    "labels": (("labels",), "--labels FILE"),
    "corpus": (("corpus",), "--corpus FILE"),
    "queries": (("queries",), "--queries FILE"),
    "qrels": (("qrels",), "--qrels FILE"),
    "steps": (("steps",), "--steps FILE"),
    "examples": (("topics",), "--topics examples.jsonl"),
    "domain": (("domain",), "--domain NAME"),
    "split": (("split",), "--split NAME"),
    "query_ids": (("query_ids", "normalize_ids"), "--normalize-ids"),
    "tie_break": (("tie_break",), "--tie-break POLICY"),
}

#: ``name=value`` of a Python parameter in a message: after a verb (``pass root=...``) or in a list
#: that follows one (``give topics=... and qrels=...``); ``value`` is ``...``, quoted or a bare word
_PARAMETER = re.compile(r"(?<![\w.])(\w+)=(\.\.\.|'[^']*'|\"[^\"]*\"|[\w./~$-]*)"
                        r"(\s*\(command line: [^)]*\))?")


def _flag(entry: tuple[tuple[str, ...], str], value: str) -> str:
    """The flag of a `CLI_FLAGS` entry for ``value``: a placeholder value (``...``, empty) keeps the
    flag's metavar (``--data DIR``); a concrete value of a flag that takes one is kept
    (``data='/x/track1_tempo'`` -> ``--data /x/track1_tempo``); a switch drops it (``--normalize-ids``)."""
    parts = entry[1].split(maxsplit=1)
    value = value.strip("'\"")
    if len(parts) == 1 or value in ("", "..."):
        return entry[1]
    return f"{parts[0]} {shlex.quote(value)}"


def cli_message(message: object, args: argparse.Namespace | None) -> str:
    """A library message in command-line words: ``pass root=...`` → ``pass --data DIR``, ``give
    topics=...`` → ``give --topics FILE``, ``pass data='/x/track1_tempo'`` → ``pass --data
    /x/track1_tempo`` (after `CLI_FLAGS`), where the running command has that flag; other
    parameters are left as they are."""
    text = str(message)
    dests = set(vars(args)) if args is not None else set()

    def word(m: re.Match) -> str:
        entry = CLI_FLAGS.get(m.group(1))
        if entry is None or not dests.intersection(entry[0]):
            return m.group(0)
        return _flag(entry, m.group(2))

    return _PARAMETER.sub(word, text)


#: top-level module of an optional dependency -> the extra that installs it (pyproject.toml)
EXTRAS = {"matplotlib": "plot", "openai": "judge", "httpx": "judge", "tqdm": "judge", "krippendorff": "judge",
          "rouge_score": "lexical", "nltk": "lexical", "bert_score": "bertscore", "torch": "bertscore",
          "dask": "scale", "distributed": "scale", "ranx": "bench"}


def install_hint(exc: ImportError) -> str | None:
    """The message for a missing optional extra: the library's own hint (an ImportError whose
    message says ``pip install``), or one built from `EXTRAS` for a missing module of an
    extra; None for any other import failure (a bug, exit 3)."""
    if "pip install" in str(exc):
        return str(exc)
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if name in EXTRAS:
        return f"this needs the optional package {name}: pip install 'reteco-measures[{EXTRAS[name]}]'"
    return None
