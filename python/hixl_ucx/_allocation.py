# SPDX-License-Identifier: BSD-3-Clause
"""Memory from alloc_mem: an address that is also a view factory.

``Hixl.alloc_mem`` used to give the address as an int, and programs use
it as one (arithmetic, ctypes calls, JSON).  :class:`Allocation` is still
that int, so they keep working; it adds the memory as Python sees memory:

* ``memoryview(a)`` (Python 3.12+, the buffer protocol from Python) or
  ``a.memoryview()`` (every version);
* ``a.numpy(dtype, shape)`` and ``a.torch(dtype, shape)``: views of the same
  bytes; numpy and torch are imported only when asked for.

Every view stays tied to the allocation: deregister_mem(handle) and
finalize() release them first and refuse (BufferError, nothing freed)
while a numpy array or tensor made from one is still alive, as
``mmap.close()`` refuses with exported buffers.  After deregistration a
new view, ``.addr`` or ``.nbytes`` raises ValueError instead of handing
out freed memory.  The int value itself is a raw address, like any
other: the caller's to stop using.
"""

import ctypes
import gc
import weakref
from typing import Any, List, Optional, Sequence


class Allocation(int):
    """An address from alloc_mem (an int), with views of its bytes."""

    def __new__(cls, addr: int, nbytes: int, handle: int) -> "Allocation":
        self = super().__new__(cls, addr)
        self._nbytes = nbytes
        self._handle = handle
        self._views: List[memoryview] = []
        # every view of the memory (memoryview, numpy, torch, slices of
        # them) keeps its ctypes array alive: a live weakref is a live view
        self._cells: List[Any] = []
        self._released = False
        return self

    def _check(self) -> None:
        if self._released:
            raise ValueError("memory %#x (+%d) was deregistered or its "
                             "engine finalized: it is freed" % (
                                 int(self), self._nbytes))

    @property
    def addr(self) -> int:
        """The address, as a plain int."""
        self._check()
        return int(self)

    @property
    def nbytes(self) -> int:
        self._check()
        return self._nbytes

    @property
    def handle(self) -> int:
        return self._handle

    @property
    def released(self) -> bool:
        return self._released

    def __len__(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return "Allocation(addr=%#x, nbytes=%d%s)" % (
            int(self), self._nbytes, ", released" if self._released else "")

    def memoryview(self) -> memoryview:
        """A writable 'B' memoryview of the whole allocation."""
        self._check()
        cells = (ctypes.c_char * self._nbytes).from_address(int(self))
        self._cells = [r for r in self._cells if r() is not None]
        self._cells.append(weakref.ref(cells))
        view = memoryview(cells).cast("B")
        self._views.append(view)
        return view

    # PEP 688 (Python 3.12+): memoryview(a), numpy.frombuffer(a), ...
    def __buffer__(self, flags: int) -> memoryview:
        return self.memoryview()

    def __release_buffer__(self, view: memoryview) -> None:
        view.release()

    def numpy(self, dtype: Any = None, shape: Optional[Sequence[int]] = None):
        """A numpy array over the bytes (uint8 by default; shape: any that
        fits, the whole allocation by default)."""
        import numpy  # only when asked for
        arr = numpy.frombuffer(self.memoryview(),
                               dtype=numpy.uint8 if dtype is None else dtype)
        return arr if shape is None else arr[:_count(shape)].reshape(shape)

    def torch(self, dtype: Any = None, shape: Optional[Sequence[int]] = None):
        """A CPU tensor over the bytes (torch.uint8 by default)."""
        import torch  # only when asked for
        dtype = torch.uint8 if dtype is None else dtype
        esize = torch.empty((), dtype=dtype).element_size()
        n = self.nbytes // esize if shape is None else _count(shape)
        flat = torch.from_numpy(self.numpy()[:n * esize]).view(dtype)
        return flat if shape is None else flat.reshape(tuple(shape))

    def _close_views(self) -> None:
        """Release the memoryviews handed out, then BufferError if anything
        still reaches the memory (a numpy array, a tensor, a slice)."""
        for view in self._views:
            try:
                view.release()
            except BufferError:
                pass   # exported: its ctypes array stays alive, see below
        self._views = []
        alive = [r for r in self._cells if r() is not None]
        if alive:
            gc.collect()   # views caught in reference cycles
            alive = [r for r in alive if r() is not None]
        self._cells = alive
        if alive:
            raise BufferError(
                "memory %#x (+%d): %d view(s) of it are still alive (a "
                "numpy array, tensor or memoryview made from it); drop them "
                "before deregistering or finalizing" % (
                    int(self), self._nbytes, len(alive)))

    def _mark_released(self) -> None:
        self._released = True


def _count(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def close_all(allocs: Any) -> None:
    """_close_views on every allocation, raising after trying them all."""
    errors = []
    for a in list(allocs):
        try:
            a._close_views()
        except BufferError as exc:
            errors.append(str(exc))
    if errors:
        raise BufferError("; ".join(errors))
