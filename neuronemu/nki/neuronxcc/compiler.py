"""``neuronxcc.nki.compiler``: NKI 0.1's compiler directives. The decorators change nothing
here (neuronemu traces the kernel as written: no compiler passes to skip), and the allocation
requests (``sbuf.mod_alloc(...)``, ``psum.auto_alloc()``) are the memory they name, with each
tile placed by neuronemu's own allocator (by live range, docs/nki.md), whose capacity checks
still apply."""

from __future__ import annotations

from neuronemu.nki import language as _nl


def _decorator(func=None, **options):
    """A directive that leaves the kernel as it is, written ``@d`` or ``@d(...)``."""
    if func is None or not callable(func):
        return lambda f: f
    return func


skip_middle_end_transformations = _decorator
enable_stack_allocator = _decorator
force_auto_alloc = _decorator
no_reorder = _nl.no_reorder   # (program order: what neuronemu runs anyway)


class _Memory:
    """``sbuf`` / ``psum``: its allocation requests are that memory, placed here."""

    def __init__(self, buffer) -> None:
        self.buffer = buffer

    def mod_alloc(self, *args, **kwargs):
        return self.buffer

    def auto_alloc(self, *args, **kwargs):
        return self.buffer

    def alloc(self, *args, **kwargs):
        return self.buffer


sbuf = _Memory(_nl.sbuf)
psum = _Memory(_nl.psum)
