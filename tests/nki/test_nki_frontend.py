"""neuronemu.nki's tracer: allocation, PSUM accumulation, DMA queues, reshapes, and every error
or warning pointing at the kernel's Python line."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import AsmError, nki
from neuronemu.nki import NkiError, NkiUnsupported


def line_of(func, text: str) -> int:
    """The file line of the first line of ``func`` that contains ``text``."""
    lines, first = inspect.getsourcelines(func)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def copy_kernel(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    for t in range(x.shape[0] // 128):
        tile = nl.ndarray((128, x.shape[1]), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=tile)
    return out


X = np.arange(512 * 64, dtype=np.float32).reshape(512, 64)


def test_simulate_and_jit_return_numpy_outputs():
    np.testing.assert_array_equal(nki.simulate(copy_kernel)(X), X)
    jitted = nki.jit(copy_kernel)
    np.testing.assert_array_equal(jitted(X), X)
    assert jitted.last_run.time_ns > 0
    assert nki.jit(platform_target="trn3")(copy_kernel).options == {"target": "trn3"}


def test_loop_body_tiles_rotate_over_two_byte_ranges_and_every_instruction_has_its_line():
    run = nki.run(copy_kernel, X, schedule="program")   # (the compiler's: see the file's end)
    lines = run.asm.splitlines()
    alloc_line = line_of(copy_kernel, "tile = nl.ndarray")
    pools = [d for d in lines if d.startswith(".sbuf sbuf_pool")]
    tiles = [d for d in lines if d.startswith(".sbuf sb_")]
    assert len(pools) == 1 and "at=0" in pools[0]
    # the site's first two tiles go next-fit, then the site rotates over those two byte ranges
    # (the one free the longest first): double buffering
    assert [d.split()[1] for d in tiles] == [f"sb_L{alloc_line}_0", f"sb_L{alloc_line}_1"]
    assert [d.split("at=")[1].split()[0] for d in tiles] == ["0", "256"]
    body = [line for line in lines if line.startswith("    ")]
    assert [b.split()[1].rstrip(",")[-1] for b in body[::2]] == ["0", "1", "0", "1"]
    load_line = line_of(copy_kernel, "src=x[t")
    assert body[0].endswith(f"# test_nki_frontend.py:{load_line}")
    # DMA queues: round-robin in program order
    assert [b.split("queue=")[1].split()[0] for b in body] == [str(q) for q in range(8)]
    assert all(run.trace.source_map[n].function == "copy_kernel"
               for n, text in enumerate(lines, 1) if text.startswith("    "))
    np.testing.assert_array_equal(run.outputs, X)


def test_dma_queue_policy_is_an_option():
    run = nki.run(copy_kernel, X, dma_queues=[3, 5])
    queues = [line.split("queue=")[1].split()[0] for line in run.asm.splitlines()
              if "queue=" in line]
    assert queues == ["3", "5"] * 4


def kept_tiles(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    tiles = []
    for t in range(4):
        tile = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        tiles.append(tile)
    for t, tile in enumerate(tiles):
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=tile)
    return out


def test_tiles_live_together_get_their_own_bytes():
    run = nki.run(kept_tiles, X)
    tiles = [line for line in run.asm.splitlines() if line.startswith(".sbuf sb_")]
    assert len({t.split("at=")[1].split()[0] for t in tiles}) == 4
    np.testing.assert_array_equal(run.outputs, X)


def many_listed_tiles(x, n):
    """n tiles of 2 KiB per partition kept in a list; each is used only in its own iteration,
    so only a couple are ever live."""
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    tiles = []
    for _ in range(n):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        tiles.append(t)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_tiles_a_list_still_holds_are_free_after_their_last_use():
    """200 x 2 KiB tiles (more than the 112 that fit at once) kept in a Python list: the
    bytes of each are free after its last instruction, as the NKI compiler frees them."""
    x = np.random.default_rng(0).normal(size=(128, 512)).astype(np.float32)
    run = nki.run(many_listed_tiles, x, 200)
    np.testing.assert_allclose(run.outputs, 200.0 * x.astype(np.float64), rtol=1e-5)
    assert run.trace.peak_bytes["sbuf"] <= 229376


def too_big(x):
    tiles = []
    for t in range(200):
        tile = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)   # 2 KiB each
        nisa.memset(dst=tile, value=float(t))
        tiles.append(tile)
    for tile in tiles:   # every tile is read at the end: all 200 are live at once
        nisa.dma_copy(dst=x[0:128, 0:64], src=tile[:, 0:64])


def test_sbuf_overflow_names_the_allocating_line_and_the_live_tiles():
    with pytest.raises(NkiError) as info:
        nki.trace(too_big, X)
    err = info.value
    assert err.location.line == line_of(too_big, "tile = nl.ndarray")
    assert err.location.source.name == __file__
    text = err.render()
    assert "SBUF overflow on trn2" in text and "tile = nl.ndarray" in text
    assert "112 tiles live here hold 229376 of the 229376 bytes" in text  # 229376 / 2048
    assert f"[128, 512] float32 from test_nki_frontend.py:{err.location.line}" in text


def psum_accumulate(a, b):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.load(a)
    b_sb = nl.load(b)
    acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a_sb, moving=b_sb)       # accumulates onto the zeros
    nisa.nc_matmul(dst=acc, stationary=a_sb, moving=b_sb)
    nl.store(out, acc)
    return out


def test_psum_writes_after_a_memset_accumulate():
    a = np.eye(128, dtype=np.float32)
    b = np.full((128, 128), 1.5, np.float32)
    run = nki.run(psum_accumulate, a, b)
    np.testing.assert_array_equal(run.outputs, 3.0)
    assert run.asm.count("accumulate=true") == 2


def shape_mismatch(x):
    a = nl.load(x[0:128, :])
    b = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=b, data1=a, data2=a, op=nl.add)


def test_assembler_errors_point_at_the_kernel_line():
    with pytest.raises(AsmError) as info:
        nki.run(shape_mismatch, X)
    err = info.value
    assert err.location.source.name == __file__
    assert err.location.line == line_of(shape_mismatch, "nisa.tensor_tensor")
    text = err.render()
    assert "nisa.tensor_tensor(dst=b" in text
    assert "note: generated instruction shape_mismatch.nki.s:" in text


def unsupported_call(x):
    t = nl.load(x[0:128, :])
    nl.device_printf("t", t)


def masked_load(x):
    return nl.load(x[0:128, :], mask=None)


def optional_bias(x, bias=None):
    """``if bias:`` tests whether the optional tensor was given (a tensor is truthy, as NKI's
    are), not its values."""
    t = nl.load(x[0:128, :])
    if bias:
        t = nl.add(t, nl.load(bias[0:128, :]))
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


def test_a_tensor_is_truthy_so_optional_arguments_can_be_tested():
    np.testing.assert_array_equal(nki.simulate(optional_bias)(X), X[0:128])
    np.testing.assert_array_equal(nki.simulate(optional_bias)(X, X), X[0:128] * 2)


def transposed_view(x):
    t = nl.load(x[0:128, 0:64])
    return t.T


@pytest.mark.parametrize("kernel, text, message", [
    (unsupported_call, "nl.device_printf",
     "nki.language.device_printf is not an NKI 0.6 name (neither here nor in NKI)"),
    (masked_load, "mask=None",
     "mask= (NKI 0.1 predicates) is taken by nl.load and nl.store of the 0.1 dialect"),
    (transposed_view, "return t.T", "t.T of an on-chip tile would move its partition dim"),
])
def test_unsupported_calls_fail_loudly_at_the_kernel_line(kernel, text, message):
    with pytest.raises(NkiUnsupported) as info:
        nki.trace(kernel, X)
    err = info.value
    assert isinstance(err, NotImplementedError)
    assert err.location.source.name == __file__
    assert err.location.line == line_of(kernel, text)
    assert message in err.message
    assert text in err.render()


def test_unknown_isa_call_fails_at_its_line():
    def kernel(x):
        nisa.nc_shuffle_rows(x, x, [0] * 32)

    with pytest.raises(NkiUnsupported, match="nki.isa.nc_shuffle_rows is not an NKI 0.6 name") as info:
        nki.trace(kernel, X)
    assert info.value.location.line == line_of(kernel, "nc_shuffle_rows")


def test_calls_outside_a_trace_are_errors():
    with pytest.raises(NkiError, match="need a kernel being traced"):
        nl.ndarray((128, 4), nl.float32)


def unwritten_read(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_run_warnings_point_at_the_kernel_line():
    run = nki.run(unwritten_read, X)
    assert run.result.warnings
    w = run.result.warnings[0]
    assert w.location.source.name == __file__
    assert w.location.line == line_of(unwritten_read, "nisa.dma_copy")


def test_the_timeline_names_kernel_lines():
    run = nki.run(copy_kernel, X)
    events = [e for e in run.chrome_trace()["traceEvents"] if e.get("ph") == "X"]
    assert len(events) == 8
    load_line = line_of(copy_kernel, "src=x[t")
    assert events[0]["args"]["source"] == f"test_nki_frontend.py:{load_line}"
    assert events[0]["args"]["asm_source"].startswith("copy_kernel.nki.s:")
    json.dumps(run.chrome_trace())


def reshaped(x):
    n = x.shape[0] // 128
    x3 = x.reshape((n, 128, x.shape[1]))
    out = nl.ndarray((n, 128, x.shape[1]), x.dtype, buffer=nl.shared_hbm)
    for i in range(n):
        t = nl.load(x3[i])
        nl.store(out[i], t)
    return out


def test_whole_hbm_tensors_reshape():
    out = nki.simulate(reshaped)(X)
    np.testing.assert_array_equal(out, X.reshape(4, 128, 64))


def test_same_seed_same_everything():
    a, b = nki.run(copy_kernel, X), nki.run(copy_kernel, X)
    assert a.asm == b.asm and a.time_ns == b.time_ns


def test_neuronemu_nki_is_the_top_layer():
    """Nothing in neuronemu imports neuronemu.nki but the two entry points above it (the CLI's
    `nki run` and the pytest plugin's --neuronemu-nki, both when asked), and importing it loads
    neither numba nor lark (numpy it may)."""
    from pathlib import Path

    root = Path(nki.__file__).resolve().parents[1]
    for path in root.rglob("*.py"):
        if "nki" in path.relative_to(root).parts[:1] or path.name in ("cli.py",
                                                                      "pytest_plugin.py"):
            continue
        assert "neuronemu.nki" not in path.read_text(), path
    code = ("import sys, neuronemu.nki; "
            "print([m for m in ('numba', 'lark', 'neuronemu.api') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


@nki.jit
def double_tile(t):
    """A jitted helper: called from a kernel being traced, it is inlined."""
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=out, data=t, op0=nl.multiply, operand0=2.0)
    return out


def calls_a_jitted_helper(x):
    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
    nl.store(out, double_tile(nl.load(x[0:128, :])))
    return out


def test_jitted_helpers_inline_into_the_kernel_being_traced():
    run = nki.run(calls_a_jitted_helper, X)
    np.testing.assert_array_equal(run.outputs, X[0:128] * 2)
    helper_line = line_of(double_tile.func, "nisa.tensor_scalar")
    assert f"# test_nki_frontend.py:{helper_line}" in run.asm   # the helper's own line
    assert double_tile.last_run is None


def free_dims_swapped(x):
    """u[p, f, j] = t[p, j, f] by an access pattern over t [128, 4, 16]."""
    out = nl.ndarray((128, 16, 4), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray((128, 16, 4), x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t.ap([[64, 128], [1, 16], [16, 4]]))
    nl.store(out, u)
    return out


def test_access_patterns_lower_to_ap_operands():
    x = X[0:128].reshape(128, 4, 16)
    run = nki.run(free_dims_swapped, x)
    assert "ap(sb_L" in run.asm
    np.testing.assert_array_equal(run.outputs, x.transpose(0, 2, 1))


def patterns_of_views(x):
    """.ap() of an .ap() view, and of a slice read as another dtype: each new pattern starts
    at the view's first element and steps through the underlying buffer."""
    odd = x.ap([[64, 128], [2, 32]], offset=1)               # x[p, 1 + 2j]
    window = odd.ap([[64, 128], [1, 16]], offset=2)          # x[p, 3 + j]
    high = x[0:128, 4:8].ap([[128, 128], [2, 4]], offset=1, dtype=nl.bfloat16)
    out = nl.ndarray((128, 16), x.dtype, buffer=nl.shared_hbm)
    tops = nl.ndarray((128, 4), nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 16), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=window)
    nl.store(out, t)
    u = nl.ndarray((128, 4), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=high)
    nl.store(tops, u)
    return out, tops


def test_an_access_pattern_of_a_view_starts_at_the_views_first_element():
    x = np.random.default_rng(3).standard_normal((128, 64)).astype(np.float32)
    window, tops = nki.simulate(patterns_of_views)(x)
    np.testing.assert_array_equal(window, x[:, 3:19])
    high_halves = (x[:, 4:8].view(np.uint32) >> 16).astype(np.uint16)   # little-endian
    np.testing.assert_array_equal(np.asarray(tops).view(np.uint16), high_halves)


def test_the_error_docs_nki_md_shows_is_the_one_this_file_gives():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "nki.md").read_text()
    with pytest.raises(AsmError) as info:
        nki.run(shape_mismatch, X)
    shown = info.value.render().replace(str(Path(__file__).resolve().parents[2]) + "/", "")
    assert "\n".join("  " + line for line in shown.splitlines()) in doc


def test_an_endless_python_loop_stops_at_the_tracer_limit(monkeypatch):
    """An endless Python loop in a kernel grew the tracer's instruction list without end
    (~10 MB/s, issue 30): past the tracer's limit it is a located error."""
    from neuronemu.nki import _trace

    assert _trace.MAX_TRACED == 1_000_000
    monkeypatch.setattr(_trace, "MAX_TRACED", 1000)

    def endless(x):
        tile = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
        while True:
            nisa.dma_copy(dst=tile, src=x[0:128, :])

    with pytest.raises(NkiError) as info:
        nki.simulate(endless)(X)
    error = info.value
    assert error.message.startswith("the kernel has made 1,000 instructions while being traced")
    assert error.location.line == line_of(endless, "nisa.dma_copy(dst=tile")


def column_blocks(a, b):
    """Four matmuls into disjoint 5-column blocks of one PSUM tile through .ap() views, then
    one more into block 0: the first write of each element overwrites, the second adds (as
    nki-library's attention_tkg fills its score tile)."""
    out = nl.ndarray((128, 20), nl.float32, buffer=nl.shared_hbm)
    a_sb, b_sb = nl.load(a), nl.load(b)
    acc = nl.ndarray((128, 20), nl.float32, buffer=nl.psum)
    for k in range(4):
        nisa.nc_matmul(dst=acc.ap([[20, 128], [1, 5]], offset=5 * k), stationary=a_sb,
                       moving=b_sb[:, 5 * k:5 * k + 5])
    nisa.nc_matmul(dst=acc.ap([[20, 128], [1, 5]], offset=0), stationary=a_sb,
                   moving=b_sb[:, 0:5])
    nl.store(out, acc)
    return out


def test_matmuls_into_disjoint_views_of_one_psum_tile_each_overwrite_first():
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (128, 128)).astype(np.float32)
    b = rng.integers(-3, 4, (128, 20)).astype(np.float32)
    want = a.T @ b
    want[:, 0:5] *= 2
    run = nki.run(column_blocks, a, b)
    np.testing.assert_array_equal(run.outputs, want)
    assert run.asm.count("accumulate=false") == 4 and run.asm.count("accumulate=true") == 1


def sliced_column_blocks(a, b):
    """column_blocks with plain slices: each block's first matmul overwrites, the repeat of
    block 0 adds; then a slice over blocks 1 and 2 (both written) adds to both."""
    out = nl.ndarray((128, 20), nl.float32, buffer=nl.shared_hbm)
    a_sb, b_sb = nl.load(a), nl.load(b)
    acc = nl.ndarray((128, 20), nl.float32, buffer=nl.psum)
    for k in range(4):
        nisa.nc_matmul(dst=acc[:, 5 * k:5 * k + 5], stationary=a_sb,
                       moving=b_sb[:, 5 * k:5 * k + 5])
    nisa.nc_matmul(dst=acc[:, 0:5], stationary=a_sb, moving=b_sb[:, 0:5])
    nisa.nc_matmul(dst=acc[:, 5:15], stationary=a_sb, moving=b_sb[:, 5:15])
    nl.store(out, acc)
    return out


def test_matmuls_into_slices_of_one_psum_tile_each_overwrite_first():
    rng = np.random.default_rng(6)
    a = rng.integers(-3, 4, (128, 128)).astype(np.float32)
    b = rng.integers(-3, 4, (128, 20)).astype(np.float32)
    want = a.T @ b
    want[:, 0:15] *= 2
    run = nki.run(sliced_column_blocks, a, b)
    np.testing.assert_array_equal(run.outputs, want)
    assert run.asm.count("accumulate=false") == 4 and run.asm.count("accumulate=true") == 2


def straddling_matmul(a, b):
    acc = nl.ndarray((128, 20), nl.float32, buffer=nl.psum)
    a_sb, b_sb = nl.load(a), nl.load(b)
    nisa.nc_matmul(dst=acc[:, 0:10], stationary=a_sb, moving=b_sb[:, 0:10])
    nisa.nc_matmul(dst=acc[:, 5:15], stationary=a_sb, moving=b_sb[:, 5:15])


def test_a_matmul_over_written_and_unwritten_psum_needs_an_explicit_accumulate():
    a, b = np.zeros((128, 128), np.float32), np.zeros((128, 20), np.float32)
    with pytest.raises(nki.NkiUnsupported, match="covers elements written before and "
                                                 "elements not written yet") as e:
        nki.trace(straddling_matmul, a, b)
    assert e.value.location.line == line_of(straddling_matmul, "acc[:, 5:15]")


def dropped_column(x):
    """t[:, k] of a [P, F] tile has shape [P]; NKI still lets it be indexed as [P, 1]."""
    t = nl.load(x)
    column = t[:, 2]
    assert tuple(column.shape) == (128,)
    part = column[:64, :1]
    assert tuple(part.shape) == (64, 1)
    out = nl.ndarray((64, 1), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=part)
    return out


def test_a_column_an_int_index_dropped_still_indexes_as_one_column():
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    np.testing.assert_array_equal(nki.simulate(dropped_column)(x), x[:64, 2:3])


def test_under_the_compilers_schedule_an_sbuf_site_gets_a_home_per_dma_queue():
    """The same loop under the compiler's schedule (the default): the site's four tiles take
    four byte ranges (up to one per DMA queue before any is reused), so no load waits for
    the store that read its bytes."""
    run = nki.run(copy_kernel, X)
    lines = run.asm.splitlines()
    tiles = [d for d in lines if d.startswith(".sbuf sb_")]
    assert [d.split("at=")[1].split()[0] for d in tiles] == ["0", "256", "512", "768"]
    np.testing.assert_array_equal(run.outputs, X)
    assert run.time_ns < nki.run(copy_kernel, X, schedule="program").time_ns
