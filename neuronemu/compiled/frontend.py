"""Repeated work in numba's Python front end, removed without changing what it compiles.

Most of the time a first run spends compiling is numba's own Python (typing, inlining,
lowering), not LLVM's. Profiled in the first run of ``programs/examples/vector_add.s`` from an
empty cache (numba 0.68), these bookkeeping steps cost far more than their work:

- **Typing a call repeats the search for its signature.** numba types every call of a function
  (``getitem``, ``np.empty``, ``max``...) by trying each of its templates in turn, most of which
  fail by raising an exception whose message is formatted (with every signature the template
  lists) and coloured, and it does so each time: 6,738 calls in vector_add's first run, for 445
  distinct (function, argument types) pairs. ``get_call_type`` here remembers each successful
  answer, keyed by everything numba's answer depends on: the function type (its templates), the
  typing context, the argument types, the target on the call stack and the compile flags (an
  ``@overload`` compiles its implementation for the flags). A failure is not remembered.
- **Looking up an overload compares compile flags option by option.** Each template lookup keys
  a cache with the current ``Flags``, whose hash and equality built a dict of its 22 options
  through one property each, three times per lookup. ``values`` here reads the same table directly,
  ``__eq__`` is true at once for one object or equal explicit settings, and ``__hash__`` returns
  what numba's returns (the hash of the sorted option *names*: a constant per class).
- **Inlining copies the callee's variable table once per block.** numba inlines an
  ``inline="always"`` function by deep-copying its IR block by block, each with a fresh memo, so
  each block's copy re-copies the function's scope (all its variables): blocks x variables.
  Copying the blocks with one memo copies the scope once; the copy is the same IR, its blocks
  sharing one scope as the original's do (numba's inliner requires that they have one scope).
  And it translated and ran the untyped passes over the function again at every call site:
  the IR is remembered per function, context classes, flags, locals and the identity of the
  globals it names (the inliner copies it before changing it).
- **Listing a statement's variables** built a list per level of its recursion over the
  statement's fields (4.5 million calls in flash attention's first run, from the post-processing
  after each pass): one list, numba's order.
- **Every reference count searched the whole value.** Emitting an incref or decref, numba
  extracts every member of the value and searches it for meminfos (an array's shape, strides,
  sizes and data pointer; every member of a tuple of arrays); members whose type holds none
  (worked out once per type, by numba's own traversal) are skipped.
- **Error messages are marked up through colorama** when it is installed (another package brings
  it here): set up and torn down for each message, thousands of times, for messages caught and
  dropped. The scheme's markup is the message itself here (numba's switch for it,
  ``NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING``, is read when numba is imported, which may be
  before neuronemu is): numba's errors in a process that compiles neuronemu are plain text.

Each replaces numba internals; tests/exec/test_frontend.py checks them against the code they
replace, and ``install`` does nothing if that code is not what they were written against.
"""

from __future__ import annotations

import copy
import sys
import types as pytypes

from numba.core import errors, inline_closurecall, ir, targetconfig
from numba.core.runtime import context as nrt_context
from numba.core.target_extension import get_local_target
from numba.core.types import functions

TargetConfig = targetconfig.TargetConfig
_original_get_call_type = functions.BaseFunction.get_call_type
_original_untyped_passes = inline_closurecall.InlineWorker.run_untyped_passes
_original_rec_list_vars = ir.Inst._rec_list_vars
_original_get_meminfos = nrt_context.NRTContext.get_meminfos
_installed = False


# ----------------------------------------------------------------------------- compile flags

def _fast_values(self) -> dict:
    # what numba's property getters return: the value set, else the option's default
    values = self._values
    return {name: values.get(name, option.default) for name, option in self.options.items()}


def _fast_eq(self, other):
    if self is other:
        return True
    if not isinstance(other, TargetConfig):
        return NotImplemented
    if type(self) is type(other) and self._values == other._values:
        return True
    return _fast_values(self) == _fast_values(other)


def _fast_hash(self) -> int:
    # numba hashes tuple(sorted(self.values())): the sorted option names, fixed per class
    cls = type(self)
    cached = cls.__dict__.get("_neuronemu_hash")
    if cached is None:
        cached = hash(tuple(sorted(cls.options)))
        cls._neuronemu_hash = cached
    return cached


# ----------------------------------------------------------------------------- typing calls

_signatures: dict = {}


def _flags_key(flags) -> tuple | None:
    if flags is None:
        return None
    items = []
    for name, value in sorted(flags._values.items()):
        try:
            hash(value)
        except TypeError:
            value = repr(value)   # ParallelOptions: a plain record, its repr says all of it
        items.append((name, value))
    return (type(flags), tuple(items))


def _remembered_get_call_type(self, context, args, kws):
    key = (self, context, tuple(args), tuple(sorted(kws.items())),
           get_local_target(context), _flags_key(targetconfig.ConfigStack.top_or_none()))
    try:
        hit = _signatures.get(key)
    except TypeError:   # an unhashable argument type: ask numba
        return _original_get_call_type(self, context, args, kws)
    if hit is not None:
        return hit
    sig = _original_get_call_type(self, context, args, kws)
    if sig is not None:
        _signatures[key] = sig
    return sig


# ----------------------------------------------------------------------------- inlining

class _SharedMemoCopy(pytypes.ModuleType):
    """Stands for the ``copy`` module inside numba.core.inline_closurecall: ``deepcopy`` called
    by the inliner's ``copy_ir`` for one block after another of one IR shares one memo among
    them; any other call is the standard library's."""

    copy = staticmethod(copy.copy)

    def __init__(self, copy_ir_code):
        super().__init__("copy")
        self._copy_ir_code = copy_ir_code
        self._frame = None
        self._memo: dict = {}

    def deepcopy(self, x, memo=None, _nil=[]):  # noqa: B006  (copy.deepcopy's own signature)
        if memo is None:
            frame = sys._getframe(1)
            if frame.f_code is self._copy_ir_code:
                if frame is not self._frame:   # a new copy_ir call: a new memo
                    self._frame, self._memo = frame, {}
                return copy.deepcopy(x, self._memo)
        return copy.deepcopy(x, memo, _nil)

    def __getattr__(self, name):
        return getattr(copy, name)


def _copy_ir_code(inline_ir):
    for const in inline_ir.__code__.co_consts:
        if isinstance(const, pytypes.CodeType) and const.co_name == "copy_ir":
            return const
    return None


_untyped: dict = {}


def _globals_key(func) -> tuple:
    # the identity of each global the function names: IR holds their values as read
    found = func.__globals__
    return tuple(id(found[name]) if name in found else None for name in func.__code__.co_names)


def _remembered_untyped_passes(self, func, enable_ssa=False):
    # numba sets the caller's flag as a side effect, which the rest of its compile sees
    self.flags.enable_ssa = enable_ssa
    if enable_ssa or func.__closure__ is not None:
        return _original_untyped_passes(self, func, enable_ssa)
    try:
        key = (func, self.typingctx, type(self.targetctx), type(self.pipeline), _flags_key(self.flags),
               tuple(sorted(self.locals.items())), _globals_key(func))
        hit = _untyped.get(key)
    except TypeError:   # something unhashable: ask numba
        return _original_untyped_passes(self, func, enable_ssa)
    if hit is None:
        hit = _untyped[key] = _original_untyped_passes(self, func, enable_ssa)
    return hit


# ----------------------------------------------------------------------------- IR analysis

def _collect_vars(val, out: list) -> None:
    kind = type(val)
    if kind is str or kind is int or kind is ir.Loc:
        return
    if isinstance(val, ir.Var):
        out.append(val)
    elif isinstance(val, ir.Inst):
        out.extend(val.list_vars())
    elif isinstance(val, (list, tuple)):
        for v in val:
            _collect_vars(v, out)
    elif isinstance(val, dict):
        for v in val.values():
            _collect_vars(v, out)


def _fast_rec_list_vars(self, val) -> list:
    # numba's Inst._rec_list_vars, in one list rather than one per level
    out: list = []
    _collect_vars(val, out)
    return out


# ----------------------------------------------------------------------------- reference counts

_meminfo_free: dict = {}


def _holds_no_meminfo(dmm, builder, ty) -> bool:
    # what get_meminfos would find in a value of type ty: nothing, if neither its model nor
    # any member's (through the same traversal) has a meminfo
    key = (id(dmm), ty)
    free = _meminfo_free.get(key)
    if free is None:
        _meminfo_free[key] = False   # while it is worked out: a type may contain itself
        model = dmm[ty]
        free = not model.has_nrt_meminfo() and all(
            _holds_no_meminfo(dmm, builder, member) for member, _ in model.traverse(builder))
        _meminfo_free[key] = free
    return free


def _fast_get_meminfos(self, builder, ty, val):
    # numba's get_meminfos, without extracting (and searching) the members that hold none: an
    # array's shape, strides, sizes and data pointer, at every reference count it emits
    dmm = self._context.data_model_manager
    datamodel = dmm[ty]
    meminfos = []
    if datamodel.has_nrt_meminfo():
        meminfos.append((ty, datamodel.get_nrt_meminfo(builder, val)))
    for member, getter in datamodel.traverse(builder):
        if not _holds_no_meminfo(dmm, builder, member):
            meminfos.extend(self.get_meminfos(builder, member, getter(val)))
    return meminfos


# ----------------------------------------------------------------------------- markup

def _plain(msg, color=None, style=None):
    return msg


# ----------------------------------------------------------------------------- installing

def _as_expected(copy_ir_code) -> bool:
    """Whether numba's code is what the replacements were written against."""
    get_call_type = _original_get_call_type.__code__
    _rec_list_vars = _original_rec_list_vars.__code__
    return (
        copy_ir_code is not None
        and "deepcopy" in copy_ir_code.co_names
        and inline_closurecall.copy is copy
        and TargetConfig.values.__code__.co_names == ("options",)
        and "values" in TargetConfig.__hash__.__code__.co_names
        and "values" in TargetConfig.__eq__.__code__.co_names
        and {"templates", "apply", "_impl_keys"} <= set(get_call_type.co_names)
        and "enable_ssa" in _original_untyped_passes.__code__.co_names
        and {"traverse", "has_nrt_meminfo", "get_nrt_meminfo", "get_meminfos"}
        <= set(_original_get_meminfos.__code__.co_names)
        and _rec_list_vars.co_names == ("isinstance", "Var", "Inst", "list_vars", "list",
                                        "tuple", "extend", "_rec_list_vars", "dict", "values")
    )


def install() -> bool:
    """Install the replacements once; returns whether they are in place."""
    global _installed
    if _installed:
        return True
    code = _copy_ir_code(inline_closurecall.InlineWorker.inline_ir)
    if not _as_expected(code):
        return False
    TargetConfig.values = _fast_values
    TargetConfig.__eq__ = _fast_eq
    TargetConfig.__hash__ = _fast_hash
    functions.BaseFunction.get_call_type = _remembered_get_call_type
    inline_closurecall.InlineWorker.run_untyped_passes = _remembered_untyped_passes
    ir.Inst._rec_list_vars = _fast_rec_list_vars
    nrt_context.NRTContext.get_meminfos = _fast_get_meminfos
    inline_closurecall.copy = _SharedMemoCopy(code)
    scheme = errors.termcolor()   # one instance, which numba's modules keep
    if hasattr(scheme, "_markup"):
        scheme._markup = _plain
    _installed = True
    return True
