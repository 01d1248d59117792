"""How a process that evaluates large files hands memory back to the operating system.

An evaluation allocates and frees arrays of every size, one after the other: the file's bytes,
the parsed columns, the kernels' per-row arrays. Two allocator behaviours then keep memory that
is no longer used counted in the process's resident size, so that its peak grows with every step
rather than with the largest one:

* glibc's ``malloc`` raises its mmap threshold each time a large block is freed (up to 32 MiB on
  64-bit Linux, see ``mallopt(3)``, ``M_MMAP_THRESHOLD``): later arrays of a few megabytes are then
  carved from the heap, and a heap shrinks only from its top;
* pyarrow's default pool (mimalloc or jemalloc) keeps freed segments for reuse by arrow only
  (``pyarrow.MemoryPool.release_unused``).

`lean_allocators` sets a fixed mmap threshold (every large array is its own mapping, returned
when freed) and makes arrow allocate through the same ``malloc``
(``pyarrow.system_memory_pool``), so that what one step frees is what the next one gets. The
command line calls it once at start-up; a Python program may call it too. Values and results are
unchanged: only where the bytes live changes.

Small blocks (below the mmap threshold) still come from ``malloc``'s heaps, one per thread that
allocates (arrow's reader threads): once a parser's many small buffers are freed, the free pages
between the blocks still in use stay in the process. `trim_heap` hands them back
(``malloc_trim(3)``); the readers call it after a large run is parsed (15 MB for a
1,000,000-line run).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

__all__ = ["lean_allocators", "trim_heap", "MMAP_THRESHOLD"]

#: arrays of this many bytes or more get their own mapping (glibc's own initial value, 128 KiB,
#: made fixed instead of growing)
MMAP_THRESHOLD = 128 * 1024

_M_MMAP_THRESHOLD = -3  # glibc <malloc.h>
_done: dict[str, bool] = {}
_libc: list = []


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (on Linux), else None; looked up once."""
    if not _libc:
        lib = None
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            except OSError:
                lib = None
        _libc.append(lib)
    return _libc[0]


def trim_heap() -> bool:
    """Return the free pages of ``malloc``'s heaps (every thread's) to the operating system:
    glibc's ``malloc_trim(0)``; nothing elsewhere. Returns whether memory was released. Costs a
    walk over the heaps (about a millisecond); values never change."""
    lib = _glibc()
    if lib is None:
        return False
    try:
        return bool(lib.malloc_trim(0))
    except AttributeError:
        return False


def lean_allocators(mmap_threshold: int = MMAP_THRESHOLD, arrow_pool: bool = True) -> dict[str, bool]:
    """Make this process return freed memory to the operating system (see the module doc).

    Args:
        mmap_threshold: glibc's ``M_MMAP_THRESHOLD`` in bytes (fixed: it no longer grows); 0
            leaves ``malloc`` as it is. Ignored where the C library is not glibc.
        arrow_pool: use `pyarrow.system_memory_pool` (``malloc``) as arrow's default pool.

    Returns:
        ``{"malloc": changed, "arrow": changed}``: what was set (once per process; a second
        call returns the first call's answer).
    """
    if _done:
        return dict(_done)
    malloc = False
    libc = _glibc() if mmap_threshold else None
    if libc is not None:
        try:
            malloc = bool(libc.mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold)))
        except AttributeError:
            malloc = False
    arrow = False
    import pyarrow as pa  # heavy: imported when the allocators are set, not with this module

    if arrow_pool and pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
        arrow = True
    _done.update(malloc=malloc, arrow=arrow)
    return dict(_done)
