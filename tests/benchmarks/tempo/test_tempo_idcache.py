"""The on-disk cache of parsed corpus ids (`read_doc_ids`, ``$RETECO_MEASURES_CACHE``).

Every test points the cache at its own folder and empties the per-process cache first, so a
read stands for what a fresh process (a second ``reteco-measures score`` command) does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from reteco_measures.benchmarks.tempo import data as reteco_tempo
from reteco_measures.benchmarks.tempo.data import CACHE_ENV, corpus_cache_dir, read_doc_ids
from reteco_measures.errors import DataFormatWarning

LINES = [
    '{"id": "bitcoin/aaa_1.txt", "content": "<p>one</p>"}',
    '{"content": "id last", "id": "bitcoin/bbb_2.txt"}',
    '{"id": "bitcoin/caf\\u00e9_3.txt", "content": "escaped id"}',
    '{"doc_id": "bitcoin/ddd_4.txt", "text": "doc_id key"}',
    "{not json",
    '{"content": "no id at all"}',
    "",
    '{"id": "bitcoin/\u00e9t\u00e9_5.txt", "content": "raw UTF-8 id"}',
]


def plain_json_ids(path: Path) -> list[str]:
    """The ids as a plain json parse of every line finds them (the independent reference)."""
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        did = rec.get("id", rec.get("doc_id"))
        if did is not None:
            ids.append(str(did))
    return ids


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    reteco_tempo.clear_corpus_cache()
    yield folder
    reteco_tempo.clear_corpus_cache()


@pytest.fixture()
def docs(tmp_path) -> Path:
    path = tmp_path / "documents.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def count_parses(monkeypatch, fail: bool = False) -> list[Path]:
    """Replace the parser by a spy (that fails the test when ``fail``); returns the parsed paths."""
    parsed: list[Path] = []
    real = reteco_tempo._parse_doc_ids

    def spy(p, domain):
        if fail:
            raise AssertionError(f"{p} parsed although the disk cache holds it")
        parsed.append(p)
        return real(p, domain)

    monkeypatch.setattr(reteco_tempo, "_parse_doc_ids", spy)
    return parsed


def fresh_read(path: Path, domain: str = "bitcoin", **kw):
    """`read_doc_ids` as a new process does it (nothing cached in memory); returns (frame, warnings)."""
    reteco_tempo.clear_corpus_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = read_doc_ids(path, domain, **kw)
    return frame, [str(w.message) for w in caught if issubclass(w.category, DataFormatWarning)]


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "corpus-ids").glob("*.arrow"))


def test_second_read_comes_from_the_disk_cache(cache, docs, monkeypatch):
    first, _ = fresh_read(docs)
    assert len(entries(cache)) == 1
    count_parses(monkeypatch, fail=True)
    second, _ = fresh_read(docs)
    assert second["doc_id"].tolist() == first["doc_id"].tolist() == plain_json_ids(docs)
    assert second["domain"].tolist() == ["bitcoin"] * 5
    assert (second.dtypes == first.dtypes).all()
    other, _ = fresh_read(docs, "law")  # the domain is the caller's, not the cache's
    assert set(other["domain"]) == {"law"}


def test_ids_equal_a_plain_json_parse_with_many_lines(cache, tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    ids = [f"history/{i:08x}_{i}.txt" for i in range(20_000)] + ['quo"te', "back\\slash", "tab\there", "\u4e2d"]
    path.write_text("".join(json.dumps({"id": d, "content": "x" * (i % 7)}, ensure_ascii=i % 2 == 0) + "\n"
                            for i, d in enumerate(ids)), encoding="utf-8")
    fresh_read(path)
    count_parses(monkeypatch, fail=True)
    frame, _ = fresh_read(path)
    assert frame["doc_id"].tolist() == ids == plain_json_ids(path)


def test_bad_lines_are_still_reported_from_the_cache(cache, docs, monkeypatch):
    _, parsed_warnings = fresh_read(docs)
    count_parses(monkeypatch, fail=True)
    _, cached_warnings = fresh_read(docs)
    assert cached_warnings == parsed_warnings
    assert len(cached_warnings) == 1
    message = cached_warnings[0]
    assert "skipped 2 bad row(s)" in message
    assert f"{docs}:5: -: not valid JSON" in message and f"{docs}:6: -: no 'id' field" in message


def test_the_cache_reports_the_path_the_caller_gave(cache, docs, monkeypatch, tmp_path):
    fresh_read(docs)
    count_parses(monkeypatch, fail=True)
    monkeypatch.chdir(tmp_path)
    _, caught = fresh_read(Path("documents.jsonl"))  # same file, same entry, relative path reported
    assert "documents.jsonl:5: -:" in caught[0] and str(tmp_path) not in caught[0]


def test_a_changed_file_is_parsed_again(cache, docs, monkeypatch):
    fresh_read(docs)
    parsed = count_parses(monkeypatch)
    # same size, another modification time
    os.utime(docs, ns=(1, 1))
    assert fresh_read(docs)[0]["doc_id"].tolist() == plain_json_ids(docs)
    assert len(parsed) == 1
    # same size and the same modification time as the cached entry would not do: change the ids
    text = docs.read_text(encoding="utf-8").replace("aaa_1", "zzz_9")
    docs.write_text(text, encoding="utf-8")
    os.utime(docs, ns=(1, 2))
    frame, _ = fresh_read(docs)
    assert frame["doc_id"].tolist()[0] == "bitcoin/zzz_9.txt"
    assert len(parsed) == 2
    docs.write_text(text + '{"id": "bitcoin/new.txt"}\n', encoding="utf-8")  # another size
    assert fresh_read(docs)[0]["doc_id"].tolist()[-1] == "bitcoin/new.txt"
    assert len(parsed) == 3
    fresh_read(docs)
    assert len(parsed) == 3  # the new version is cached in turn
    assert len(entries(cache)) == 1  # one entry per documents file, overwritten


@pytest.mark.parametrize("damage", ["truncate", "flip an id byte", "garbage", "empty"])
def test_a_corrupt_cache_file_is_ignored(cache, docs, monkeypatch, damage):
    fresh_read(docs)
    (entry,) = entries(cache)
    raw = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip an id byte":  # same size and layout: only the checksum can tell
        assert raw.count(b"bitcoin/aaa_1.txt") == 1
        entry.write_bytes(raw.replace(b"bitcoin/aaa_1.txt", b"bitcoin/aab_1.txt"))
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(raw)))
    else:
        entry.write_bytes(b"")
    parsed = count_parses(monkeypatch)
    frame, caught = fresh_read(docs)
    assert frame["doc_id"].tolist() == plain_json_ids(docs)
    assert len(parsed) == 1 and len(caught) == 1  # parsed again, only the file's own bad lines warn
    fresh_read(docs)
    assert len(parsed) == 1  # and the entry was written again


def test_an_unwritable_cache_folder_falls_back_to_parsing(tmp_path, docs, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    parsed = count_parses(monkeypatch)
    for _ in range(2):
        frame, caught = fresh_read(docs)
        assert frame["doc_id"].tolist() == plain_json_ids(docs) and len(caught) == 1
    assert len(parsed) == 2
    assert blocker.read_text(encoding="utf-8").startswith("a file")
    reteco_tempo.clear_corpus_cache()


@pytest.mark.parametrize("how", ["env off", "cache=False"])
def test_the_cache_can_be_turned_off(tmp_path, docs, monkeypatch, how):
    kw = {}
    if how == "env off":
        monkeypatch.setenv(CACHE_ENV, "off")
        assert corpus_cache_dir() is None
    else:
        monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
        kw = {"cache": False}
    parsed = count_parses(monkeypatch)
    fresh_read(docs, **kw)
    fresh_read(docs, **kw)
    assert len(parsed) == 2
    assert not (tmp_path / "cache").exists()
    reteco_tempo.clear_corpus_cache()


def test_default_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name != "nt":
        assert corpus_cache_dir() == tmp_path / "xdg" / "reteco-measures" / "corpus-ids"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if os.name != "nt":
        assert corpus_cache_dir() == tmp_path / "home" / ".cache" / "reteco-measures" / "corpus-ids"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert corpus_cache_dir() == tmp_path / "mine" / "corpus-ids"


def test_the_test_session_never_uses_the_home_cache():
    folder = corpus_cache_dir()
    home = Path(os.path.expanduser("~")) / ".cache" / "reteco-measures"
    assert folder is not None and home not in folder.parents


_READ = """
import sys
from reteco_measures.benchmarks.tempo.data import read_doc_ids
print(len(read_doc_ids(sys.argv[1], "history")))
"""


def test_two_processes_at_once(cache, tmp_path):
    """Two processes reading (and writing the entry of) the same file at once both get every id;
    the entry left behind is valid and no temporary file is left."""
    path = tmp_path / "docs.jsonl"
    n = 50_000
    path.write_text("".join(f'{{"id": "history/{i:07d}.txt", "content": "c"}}\n' for i in range(n)),
                    encoding="utf-8")
    env = {**os.environ, CACHE_ENV: str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", _READ, str(path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o[0].strip() for o in outs] == [str(n), str(n)]
    assert [p.name for p in (cache / "corpus-ids").iterdir()] == [entries(cache)[0].name]
    reteco_tempo.clear_corpus_cache()
    entry = entries(cache)[0]
    assert reteco_tempo._read_cached_ids(entry, reteco_tempo._file_key(path, ""), path) is not None


# ------------------------------------------------------------------------------------------------
# the id index of a release whose ids are known distinct (kept with the cached ids)


def write_release(root: Path, docs: dict[str, list[str]]) -> Path:
    for dom, ids in docs.items():
        folder = root / "reteco" / "track1_tempo" / dom
        folder.mkdir(parents=True)
        (folder / "documents.jsonl").write_text("".join(json.dumps({"id": d, "content": "c"}) + "\n" for d in ids),
                                                encoding="utf-8")
        (folder / "examples_dev.jsonl").write_text(json.dumps({"id": f"1_{dom}", "query": "q", "gold_ids": ids[:1]})
                                                   + "\n", encoding="utf-8")
        (folder / "qrels_dev.txt").write_text(f"1_{dom} 0 {ids[0]} 1\n", encoding="utf-8")
    return root


def reference_codes(corpus) -> tuple[list[str], list[int]]:
    """The id index and row positions as pandas' factorize gives them (first-appearance order)."""
    codes, uniques = pd.factorize(corpus["doc_id"].astype(object).to_numpy())
    return list(uniques), codes.tolist()


DISTINCT = {"bitcoin": ["bitcoin/b2.txt", "bitcoin/a1.txt", "bitcoin/c3.txt"], "law": ["law/x.txt", "law/a1.txt"]}


@pytest.mark.parametrize("read", ["parsed", "from the disk cache"])
def test_distinct_release_ids_need_no_dictionary_encoding(cache, tmp_path, monkeypatch, read):
    from reteco_measures.benchmarks.reteco import contract

    root = write_release(tmp_path / "release", DISTINCT)
    if read == "from the disk cache":
        reteco_tempo.load_tempo("dev", root=root)
        reteco_tempo.clear_corpus_cache()
        count_parses(monkeypatch, fail=True)

    def no_encoding(*args, **kwargs):
        raise AssertionError("the ids of a distinct release were dictionary-encoded")

    corpus = reteco_tempo.load_tempo("dev", root=root).corpus
    monkeypatch.setattr(contract.pc, "dictionary_encode", no_encoding)
    index, codes = contract.corpus_codes(corpus)
    assert (index.to_pylist(), codes.tolist()) == reference_codes(corpus)
    assert index.to_pylist() == DISTINCT["bitcoin"] + DISTINCT["law"]


@pytest.mark.parametrize("docs", [
    {"bitcoin": ["bitcoin/a.txt", "bitcoin/b.txt", "bitcoin/a.txt"], "law": ["law/x.txt"]},  # repeat in a file
    {"bitcoin": ["bitcoin/a.txt", "bitcoin/b.txt"], "law": ["law/x.txt", "bitcoin/a.txt"]},  # across files
    {"bitcoin": ["a.txt", "b.txt"], "law": ["a.txt"]},  # ids without their domain's prefix
])
def test_repeated_release_ids_are_encoded(cache, tmp_path, monkeypatch, docs):
    from reteco_measures.benchmarks.reteco import contract

    root = write_release(tmp_path / "release", docs)
    calls = []
    real = contract.pc.dictionary_encode

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(contract.pc, "dictionary_encode", counted)
    for _ in range(2):  # parsed, then from the disk cache
        reteco_tempo.clear_corpus_cache()
        corpus = reteco_tempo.load_tempo("dev", root=root).corpus
        calls.clear()
        index, codes = contract.corpus_codes(corpus)
        assert calls and (index.to_pylist(), codes.tolist()) == reference_codes(corpus)
