"""Traced kernels reach the assembler as values (neuronemu/asm/direct.py), not as text to parse
again. The text path is the oracle: for the kernels of the other NKI test modules, the program
assembled from the ops must be the one assembled from the generated ``.s`` (the same lowered
rows, instruction locations and texts), and an op the direct path refuses must be reported as
the text path reports it."""

from __future__ import annotations

import contextlib
import inspect

import numpy as np
import pytest
import test_nki_collectives
import test_nki_control
import test_nki_isa_surface
import test_nki_kernels
import test_nki_language_surface
import test_nki_ops

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import api, nki
from neuronemu.asm import direct
from neuronemu.errors import AsmError
from neuronemu.nki import KernelTrace


def _same_program(a, b) -> None:
    assert np.array_equal(a.instrs, b.instrs)
    assert np.array_equal(a.ops, b.ops)
    assert np.array_equal(a.imms, b.imms, equal_nan=True)
    assert a.labels == b.labels
    assert len(a.instructions) == len(b.instructions)
    for x, y in zip(a.instructions, b.instructions):
        assert x.definition is y.definition
        assert (x.location.line, x.location.column) == (y.location.line, y.location.column)
        assert x.text == y.text


@pytest.fixture
def both_paths(monkeypatch):
    """Every trace assembled both ways and compared: the traces seen, and the comparisons
    that failed (an AssertionError each)."""
    seen = []
    assemble = KernelTrace.assemble

    def compared(trace):
        program = assemble(trace)
        try:
            _same_program(program, api.assemble(trace.asm, filename=trace.asm_name,
                                                target=trace.target))
            seen.append(trace)
        except AssertionError as error:   # (the case may catch it: kept for the test)
            seen.append(error)
            raise
        return program

    monkeypatch.setattr(KernelTrace, "assemble", compared)
    return seen


MODULES = (test_nki_isa_surface, test_nki_control, test_nki_kernels, test_nki_language_surface,
           test_nki_ops, test_nki_collectives)


def _cases(module):
    """The test functions (and ``ex_`` exercises) of ``module`` that a plain call runs, with
    their arguments: parametrized ones with their first values, none that needs a fixture."""
    out = []
    for name, fn in vars(module).items():
        if not (name.startswith(("ex_", "test_")) and inspect.isfunction(fn)):
            continue
        first = {}
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize":
                names = [n.strip() for n in mark.args[0].split(",")] \
                    if isinstance(mark.args[0], str) else list(mark.args[0])
                value = mark.args[1][0]
                value = getattr(value, "values", value)   # pytest.param(...)
                values = value if len(names) > 1 else (value,)
                first.update(zip(names, values))
        params = inspect.signature(fn).parameters
        if set(params) <= set(first):
            out.append((fn, {k: first[k] for k in params}))
    return out


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__[9:])
def test_direct_path_assembles_what_the_text_path_does(module, both_paths):
    for fn, kwargs in _cases(module):
        with contextlib.suppress(Exception):   # (the case's own expectations: its module's)
            fn(**kwargs)
    differ = [e for e in both_paths if isinstance(e, AssertionError)]
    assert not differ, differ[0]
    assert len(both_paths) >= 5   # (each module assembles several kernels)


def _copy_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    for i in range(x.shape[0] // 128):
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out


def test_most_ops_never_become_text(monkeypatch):
    """The ops of an unrolled kernel are resolved from their values: no line of the generated
    text is written, let alone parsed (only the one each plan lowers first is)."""
    rendered = []
    real = direct.GeneratedSource.line

    def line(self, lineno):
        rendered.append(lineno)
        return real(self, lineno)

    monkeypatch.setattr(direct.GeneratedSource, "line", line)
    x = np.random.default_rng(0).standard_normal((64 * 128, 64)).astype(np.float32)
    trace = nki.trace(_copy_kernel, x)
    program = trace.assemble()
    header = trace.header.count("\n")
    ops_rendered = {n for n in rendered if n > header}
    # the first op of each plan: (a load or a store) x 16 DMA queues, of 128 ops
    assert len(ops_rendered) <= 32 < len(program.raw_instructions()) == 128
    run = nki.run(_copy_kernel, x)
    np.testing.assert_array_equal(run.outputs, x)


def test_an_op_the_assembler_refuses_is_reported_at_its_text(monkeypatch):
    """An op that fails a check goes the text path, which words the error and its columns."""
    x = np.zeros((128, 64), np.float32)

    def kernel(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out

    trace = nki.trace(kernel, x)
    op = trace.ops[0]
    op.keywords["queue"] = 99   # a queue that does not exist: the table's range check
    with pytest.raises(AsmError) as direct_error:
        trace.assemble()
    with pytest.raises(AsmError) as text_error:
        api.assemble(trace.asm, filename=trace.asm_name, target=trace.target)
    assert direct_error.value.args[0] == text_error.value.args[0]
    assert "queue" in direct_error.value.args[0]
    # located at the kernel's line of the first dma_copy, as every traced error is
    assert direct_error.value.location.line == kernel.__code__.co_firstlineno + 3


def _windows(x, starts):
    """out[k] = x[:, s_k : s_k + 16] for 80 run-time starts, one register each: more
    registers over the kernel's life than the 64 the sequencer has."""
    s_sb = nl.ndarray((1, starts.shape[1]), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s_sb, src=starts)
    xs = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    out = nl.ndarray((starts.shape[1], 128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    for k in range(starts.shape[1]):
        reg = nisa.register_alloc(s_sb[0:1, k:k + 1])
        w = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=w, src=xs.ap([[x.shape[1], 128], [1, 16]], scalar_offset=reg,
                                          indirect_dim=1))
        nisa.dma_copy(dst=out[k], src=w)
    return out


def test_an_instruction_does_not_keep_its_register_alive():
    """A register-offset view keeps its register's text, not the register: the pool frees a
    register no variable refers to, so 80 windows in turn need no more than a few."""
    x = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    starts = np.random.default_rng(2).integers(0, 48, (1, 80)).astype(np.int32)
    got = nki.simulate(_windows)(x, starts)
    for k, s in enumerate(starts[0]):
        np.testing.assert_array_equal(got[k], x[:, s:s + 16])
