"""The CLI reference page is generated from the argparse parser and stays in sync with it."""

from __future__ import annotations

import argparse
from pathlib import Path

from reteco_measures.cli import docs as cli_docs
from reteco_measures.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "cli.md"


def test_cli_page_equals_the_generated_text():
    expected = cli_docs.render()
    assert PAGE.read_text(encoding="utf-8") == expected, (
        "docs/cli.md is out of date with the parser: regenerate it with "
        "`python -m reteco_measures.cli.docs > docs/cli.md`")


def test_every_command_has_its_help_on_the_page():
    text = PAGE.read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert f"## `reteco-measures {name}`" in text, name
        usage = command.format_usage().split()[1:3]  # "usage: reteco-measures <name> ..."
        assert " ".join(usage) == f"reteco-measures {name}"


def test_page_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = cli_docs.render()
    monkeypatch.setenv("COLUMNS", "250")
    assert cli_docs.render() == narrow


def test_nested_commands_get_their_own_section():
    parser = argparse.ArgumentParser(prog="reteco-measures")
    sub = parser.add_subparsers(metavar="COMMAND")
    outer = sub.add_parser("outer", help="outer help", aliases=["o"])
    inner = outer.add_subparsers(metavar="SUB")
    inner.add_parser("inner", help="inner help").add_argument("--flag", help="a flag")
    page = cli_docs.render(parser)
    assert page.count("## `reteco-measures outer`") == 1  # the alias does not repeat the section
    assert "### `reteco-measures outer inner`" in page and "--flag FLAG  a flag" in page
