"""neuronemu.compiled.frontend: numba's front end without its repeated work, answering as
numba's own code does. The oracles are numba's definitions written out here (a flag's value is
its property's; two flags are equal when all their values are) and the IR numba copies."""

from __future__ import annotations

import copy
import types as pytypes

import numpy as np
import pytest
from numba.core import compiler, errors, inline_closurecall, ir, targetconfig, types
from numba.core.compiler import Flags
from numba.core.types import functions

from neuronemu.compiled import frontend
from neuronemu.compiled.jit import jit


def test_installed_on_this_numba():
    # jit installs it; on a numba whose code differs it would refuse and compiling stay as slow
    assert frontend.install()
    assert functions.BaseFunction.get_call_type is frontend._remembered_get_call_type
    assert isinstance(inline_closurecall.copy, frontend._SharedMemoCopy)


def _flags(**values) -> Flags:
    f = Flags()
    for name, value in values.items():
        setattr(f, name, value)
    return f


FLAG_SETS = [{}, {"boundscheck": True}, {"error_model": "numpy"},
             {"error_model": "numpy", "nrt": True}, {"boundscheck": False}]


@pytest.mark.parametrize("values", FLAG_SETS)
def test_flag_values_are_the_properties(values):
    f = _flags(**values)
    assert f.values() == {name: getattr(f, name) for name in Flags.options}
    assert f.values()["boundscheck"] == values.get("boundscheck", False)


def test_flags_equal_exactly_when_their_values_are():
    made = [_flags(**v) for v in FLAG_SETS] + [_flags(**v) for v in FLAG_SETS]
    for a in made:
        for b in made:
            by_value = all(getattr(a, n) == getattr(b, n) for n in Flags.options)
            assert (a == b) is by_value
            if a == b:
                assert hash(a) == hash(b)
    # set to its default is equal to not set (numba compares values, not what was set)
    assert _flags(boundscheck=False) == Flags()
    assert Flags() != 3 and (Flags() == 3) is False


def test_a_flags_key_holds_everything_set():
    assert frontend._flags_key(None) is None
    assert frontend._flags_key(_flags(error_model="numpy")) != frontend._flags_key(Flags())
    auto = _flags(auto_parallel=True)   # ParallelOptions: unhashable, keyed by its repr
    assert frontend._flags_key(auto) != frontend._flags_key(Flags())
    hash(frontend._flags_key(auto))


def test_a_typed_call_is_remembered_and_a_failure_is_not(monkeypatch):
    asked = []
    numba_own = frontend._original_get_call_type

    def spy(self, context, args, kws):
        asked.append(self)
        return numba_own(self, context, args, kws)

    monkeypatch.setattr(frontend, "_original_get_call_type", spy)

    @jit(cache=False)   # compiled here, not loaded from an earlier run's cache
    def first(a):
        return np.empty(a.shape[0] + 7, dtype=np.float32)

    @jit(cache=False)
    def second(a):
        return np.empty(a.shape[0] + 7, dtype=np.float32)

    assert first(np.zeros(3)).shape == (10,)
    assert asked   # numba searched the templates of each call
    asked.clear()
    assert second(np.zeros(3)).shape == (10,)
    assert asked == []   # the same calls typed again: every answer remembered

    def bad(a):
        return np.empty(a, dtype=np.float32)   # a float shape: no template takes it

    for _ in range(2):   # two functions: numba's dispatcher remembers its own failures
        asked.clear()
        with pytest.raises(errors.TypingError):
            jit(cache=False)(bad)(1.5)
        assert asked   # a failure is searched again


@jit(inline="always")
def _branchy(x, k):
    # several blocks and variables, with names the caller uses too
    total = 0.0
    for i in range(k):
        if x[i] > 0:
            total += x[i]
        else:
            total -= x[i] * 2.0
    return total


@jit
def _inlines_twice(x):
    total = _branchy(x, x.shape[0])
    i = 3
    return total + _branchy(x, i)


def test_inlined_code_computes_what_python_does():
    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0])
    assert _inlines_twice(x) == _inlines_twice.py_func(x) == 21.0 + 8.0


def _copy_ir(the_ir):
    # numba's copy_ir (InlineWorker.inline_ir), verbatim in what it calls
    kernel_copy = the_ir.copy()
    kernel_copy.blocks = {}
    for block_label in the_ir.blocks:
        new_block = frontend_copy.deepcopy(the_ir.blocks[block_label])
        kernel_copy.blocks[block_label] = new_block
    return kernel_copy


frontend_copy = frontend._SharedMemoCopy(_copy_ir.__code__)


def _ir_of(fn):
    return compiler.run_frontend(fn.py_func)


def _kwargs_and_tuples(x, k):
    pair = (x[0], k)
    out = np.zeros(shape=(k, 2), dtype=np.float64)
    for i in range(k):
        out[i, 0], out[i, 1] = pair[0] * i, {"a": 1}["a"]
    return out


@pytest.mark.parametrize("fn", [_branchy.py_func, _inlines_twice.py_func, _kwargs_and_tuples])
def test_variables_listed_as_numba_lists_them(fn):
    statements = 0
    for block in compiler.run_frontend(fn).blocks.values():
        for stmt in block.body:
            expected = frontend._original_rec_list_vars(stmt, stmt.__dict__)
            assert frontend._fast_rec_list_vars(stmt, stmt.__dict__) == expected
            assert stmt.list_vars() == expected or not isinstance(stmt, ir.Stmt)
            statements += 1
    assert statements > 10


def test_an_inlined_function_is_read_once_per_context(monkeypatch):
    read = []
    numba_own = frontend._original_untyped_passes

    def spy(self, func, enable_ssa=False):
        read.append(func)
        return numba_own(self, func, enable_ssa)

    monkeypatch.setattr(frontend, "_original_untyped_passes", spy)

    @jit(inline="always", cache=False)
    def scaled(x, k):
        return x * k + 1.0

    def caller(x):
        return scaled(x, 2.0) + scaled(x, 3.0)

    first = jit(cache=False)(caller)
    assert first(1.0) == 3.0 + 4.0
    assert read == [scaled.py_func]   # two call sites, read once
    assert jit(cache=False)(caller)(2.0) == 5.0 + 7.0
    assert read == [scaled.py_func]   # another caller: still once


def test_a_copied_ir_is_the_same_ir_with_one_scope():
    original = _ir_of(_branchy)
    assert len(original.blocks) > 3
    copied = _copy_ir(original)
    assert copied.dump_to_string() == original.dump_to_string()
    scopes = {id(b.scope) for b in copied.blocks.values()}
    assert len(scopes) == 1 and id(original.blocks[0].scope) not in scopes
    # every variable the copy names lives in its one scope, none in the original's
    scope = next(iter(copied.blocks.values())).scope
    for block in copied.blocks.values():
        for assign in block.find_insts(ir.Assign):
            assert assign.target.scope is scope


def test_each_copy_is_its_own():
    original = _ir_of(_branchy)
    one, two = _copy_ir(original), _copy_ir(original)
    assert one.blocks[0] is not two.blocks[0]
    assert one.blocks[0].scope is not two.blocks[0].scope
    length = len(original.blocks[0].body)
    one.blocks[0].body.pop()
    assert len(two.blocks[0].body) == len(original.blocks[0].body) == length


def test_deepcopy_elsewhere_is_the_standard_one():
    shim = inline_closurecall.copy
    value = {"a": [1, 2]}
    one, two = shim.deepcopy(value), shim.deepcopy(value)
    assert one == value and one is not two and one["a"] is not two["a"]
    assert shim.copy([1]) == [1] and shim.Error is copy.Error
    assert isinstance(shim, pytypes.ModuleType)


def test_error_messages_are_plain_text():
    scheme = errors.termcolor()
    assert scheme.errmsg("message") == "message"
    assert targetconfig.TargetConfig.__hash__ is frontend._fast_hash


MEMINFO_TYPES = [
    types.float64,
    types.float32[:, ::1],
    types.UniTuple(types.int64[::1], 3),
    types.Tuple((types.int64, types.float32[:, :], types.UniTuple(types.intp, 2))),
    types.Tuple((types.UniTuple(types.uint8[:, ::1], 3), types.float64[::1])),
    types.Optional(types.float64[::1]),
    types.ListType(types.int64),
    types.UniTuple(types.intp, 4),
]


@pytest.mark.parametrize("ty", MEMINFO_TYPES, ids=str)
def test_reference_counted_members_are_found_as_numba_finds_them(ty):
    import numba.typed  # noqa: F401  (registers the typed containers' models)
    from llvmlite import ir as llvm
    from numba.core.registry import cpu_target

    # a context of its own: the base context's nrt, once read, would stay disabled for every
    # later compile in the process (numba caches it on the context, and its compiles copy it)
    context = cpu_target.target_context.subtarget(enable_nrt=True)
    fnty = llvm.FunctionType(llvm.VoidType(), [context.get_value_type(ty)])
    module = llvm.Module()
    function = llvm.Function(module, fnty, "f")
    builder = llvm.IRBuilder(function.append_basic_block())
    value = function.args[0]
    expected = frontend._original_get_meminfos(context.nrt, builder, ty, value)
    found = frontend._fast_get_meminfos(context.nrt, builder, ty, value)
    assert [t for t, _ in found] == [t for t, _ in expected]
    assert [_path(m) for _, m in found] == [_path(m) for _, m in expected]


def _path(value) -> list:
    # how a meminfo is reached from the argument: each step's opcode and indices
    steps = []
    while hasattr(value, "opname"):
        steps.append((value.opname, tuple(getattr(value, "indices", ()))))
        value = value.operands[0]
    return steps
