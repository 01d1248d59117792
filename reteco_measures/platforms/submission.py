"""A bounded reader for submissions that come from anonymous participants (Codabench, Harbor).

A submission folder holds one file — a run, the benchmark's JSONL/JSON — possibly compressed
(gzip, bzip2, xz) or zipped, possibly both. `read_submission` turns it into one plain file
in a scratch folder, which the benchmark's readers then read, and refuses, with a message for the
participant (`SubmissionError`), everything a scoring worker should not have to survive:

* more than `SubmissionLimits.max_bytes` bytes once unpacked and decompressed: every layer
  (zip member, gzip, bzip2, xz) is decompressed as a stream, at most 1 MiB of output per step,
  and the bytes are counted as they come out — sizes declared in a zip are never trusted;
* more than `max_lines` lines (a million blank lines cost the readers
  far more than their bytes: one row slot each);
* more than `max_files` entries in the folder or in a zip;
* symbolic links, devices, pipes and other non-regular entries, in the folder or in a zip —
  refused by what they are, their target is never opened;
* a folder inside the submission (the SemEval/Codabench rule: upload the file itself);
* encrypted (password-protected), damaged (corrupt compressed data, a wrong CRC, a size that
  does not match) and truncated archives, compression methods other than stored, deflate, bzip2
  and xz/lzma, and file names that are not UTF-8.

Memory stays at a few MiB whatever the submission holds (one chunk per layer); disk use is at
most ``max_bytes`` per layer, and each intermediate layer is deleted once decoded.

`run_bounded` runs the scoring itself in a child process under a wall-clock limit
(`max_seconds`) and an address-space limit
(`max_memory`), so a submission that is slow or large to score ends in
a message instead of a killed worker.

The defaults are sized for a 2-core, 8 GB scoring worker; each limit is an option of
``reteco-measures codabench score`` (see docs/reliability.md).
"""

from __future__ import annotations

import bz2
import lzma
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import BoundedRunError, SubmissionError
from ..io.limits import ByteCounter, format_size

__all__ = [
    "SubmissionLimits",
    "SubmissionError",
    "Submission",
    "read_submission",
    "run_bounded",
    "BoundedRunError",
    "IGNORED_NAMES",
]

MiB = 1 << 20
GiB = 1 << 30
_CHUNK = MiB

#: files Codabench or archivers put beside a submission, never the submission itself
IGNORED_NAMES = frozenset({"metadata", "metadata.yaml", "thumbs.db", "desktop.ini"})

_MAGIC = (
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # an empty zip
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
#: signatures of formats that are refused by name (rather than read as text)
_UNSUPPORTED_MAGIC = (
    (b"\x28\xb5\x2f\xfd", "zstandard"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip"),
    (b"Rar!\x1a\x07", "RAR"),
    (b"\x04\x22\x4d\x18", "LZ4"),
)
_SUFFIX = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip"}
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                zipfile.ZIP_LZMA: "lzma"}


@dataclass(frozen=True)
class SubmissionLimits:
    """What a submission may cost the scoring worker.

    Attributes:
        max_bytes: the submission file's size once unpacked and decompressed (every layer is
            counted as it is decompressed). Default 256 MiB: about 6 million TREC run lines.
        max_lines: lines in the unpacked file. Default 10 million.
        max_files: entries in the submission folder, and in a zip (folders included). Default 100.
        max_seconds: wall-clock seconds for scoring one submission (reading the reference data
            included); None: no limit. Default 300 (below Codabench's usual execution limit, so the
            participant sees this message, not the platform's).
        max_memory: address space of the scoring process in bytes (``RLIMIT_AS``); None: no limit.
            Default 6 GiB. A hard limit already set lower (a container's) is kept.
        max_depth: archives inside archives (``run.txt.gz`` in a zip is 2 layers). Default 3.
    """

    max_bytes: int = 256 * MiB
    max_lines: int = 10_000_000
    max_files: int = 100
    max_seconds: float | None = 300.0
    max_memory: int | None = 6 * GiB
    max_depth: int = 3

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_lines", "max_files", "max_depth"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)!r}")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be positive, not {self.max_seconds!r}")
        if self.max_memory is not None and self.max_memory < 256 * MiB:
            raise ValueError(f"max_memory must be at least 256 MiB, not {self.max_memory!r}")


@dataclass
class Submission:
    """The unpacked submission.

    Attributes:
        path: the plain file (in the scratch folder) the readers read.
        name: how the participant knows it (``upload.zip/run.txt.gz``), for messages.
        bytes: its size.
        lines: its number of newline characters.
        layers: the layers unpacked, outermost first (``["zip", "gzip"]``).
    """

    path: Path
    name: str
    bytes: int
    lines: int
    layers: list[str]


_size = format_size

def _printable_name(raw: bytes, where: str) -> str:
    """A file name as text, or the participant-facing refusal of a name that is not UTF-8."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        shown = raw.decode("utf-8", errors="replace")
        raise SubmissionError(f"{where}: a file name is not valid UTF-8 ({shown!r}); rename the file "
                              "(letters, digits, '-', '_', '.') and upload again") from None
    if any(ord(c) < 32 for c in name):
        raise SubmissionError(f"{where}: the file name {name!r} holds control characters; rename the file")
    return name


# ------------------------------------------------------------------------------------------------
# streams


class _Window:
    """``length`` bytes of an open binary file from ``start`` (a zip member's compressed data)."""

    def __init__(self, f: IO[bytes], start: int, length: int):
        self.f, self.pos, self.left = f, start, length

    def read(self, n: int) -> bytes:
        if self.left <= 0:
            return b""
        self.f.seek(self.pos)
        data = self.f.read(min(n, self.left))
        self.pos += len(data)
        self.left = self.left - len(data) if data else 0
        return data


class _Truncated(Exception):
    pass


class _Decoder:
    """``read(n)`` gives at most ``n`` decompressed bytes: a compressed stream can never expand
    in one step beyond what is asked. ``kind``: ``gzip``, ``bzip2``, ``xz`` (files: concatenated
    streams are read in turn, the end is checked) or ``deflate``, ``bzip2-member``,
    ``lzma-member`` (zip members: one stream, the zip's CRC and size check the end)."""

    def __init__(self, raw: Any, kind: str):
        self.raw, self.kind = raw, kind
        self.member = kind in ("deflate", "bzip2-member", "lzma-member")
        self.zlib = kind in ("gzip", "deflate")
        self.d: Any = self._new()
        self.ended = False
        self.tail = b""  # compressed bytes read but not yet given to a new stream

    def _new(self) -> Any:
        if self.kind == "gzip":
            return zlib.decompressobj(31)
        if self.kind == "deflate":
            return zlib.decompressobj(-15)
        if self.kind in ("bzip2", "bzip2-member"):
            return bz2.BZ2Decompressor()
        if self.kind == "xz":
            return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        # a zip member in lzma: 2 bytes version, 2 bytes properties size, the properties (APPNOTE 5.8.8)
        head = self.raw.read(4)
        if len(head) < 4:
            raise _Truncated()
        (psize,) = struct.unpack("<H", head[2:4])
        props = self.raw.read(psize)
        if len(props) < psize:
            raise _Truncated()
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[
            lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])  # as zipfile does

    def read(self, n: int) -> bytes:
        while not self.ended:
            if self.d.eof:
                if self.member:
                    self.ended = True
                    break
                rest = self.d.unused_data + self.tail
                self.tail = b""
                if not rest:
                    rest = self.raw.read(_CHUNK)
                if not rest:
                    self.ended = True
                    break
                magic = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}[self.kind]
                if not rest.startswith(magic[: len(rest)]):
                    raise ValueError(f"bytes after the end of the {self.kind} data")
                self.d = self._new()
                self.tail = rest
                continue
            if self.zlib:
                data = self.d.unconsumed_tail or self.tail or self.raw.read(_CHUNK)
                self.tail = b""
                if not data:
                    raise _Truncated()
                out = self.d.decompress(data, n)
            else:
                if self.d.needs_input:
                    data = self.tail or self.raw.read(_CHUNK)
                    self.tail = b""
                    if not data:
                        if self.kind == "lzma-member":  # no end marker needed: the zip's size ends it
                            self.ended = True
                            break
                        raise _Truncated()
                else:
                    data = b""
                out = self.d.decompress(data, max_length=n)
            if out:
                return out
        return b""


def _sniff(path: Path) -> str | None:
    with open(path, "rb") as f:
        head = f.read(8)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    for magic, kind in _UNSUPPORTED_MAGIC:
        if head.startswith(magic):
            raise SubmissionError(f"{path.name}: a {kind} archive, which is not supported; upload the file "
                                  "itself, or zip / gzip / bzip2 / xz it")
    return None


def _copy(stream: Any, dest: Path, shown: str, limits: SubmissionLimits, count_lines: bool = True
          ) -> tuple[int, int, int]:
    """Copy ``stream`` to ``dest`` in bounded chunks; (bytes, lines, crc32). Refuses past the limits."""
    counter = _counter(shown, limits, count_lines)
    crc = 0
    with open(dest, "wb") as out:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            counter.add(chunk)
            crc = zlib.crc32(chunk, crc)
            out.write(chunk)
    return counter.bytes, counter.lines, crc


def _counter(shown: str, limits: SubmissionLimits, count_lines: bool = True) -> ByteCounter:
    """The readers' `ByteCounter` under a submission's limits, refusing with messages for the
    participant (`SubmissionError`)."""
    def refuse(message: str) -> SubmissionError:
        if counter.tripped == "max_lines":
            return SubmissionError(f"{shown}: more than {limits.max_lines:,} lines (the limit for one submission; "
                                   "blank lines count); remove blank lines or submit a smaller run")
        return SubmissionError(f"{shown}: unpacks to more than {_size(limits.max_bytes)} (the limit for one "
                               "submission); submit a smaller run (fewer documents per query?)")

    counter = ByteCounter(shown, max_lines=limits.max_lines if count_lines else None, max_unpacked=limits.max_bytes,
                          refuse=refuse)
    return counter


def _decode_errors(shown: str, kind: str, exc: BaseException) -> SubmissionError:
    if isinstance(exc, _Truncated):
        return SubmissionError(f"{shown}: the {kind} data ends early (the file is truncated); upload it again")
    return SubmissionError(f"{shown}: damaged {kind} data ({exc}); the file cannot be read — compress it again "
                           "and upload it again")


# ------------------------------------------------------------------------------------------------
# folder and zip listings


def _folder_entries(folder: Path, limits: SubmissionLimits) -> list[tuple[str, Path]]:
    """The candidate files of the submission folder (name, path), refusing links, special files,
    folders, names that are not UTF-8 and too many entries — without following anything."""
    out = []
    raw_names = sorted(os.listdir(os.fsencode(folder)))
    if len(raw_names) > limits.max_files:
        raise SubmissionError(f"the submission holds {len(raw_names)} files (at most {limits.max_files}); "
                              "upload one run file")
    for raw in raw_names:
        name = _printable_name(raw, "the submission")
        if name.startswith(".") or name == "__MACOSX" or name.lower() in IGNORED_NAMES:
            continue
        path = folder / name
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise SubmissionError(f"{name}: a symbolic link; links are not read — upload the file itself")
        if stat.S_ISDIR(info.st_mode):
            raise SubmissionError(f"{name}/: a folder in the submission; zip the run file itself, not a folder "
                                  "holding it")
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionError(f"{name}: not a regular file; upload the run file itself")
        out.append((name, path))
    return out


def _one(files: list[tuple[str, Any]], where: str) -> tuple[str, Any]:
    if not files:
        raise SubmissionError(f"{where} is empty: upload one run file (or a zip holding one)")
    if len(files) > 1:
        names = ", ".join(n for n, _ in files[:10])
        raise SubmissionError(f"{where} holds {len(files)} files ({names}); upload exactly one run file")
    return files[0]


def _zip_member(archive: Path, shown: str, limits: SubmissionLimits) -> tuple[str, zipfile.ZipInfo]:
    """The one member of a zip to read, after checking every entry."""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
    except UnicodeDecodeError:
        raise SubmissionError(f"{shown}: a file name in the zip is not valid UTF-8; rename the file and zip "
                              "it again") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, struct.error) as exc:
        raise SubmissionError(f"{shown}: not a readable zip file ({exc}); the file may be damaged or "
                              "truncated — zip it again and upload it again") from None
    if len(infos) > limits.max_files:
        raise SubmissionError(f"{shown}: {len(infos)} entries in the zip (at most {limits.max_files}); "
                              "zip one run file")
    files = []
    for info in infos:
        if info.flag_bits & 0x800:
            name = info.filename
        else:  # no UTF-8 flag: zipfile read the name as cp437; most tools wrote UTF-8 anyway
            raw = info.filename.encode("cp437")
            name = _printable_name(raw, shown)
        parts = [p for p in name.replace("\\", "/").split("/") if p]
        if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            raise SubmissionError(f"{shown}: unsafe path {name!r} in the zip")
        if not parts or parts[0] == "__MACOSX" or any(p.startswith(".") for p in parts):
            continue
        # the file type is in the high bits of the external attributes when a Unix tool wrote the
        # entry (APPNOTE 4.4.2/4.4.15); others set none, and a folder has the DOS attribute 0x10
        mode = (info.external_attr >> 16) & 0o170000 if info.create_system == 3 else 0
        if stat.S_ISLNK(mode):
            raise SubmissionError(f"{shown}: {name} is a symbolic link; links are not read — zip the file itself")
        if info.is_dir() or stat.S_ISDIR(mode) or info.external_attr & 0x10 or len(parts) > 1:
            raise SubmissionError(f"{shown}: the zip holds a folder ({parts[0]}/); zip the run file itself, "
                                  "not a folder holding it")
        if mode and not stat.S_ISREG(mode):
            raise SubmissionError(f"{shown}: {name} is not a regular file")
        if parts[-1].lower() in IGNORED_NAMES:
            continue
        files.append((parts[-1], info))
    name, info = _one(files, f"{shown} (the zip)")
    if info.flag_bits & 0x1:
        raise SubmissionError(f"{shown}: {name} is encrypted (password-protected); zip it without a password")
    if info.compress_type not in _ZIP_METHODS:
        method = zipfile.compressor_names.get(info.compress_type, f"method {info.compress_type}")
        raise SubmissionError(f"{shown}: {name} is compressed with {method}, which is not supported; zip it "
                              "with the usual deflate method (or stored, bzip2, lzma)")
    return name, info


def _unzip(archive: Path, shown: str, dest_dir: Path, limits: SubmissionLimits) -> tuple[str, Path, int, int]:
    name, info = _zip_member(archive, shown, limits)
    member = f"{shown}/{name}"
    kind = {zipfile.ZIP_STORED: None, zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2-member",
            zipfile.ZIP_LZMA: "lzma-member"}[info.compress_type]
    dest = dest_dir / name
    with open(archive, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise SubmissionError(f"{member}: the zip is damaged (no entry where its directory says); zip it "
                                  "again and upload it again")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        start = info.header_offset + 30 + name_len + extra_len
        if start + info.compress_size > os.fstat(f.fileno()).st_size:
            raise SubmissionError(f"{member}: the zip is truncated (the entry's data is cut off); upload it again")
        raw = _Window(f, start, info.compress_size)
        stream: Any = raw if kind is None else _Decoder(raw, kind)
        try:
            size, lines, crc = _copy(stream, dest, member, limits)
        except SubmissionError:
            raise
        except (_Truncated, zlib.error, OSError, EOFError, lzma.LZMAError, ValueError, struct.error) as exc:
            raise _decode_errors(member, _ZIP_METHODS[info.compress_type], exc) from None
    if crc != info.CRC or size != info.file_size:
        what = "its checksum (CRC-32)" if size == info.file_size else (
            f"its size (the zip says {info.file_size} bytes, it holds {size})")
        raise SubmissionError(f"{member}: the zip is damaged: the data does not match {what}; zip the file again "
                              "and upload it again")
    return member, dest, size, lines


def _strip_suffix(name: str, kind: str) -> str:
    for suffix, k in _SUFFIX.items():
        if k == kind and name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def read_submission(res_dir: str | os.PathLike, scratch: str | os.PathLike,
                    limits: SubmissionLimits | None = None) -> Submission:
    """Unpack the one submission file of ``res_dir`` into ``scratch`` within ``limits``.

    Args:
        res_dir: the submission folder (Codabench's ``input/res``).
        scratch: an empty folder for the unpacked layers (the caller deletes it).
        limits: the bounds (default `SubmissionLimits`).

    Returns:
        the `Submission`; its ``path`` is a plain file named as the innermost file of
        the upload without its compression suffix (``run.jsonl.gz`` → ``run.jsonl``), so that
        format detection by name still works.

    Raises:
        SubmissionError: the submission is refused; the message says why, for the participant.
    """
    limits = limits or SubmissionLimits()
    folder = Path(res_dir)
    if not folder.is_dir():
        raise SubmissionError(f"no submission folder at {folder.name}")
    name, path = _one(_folder_entries(folder, limits), "the submission")
    scratch = Path(scratch)
    shown = name
    layers: list[str] = []
    size = path.stat().st_size
    lines: int | None = None
    current = path
    for depth in range(limits.max_depth + 1):
        kind = _sniff(current)
        if kind is None:
            break
        if depth == limits.max_depth:
            raise SubmissionError(f"{shown}: archives nested more than {limits.max_depth} deep; upload the run "
                                  "file itself or compressed once")
        layer_dir = scratch / f"layer{depth}"
        layer_dir.mkdir(parents=True, exist_ok=True)
        if kind == "zip":
            shown, nxt, size, lines = _unzip(current, shown, layer_dir, limits)
        else:
            inner = _strip_suffix(current.name, kind)
            if inner == current.name:
                inner = f"{current.name}.unpacked"
            nxt = layer_dir / inner
            try:
                with open(current, "rb") as f:
                    size, lines, _ = _copy(_Decoder(f, kind), nxt, shown, limits)
            except SubmissionError:
                raise
            except (_Truncated, zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                raise _decode_errors(shown, kind, exc) from None
        layers.append(kind)
        if current != path:
            current.unlink()
        current = nxt
    if lines is None:  # a plain upload: check it the same way, without copying
        if size > limits.max_bytes:
            raise SubmissionError(f"{shown}: {_size(size)}, more than {_size(limits.max_bytes)} (the limit for "
                                  "one submission)")
        counter = _counter(shown, limits)
        with open(current, "rb") as f:
            while chunk := f.read(_CHUNK):
                counter.add(chunk)
        lines = counter.lines
    return Submission(current, shown, size, lines, layers)


# ------------------------------------------------------------------------------------------------
# time and memory


def _child(conn: Any, fn: Callable[..., Any], args: tuple, max_memory: int | None, reraise: bool = False) -> None:
    try:
        if max_memory is not None:
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
            if soft == resource.RLIM_INFINITY or soft > limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        result = ("ok", fn(*args))
    except MemoryError:
        result = ("memory", None)
    except BaseException as exc:  # noqa: BLE001  (reported to the parent, which decides)
        result = ("error", exc if reraise else f"{type(exc).__name__}: {exc}")
    try:
        conn.send(result)
    except MemoryError:
        conn.send(("memory", None))
    except Exception:  # noqa: BLE001  (an exception that does not pickle: its text)
        conn.send(("error", f"{type(result[1]).__name__}: {result[1]}"))
    conn.close()


def run_bounded(fn: Callable[..., Any], args: tuple = (), *, max_seconds: float | None = None,
                max_memory: int | None = None, reraise: bool = False) -> Any:
    """``fn(*args)`` in a child process (POSIX ``fork``) stopped after ``max_seconds`` and limited
    to ``max_memory`` bytes of address space; its return value must be picklable.

    Without a limit, or where ``fork`` does not exist, ``fn`` runs in this process. An exception
    raised by ``fn`` becomes a ``BoundedRunError`` (``crash``) or, with ``reraise=True``, is raised
    again here as it was (when it can be pickled), so a caller keeps its exit codes.

    Raises:
        BoundedRunError: the time or memory limit was reached, or the child died (``reason``).
    """
    import multiprocessing as mp

    if (max_seconds is None and max_memory is None) or "fork" not in mp.get_all_start_methods():
        return fn(*args)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, max_memory, reraise), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(max_seconds):
            proc.kill()
            proc.join()
            raise BoundedRunError("time", f"scoring stopped after {max_seconds:g} s (the time limit for one "
                                          "submission)")
        try:
            status, value = parent.recv()
        except (EOFError, OSError):
            proc.join()
            code = proc.exitcode
            raise BoundedRunError("crash", f"scoring stopped: the scoring process ended unexpectedly (exit code "
                                           f"{code}), most likely out of memory") from None
    finally:
        parent.close()
        if proc.is_alive():
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    if status == "memory":
        limit = f" ({_size(max_memory)})" if max_memory else ""
        raise BoundedRunError("memory", f"scoring ran out of memory{limit}; submit a smaller run")
    if status == "error":
        if isinstance(value, BaseException):
            raise value
        raise BoundedRunError("crash", str(value))
    return value
