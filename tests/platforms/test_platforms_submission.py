"""Hostile submissions through ``codabench score``: every reproducer of the hostile-submissions
report (bombs, damaged zips, links), built here, small on disk, run in one subprocess under a
3 GiB address-space limit. Each must end within 3 minutes with exit 1, a message naming what is
wrong and a ``detailed_results.html`` that says it, and leave no temporary file behind.

The bombs are written as compressed streams (never on disk uncompressed); the damaged zips are
made by patching the fields the zip specification (PKWARE APPNOTE 4.3.7, 4.4.4, 4.4.5) defines:
the general-purpose flags (bit 0: encrypted, bit 11: UTF-8 names) and the compression method, in
the local header (offset 6 / 8) and the central directory entry (offset 8 / 10).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import shutil
import stat
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib
from pathlib import Path

import pytest

from reteco_measures.platforms.submission import SubmissionError, SubmissionLimits, read_submission
from reteco_measures.sample import sample_root

SAMPLE = sample_root()
RUN = SAMPLE / "runs" / "reteco_track1a_dev.txt"
QRELS = SAMPLE / "reteco" / "track1_tempo" / "bitcoin" / "qrels_dev.txt"
BENCH = ["--benchmark", "reteco-1a", "--split", "dev", "--set", "labels=runs/reteco_track1a_labels_dev.jsonl"]
MiB = 1 << 20


# ------------------------------------------------------------------------------------------------
# building the submissions


def _zip_stream(path: Path, name: str, chunks, method=zipfile.ZIP_DEFLATED) -> None:
    """A zip with one member written from ``chunks`` (bytes), never holding them whole."""
    with zipfile.ZipFile(path, "w", compression=method, compresslevel=9 if method == zipfile.ZIP_DEFLATED else None
                         ) as zf, zf.open(name, "w", force_zip64=True) as f:
        for c in chunks:
            f.write(c)


def _patch_zip(path: Path, *, flags: int | None = None, method: int | None = None) -> None:
    """Set the flags / method of the first entry in its local header and central directory."""
    data = bytearray(path.read_bytes())
    cd = data.index(b"PK\x01\x02")
    for base, flag_at, method_at in ((0, 6, 8), (cd, 8, 10)):
        if flags is not None:
            struct.pack_into("<H", data, base + flag_at, struct.unpack_from("<H", data, base + flag_at)[0] | flags)
        if method is not None:
            struct.pack_into("<H", data, base + method_at, method)
    path.write_bytes(bytes(data))


def _cases(root: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (Codabench input folder, extra arguments)."""
    cases: dict[str, tuple[Path, list[str]]] = {}

    def case(name: str, extra: list[str] | None = None) -> Path:
        inp = root / name / "input"
        (inp / "res").mkdir(parents=True)
        (inp / "ref").symlink_to(SAMPLE, target_is_directory=True)
        cases[name] = (inp, extra or [])
        return inp / "res"

    shutil.copy(RUN, case("valid") / "run.txt")
    # 1. bombs: 256 MiB of blank lines in a ~1 MB zip; 1 GiB of newlines in a ~1 MB gzip;
    # 20 million run lines in a ~1.5 MB zip
    _zip_stream(case("blank_line_bomb") / "sub.zip", "run.txt", (b"\n" * MiB for _ in range(256)))
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = comp.compress(b"\n" * MiB)
    with open(case("gzip_bomb") / "run.txt.gz", "wb") as f:
        f.write(block)
        for _ in range(1023):
            f.write(comp.compress(b"\n" * MiB))
        f.write(comp.flush())
    line = b"63883_109 Q0 bitcoin/doc 1 1.0 r\n"
    _zip_stream(case("many_lines") / "sub.zip", "run.txt", (line * 1_000_000 for _ in range(20)))
    # the zip declares 100 bytes; the member holds 8 MiB: counted as read, refused past --max-bytes
    res = case("declared_size_lie", ["--max-bytes", "4M"])
    _zip_stream(res / "sub.zip", "run.txt", (RUN.read_bytes() * 1100,))
    data = bytearray((res / "sub.zip").read_bytes())
    cd = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, cd + 24, 100)  # central directory: uncompressed size
    (res / "sub.zip").write_bytes(bytes(data))
    shutil.copy(RUN, case("time_limit", ["--max-seconds", "0.05"]) / "run.txt")
    shutil.copy(RUN, case("memory_limit", ["--max-memory", "300M"]) / "run.txt")
    # 2. damaged zips
    for name in ("encrypted", "corrupt", "truncated", "unknown_method", "utf8_flag_bad_name", "bad_crc"):
        with zipfile.ZipFile(case(name) / "sub.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.write(RUN, "run.txt")
    _patch_zip(root / "encrypted/input/res/sub.zip", flags=0x1)
    p = root / "corrupt/input/res/sub.zip"
    data = bytearray(p.read_bytes())
    for i in range(60, 400):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))
    p = root / "truncated/input/res/sub.zip"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    _patch_zip(root / "unknown_method/input/res/sub.zip", method=99)  # AES (WinZip), not supported
    p = root / "utf8_flag_bad_name/input/res/sub.zip"
    p.write_bytes(p.read_bytes().replace(b"run.txt", b"r\xffn.txt"))  # same length: offsets unchanged
    _patch_zip(p, flags=0x800)
    p = root / "bad_crc/input/res/sub.zip"
    data = bytearray(p.read_bytes())
    cd = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, cd + 16, struct.unpack_from("<I", data, cd + 16)[0] ^ 1)
    struct.pack_into("<I", data, 14, struct.unpack_from("<I", data, 14)[0] ^ 1)
    p.write_bytes(bytes(data))
    shutil.copy(RUN, case("non_utf8_file_name") / os.fsdecode(b"run\xe9.txt"))
    # 3. links: the reference qrels behind a symlink in res/, and a symlink entry inside a zip
    (case("symlink") / "run.txt").symlink_to(QRELS)
    info = zipfile.ZipInfo("run.txt")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(case("zip_symlink") / "sub.zip", "w") as zf:
        zf.writestr(info, str(QRELS))
    os.mkfifo(case("fifo") / "run.txt")
    # 8. the SemEval rules: a folder inside the zip, and a format problem
    with zipfile.ZipFile(case("folder_in_zip") / "sub.zip", "w") as zf:
        zf.write(RUN, "team/run.txt")
    team = case("folder_in_res") / "team"  # what Codabench makes of a zip holding a folder
    team.mkdir()
    shutil.copy(RUN, team / "run.txt")
    (case("format_problem") / "run.txt").write_bytes(RUN.read_bytes() + b"63883_109 Q0 bitcoin/x 1 notanumber r\n")
    return cases


_DRIVER = textwrap.dedent("""
    import contextlib, io, json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from reteco_measures.cli.main import main
    cases = json.loads(sys.argv[1])
    bench = json.loads(sys.argv[2])
    out = {}
    for name, (inp, extra, dest) in cases.items():
        err = io.StringIO()
        t = time.monotonic()
        with contextlib.redirect_stderr(err):
            code = main(["codabench", "score", inp, dest, *bench, *extra])
        out[name] = {"code": code, "err": err.getvalue(), "seconds": time.monotonic() - t,
                     "maxrss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
                     "maxrss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("hostile")
    cases = _cases(root)
    sizes = {name: sum(p.lstat().st_size for p in (inp / "res").rglob("*")) for name, (inp, _) in cases.items()}
    assert max(sizes.values()) < 2 * MiB  # small on disk
    args = {name: [str(inp), extra, str(inp.parent / "output")] for name, (inp, extra) in cases.items()}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(args), json.dumps(BENCH)], capture_output=True,
                          text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, (inp, _) in cases.items():
        out = inp.parent / "output"
        results[name]["html"] = (out / "detailed_results.html").read_text(encoding="utf-8") \
            if (out / "detailed_results.html").exists() else None
        results[name]["outputs"] = sorted(p.name for p in out.iterdir()) if out.exists() else []
        results[name]["size"] = sizes[name]
    results["_sizes"] = sizes
    return results


@pytest.mark.parametrize("name, words", [
    ("blank_line_bomb", ["sub.zip/run.txt", "more than 10,000,000 lines"]),
    ("gzip_bomb", ["run.txt.gz", "more than 10,000,000 lines"]),
    ("many_lines", ["sub.zip/run.txt", "unpacks to more than 256.0 MiB"]),
    ("declared_size_lie", ["sub.zip/run.txt", "unpacks to more than 4.0 MiB"]),
    ("time_limit", ["stopped after 0.05 s", "time limit"]),
    ("memory_limit", ["memory"]),
    ("encrypted", ["sub.zip", "encrypted"]),
    ("corrupt", ["sub.zip", "damaged"]),
    ("truncated", ["sub.zip", "truncated"]),
    ("unknown_method", ["sub.zip", "not supported", "deflate"]),
    ("utf8_flag_bad_name", ["sub.zip", "not valid UTF-8"]),
    ("bad_crc", ["sub.zip/run.txt", "CRC-32"]),
    ("non_utf8_file_name", ["not valid UTF-8", "rename"]),
    ("symlink", ["run.txt", "symbolic link"]),
    ("zip_symlink", ["sub.zip", "symbolic link"]),
    ("fifo", ["run.txt", "not a regular file"]),
    ("folder_in_zip", ["sub.zip", "folder (team/)"]),
    ("folder_in_res", ["team/", "folder"]),
    ("format_problem", ["format problem", "run.txt:", "notanumber", "not scored"]),
])
@pytest.mark.slow
def test_hostile_submission_fails_with_a_message(hostile: dict, name: str, words: list[str]):
    r = hostile[name]
    assert r["code"] == 1, r["err"]
    assert r["seconds"] <= 180
    err = r["err"]
    assert "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w in err, (w, err)
    assert r["html"] is not None and "could not be scored" in r["html"]
    first = err.strip().splitlines()[0].removeprefix("error: ")
    from reteco_measures.report.html import escape_html

    assert escape_html(first) in r["html"]  # the page says what the participant reads on stderr
    assert "scores.json" not in r["outputs"]  # nothing for a leaderboard
    assert not [o for o in r["outputs"] if o.endswith(".tmp")]
    assert "reteco-codabench-" not in err and "reteco-codabench-" not in r["html"]  # no scratch paths


@pytest.mark.slow  # the hostile archives take 10 s to build (module fixture)
def test_links_never_read(hostile: dict):
    """The symlink pointed at the reference qrels: not one of their lines reaches the participant."""
    secret = [line for line in QRELS.read_text().splitlines() if line.strip()]
    for name in ("symlink", "zip_symlink"):
        shown = hostile[name]["err"] + hostile[name]["html"]
        assert not any(line in shown for line in secret)


@pytest.mark.slow  # the hostile archives take 10 s to build (module fixture)
def test_valid_submission_still_scores(hostile: dict):
    r = hostile["valid"]
    assert r["code"] == 0, r["err"]
    assert "scores.json" in r["outputs"] and "detailed_results.html" in r["outputs"]
    assert not [o for o in r["outputs"] if o.endswith(".tmp")]


@pytest.mark.slow  # the hostile archives take 10 s to build (module fixture)
def test_memory_of_the_reading_paths(hostile: dict):
    """Refusing a bomb costs no more memory than scoring the sample (plus 5x the upload): the
    bytes are counted as they stream, never held. Peak resident sizes of the scoring processes."""
    base = hostile["valid"]["maxrss_children"]
    for name in ("blank_line_bomb", "gzip_bomb", "many_lines", "declared_size_lie"):
        assert hostile[name]["maxrss_children"] <= base + 5 * hostile[name]["size"] + 64 * MiB, name
    selfs = {k: v["maxrss_self"] >> 20 for k, v in hostile.items() if k != "_sizes"}
    assert hostile["format_problem"]["maxrss_self"] < 1 << 30, selfs
    print({k: (v["maxrss_children"] >> 20, round(v["seconds"], 1)) for k, v in hostile.items() if k != "_sizes"})


# ------------------------------------------------------------------------------------------------
# the reader in this process: what unpacks, and to what


@pytest.mark.parametrize("layers", [
    ["gzip"], ["bzip2"], ["xz"], ["zip-deflate"], ["zip-stored"], ["zip-bzip2"], ["zip-lzma"],
    ["zip-deflate", "gzip"], ["zip-deflate", "zip-deflate"], ["gzip", "gzip-concatenated"],
])
def test_every_compression_unpacks_to_the_same_bytes(tmp_path: Path, layers: list[str]):
    raw = RUN.read_bytes()
    res = tmp_path / "res"
    res.mkdir()
    name, data = "run.txt", raw
    for layer in reversed(layers):
        if layer == "gzip":
            name, data = name + ".gz", gzip.compress(data)
        elif layer == "gzip-concatenated":  # two gzip members, as `cat a.gz b.gz` makes
            half = len(raw) // 2
            name, data = name + ".gz", gzip.compress(raw[:half]) + gzip.compress(raw[half:])
        elif layer == "bzip2":
            name, data = name + ".bz2", bz2.compress(data)
        elif layer == "xz":
            name, data = name + ".xz", lzma.compress(data)
        else:
            method = {"zip-deflate": zipfile.ZIP_DEFLATED, "zip-stored": zipfile.ZIP_STORED,
                      "zip-bzip2": zipfile.ZIP_BZIP2, "zip-lzma": zipfile.ZIP_LZMA}[layer]
            tmp = tmp_path / f"layer{len(name)}.zip"
            with zipfile.ZipFile(tmp, "w", compression=method) as zf:
                zf.writestr(name, data)
            name, data = f"up{len(name)}.zip", tmp.read_bytes()
    (res / name).write_bytes(data)
    sub = read_submission(res, tmp_path / "scratch")
    assert sub.path.read_bytes() == raw
    assert sub.path.name == "run.txt" and sub.bytes == len(raw) and sub.lines == raw.count(b"\n")


def test_limits_are_checked_and_documented():
    d = SubmissionLimits()
    assert (d.max_bytes, d.max_lines, d.max_files, d.max_seconds, d.max_memory) == (
        256 * MiB, 10_000_000, 100, 300.0, 6 << 30)
    with pytest.raises(ValueError, match="max_lines"):
        SubmissionLimits(max_lines=0)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text(encoding="utf-8")
    for flag in ("--max-bytes", "--max-lines", "--max-files", "--max-seconds", "--max-memory"):
        assert flag in doc, flag


def test_too_many_files(tmp_path: Path):
    res = tmp_path / "res"
    res.mkdir()
    for i in range(5):
        (res / f"r{i}.txt").write_text("x\n")
    with pytest.raises(SubmissionError, match="5 files"):
        read_submission(res, tmp_path / "s", SubmissionLimits(max_files=4))
    with pytest.raises(SubmissionError, match="exactly one run file"):
        read_submission(res, tmp_path / "s")


@pytest.mark.parametrize("name, make, message", [
    ("run.txt.gz", lambda raw: gzip.compress(raw)[:-20], "gzip data ends early"),
    ("run.txt.bz2", lambda raw: bz2.compress(raw)[: len(bz2.compress(raw)) // 2], "bzip2 data ends early"),
    ("run.txt.xz", lambda raw: lzma.compress(raw)[:-30], "xz data ends early"),
    ("run.txt.gz", lambda raw: gzip.compress(raw) + b"trailing junk", "bytes after the end of the gzip data"),
    ("run.txt.gz", lambda raw: gzip.compress(raw)[:40] + bytes(200) + gzip.compress(raw)[240:], "damaged gzip"),
    ("run.zst", lambda raw: b"\x28\xb5\x2f\xfd" + raw, "zstandard archive, which is not supported"),
])
def test_damaged_compressed_files(tmp_path: Path, name: str, make, message: str):
    res = tmp_path / "res"
    res.mkdir()
    (res / name).write_bytes(make(RUN.read_bytes()))
    with pytest.raises(SubmissionError, match=message):
        read_submission(res, tmp_path / "scratch")
