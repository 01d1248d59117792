"""Shared fixtures: the oracle data in ../shared/data (read in place, never copied)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real oracles (trec_eval tests, small cases, iKAT 2023, RETECO samples)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"oracle data not found at {SHARED_DATA} (the project expects ../shared/data beside it)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def trec_eval_dir(shared_data: Path) -> Path:
    return shared_data / "trec_eval_tests"
