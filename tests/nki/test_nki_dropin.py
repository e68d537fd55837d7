"""The NKI drop-in switch and the NKI names an unmodified kernel needs: `import nki` aliases
(python -m neuronemu.nki, neuronemu nki run, pytest --neuronemu-nki), nki.typing / nki.dtype /
nki.isa.constants / nl.NKIObject, SPMD grids, in/out arguments, the caller's kind of array,
the 0.5 view algebra, live-range placement by address=, and located diagnostics for calls
whose arguments do not bind. Kernels are written here from the math; oracles are numpy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.nki import NkiError, NkiUnsupported

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}

SCRIPT = '''
import sys

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
from nki.isa.constants import oob_mode
from nki.typing import tensor


@nki.jit
def scale_rows(x: tensor, factor: float) -> tensor:
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, oob_mode=oob_mode.error)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)
    return out


if __name__ == "__main__":
    factor = float(sys.argv[1])
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    y = scale_rows(x, factor)
    assert np.array_equal(y, x * factor), "mismatch"
    print("ok", type(y).__name__, sys.argv[1:])
'''

BROKEN = '''
import numpy as np

import nki
import nki.language as nl


@nki.jit
def broken(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray((128, 4), dtype=x.dtype, buffer=nl.sbuf)
    nl.store(out, nl.add(t, u))
    return out


broken(np.zeros((128, 8), np.float32))
'''


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("launcher", [["-m", "neuronemu.nki"], ["-m", "neuronemu", "nki", "run"]])
def test_an_unmodified_nki_script_runs_through_the_switch(tmp_path, launcher):
    script = _write(tmp_path, "scale.py", SCRIPT)
    out = subprocess.run([sys.executable, *launcher, str(script), "2.5", "--flag"],
                         check=False, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok ndarray ['2.5', '--flag']"


def test_without_the_switch_import_nki_is_not_found(tmp_path):
    script = _write(tmp_path, "scale.py", SCRIPT)
    out = subprocess.run([sys.executable, str(script), "2"], check=False, capture_output=True, text=True,
                         env=ENV, cwd=tmp_path, timeout=600)
    assert out.returncode != 0 and "No module named 'nki'" in out.stderr


def test_a_kernel_error_under_the_switch_is_a_located_diagnostic(tmp_path):
    script = _write(tmp_path, "broken.py", BROKEN)
    out = subprocess.run([sys.executable, "-m", "neuronemu.nki", str(script)],
                         check=False, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert out.returncode == 3
    assert "Traceback" not in out.stderr
    line = BROKEN.splitlines().index("    nl.store(out, nl.add(t, u))") + 1
    assert f"broken.py:{line}:" in out.stderr and "error:" in out.stderr


def test_the_pytest_option_runs_an_nki_test_suite_unchanged(tmp_path):
    _write(tmp_path, "kernels.py", SCRIPT)
    _write(tmp_path, "test_scale.py", '''
        import numpy as np
        import nki.language as nl
        from kernels import scale_rows

        def test_scale():
            x = np.ones((128, 8), np.float32)
            assert np.array_equal(scale_rows(x, 3.0), x * 3)
            assert nl.tile_size.pmax == 128
        ''')
    env = {**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    base = [sys.executable, "-m", "pytest", "-q", "-p", "neuronemu.pytest_plugin", "-p",
            "no:cacheprovider", "test_scale.py"]
    out = subprocess.run(base + ["--neuronemu-nki"], check=False, capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout + out.stderr
    without = subprocess.run(base, check=False, capture_output=True, text=True, env=env, cwd=tmp_path,
                             timeout=600)
    assert without.returncode != 0 and "No module named 'nki'" in without.stdout


def test_the_aliases_are_neuronemus_modules():
    from neuronemu.nki import dropin

    dropin.install()
    try:
        import nki as aliased
        import nki.language as nl_aliased
        import nki.typing as nt
        from nki.isa import constants
        assert aliased is nki and nl_aliased is nl and nt is nki.typing
        assert constants.oob_mode is nisa.oob_mode and constants.dge_mode is nisa.dge_mode
        assert nki.__name__ == "neuronemu.nki"   # the aliased module keeps its own name
    finally:
        dropin.uninstall()
    assert "nki" not in sys.modules


def test_the_cpu_simulator_package_is_neuronemu_under_the_switch():
    """A harness written for AWS's stand-alone simulator (nki-library's --test-mode simulation)
    imports nki_cpu_simulator.nki... and aliases it to nki itself."""
    from neuronemu.nki import dropin

    dropin.install()
    try:
        import nki_cpu_simulator.nki.builtin as sim_builtin
        import nki_cpu_simulator.nki.compiler as sim_compiler
        import nki_cpu_simulator.nki.isa.constants as sim_constants
        import nki_cpu_simulator.nki.language as sim_nl
        import nki_cpu_simulator.nki.language.dtypes as sim_dtypes
        import nki_cpu_simulator.nki.tensor  # noqa: F401
        import nki_cpu_simulator.nki.typing as sim_nt
        from nki.simulator import simulate_kernel
        from nki_cpu_simulator import nki as sim_nki
        assert simulate_kernel is nki.simulate_kernel
        assert sim_nki is nki and sim_nl is nl and sim_nt is nki.typing
        assert sim_constants.oob_mode is nisa.oob_mode and sim_dtypes.bfloat16 == nl.bfloat16
        assert sim_builtin.__name__ == "nki.builtin"
        with pytest.raises(NkiUnsupported, match="compiler"):
            sim_compiler.skip_middle_end_transformations()
    finally:
        dropin.uninstall()
    assert "nki_cpu_simulator" not in sys.modules and "nki.builtin" not in sys.modules


def test_neuronxcc_nki_is_the_01_dialect_and_other_neuronxcc_modules_are_located_errors(
        tmp_path):
    """neuronxcc.nki.typing is nki.typing (the same in both dialects); neuronxcc.nki,
    .language and .isa are the 0.1 dialect (tests/nki/test_nki_01.py); any other neuronxcc
    module stops at the script's import line."""
    from neuronemu.nki import dropin

    dropin.install()
    try:
        import neuronxcc.nki as legacy
        import neuronxcc.nki.language as legacy_nl
        import neuronxcc.nki.typing as legacy_typing
        assert legacy_typing is nki.typing
        assert legacy.__name__ == "neuronemu.nki.neuronxcc"
        assert legacy_nl.__name__ == "neuronemu.nki.neuronxcc.language"
    finally:
        dropin.uninstall()
    assert not [n for n in sys.modules if n.startswith("neuronxcc")]
    script = _write(tmp_path, "old.py", """
        import numpy as np
        from neuronxcc.nki._private_kernels.cumsum import cumsum
        """)
    out = subprocess.run([sys.executable, "-m", "neuronemu.nki", str(script)], check=False,
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert out.returncode == 3, out.stderr
    assert (f"{script}:3:1: error: neuronxcc.nki._private_kernels is not a module of the NKI "
            f"0.1 dialect as neuronemu runs it") in out.stderr
    assert "Traceback" not in out.stderr


def halves_by_program(x):
    """Program p of an LNC2 launch adds p + 1 to its half of the rows."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    rows = x.shape[0] // nl.num_programs(0)
    for r in range(p * rows, (p + 1) * rows, 128):
        t = nl.load(x[r:r + 128, :])
        nl.store(out[r:r + 128, :], nl.add(t, float(p + 1)))
    return out


def test_cpu_simulate_and_simulate_kernel_with_one_and_two_logical_cores():
    x = np.arange(256 * 4, dtype=np.float32).reshape(256, 4)
    one = x + 1
    two = np.concatenate([x[:128] + 1, x[128:] + 2])
    kernel = nki.jit(halves_by_program)
    np.testing.assert_array_equal(nki.cpu_simulate(kernel)[1](x=x), one)
    np.testing.assert_array_equal(nki.cpu_simulate(kernel)[2](x=x), two)
    np.testing.assert_array_equal(nki.cpu_simulate(halves_by_program)(x), one)
    np.testing.assert_array_equal(nki.simulator.simulate_kernel(kernel, (x,), {}, 2), two)
    assert kernel.last_run.time_ns > 0   # the modelled timing is there for the harness


def test_the_simulators_nc_version_variable_selects_the_target(monkeypatch):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.setenv("NKI_NC_VERSION", "gen2")
    assert nki.default_target() == "trn1"
    monkeypatch.setenv("NKI_NC_VERSION", "gen4")
    assert nki.default_target() == "trn3"
    assert nisa.nc_version.gen3.name == "gen3" and nisa.nc_version.gen3 == 3


# -- names ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TileConfig(nl.NKIObject):
    rows: int = 128
    scale: float = 2.0


def configured(x, cfg: TileConfig, out_dtype: nki.dtype = nl.float32) -> nki.typing.tensor:
    out = nl.ndarray((cfg.rows, x.shape[1]), dtype=out_dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:cfg.rows, :])
    nl.store(out, nl.multiply(t, cfg.scale))
    return out


def test_nkiobject_is_a_base_class_for_config_dataclasses():
    x = np.arange(256 * 4, dtype=np.float32).reshape(256, 4)
    cfg = TileConfig(rows=128, scale=0.5)
    assert isinstance(cfg, nl.NKIObject) and cfg.scale == 0.5
    np.testing.assert_array_equal(nki.simulate(configured)(x, cfg), x[:128] * 0.5)
    obj = nl.NKIObject(a=1, b="two")
    assert (obj.a, obj.b) == (1, "two")


@dataclass
class SectionState(nl.NKIObject):
    """As nki-library writes them: a dataclass whose fields are plain class attributes."""
    index: int = 0
    offset = None
    active = False
    rows = []  # noqa: RUF012  (unhashable: stays a class attribute; dataclass refuses it)


@dataclass
class Dims(nl.NKIObject):
    rows: int
    cols: int
    spare: int


def test_plain_class_attributes_of_an_nkiobject_dataclass_are_fields():
    assert Dims(rows=2, cols=3) == Dims(2, 3, None)   # a field not given is None, as in NKI
    state = SectionState(3, offset=128, active=True)
    assert (state.index, state.offset, state.active) == (3, 128, True)
    assert SectionState() == SectionState(0, None, False)
    assert repr(SectionState()) == "SectionState(index=0, offset=None, active=False)"
    with pytest.raises(TypeError):
        SectionState(rows=[1])


def test_finfo_and_bool():
    assert nl.finfo(nl.bfloat16).max == 3.3895313892515355e38     # (2 - 2**-7) * 2**127
    assert nl.finfo(nl.float16).max == 65504.0
    assert nl.finfo(nl.float32).eps == 2.0 ** -23
    assert nl.iinfo(nl.int8).min == -128
    assert nl.bool is nl.bool_ and nl.bool_ == np.dtype(bool)


def test_every_language_name_of_06_that_this_front_end_lacks_fails_as_an_06_name():
    from neuronemu.nki.versions import LANGUAGE_06

    for name in ("is_hbm", "is_sbuf", "NKIObject", "broadcast_to", "expand_dims", "finfo",
                 "shared_constant", "shared_identity_matrix", "program_ndim", "MemoryRegion"):
        assert name in LANGUAGE_06 or name == "finfo"
        assert getattr(getattr(nl, name), "__name__", "") != "unsupported"
    assert nl.is_hbm(nl.shared_hbm) and nl.is_sbuf(nl.sbuf) and nl.is_on_chip(nl.psum)


# -- SPMD -----------------------------------------------------------------------------------


def rows_by_program(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    n1 = nl.num_programs(1)
    assert nl.program_ndim() == 2 and nl.num_programs() == 2 * n1
    r = (i * n1 + j) * 128
    t = nl.load(x[r:r + 128, :])
    nl.store(out[r:r + 128, :], nl.add(t, float(i * 10 + j)))
    return out


def test_an_spmd_grid_runs_every_program_on_shared_outputs():
    x = np.arange(512 * 4, dtype=np.float32).reshape(512, 4)
    kernel = nki.jit(rows_by_program)
    y = kernel[2, 2](x)
    expected = x.copy()
    for k, add in enumerate([0, 1, 10, 11]):
        expected[k * 128:(k + 1) * 128] += add
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(nki.simulate(kernel[(2, 2)])(x), expected)


def test_program_id_without_a_grid_is_zero_and_a_bad_axis_is_located():
    def kernel(x):
        assert nl.program_id(0) == 0 and nl.num_programs() == 1 and nl.program_ndim() == 0
        nl.program_id(1)

    with pytest.raises(NkiError, match="launched without a grid") as info:
        nki.trace(kernel, np.zeros((128, 4), np.float32))
    assert info.value.location.source.name == __file__


# -- in/out arguments and lost outputs ------------------------------------------------------


def writes_its_out_argument(x, out):
    t = nl.load(x)
    nl.store(out, nl.multiply(t, 3.0))


def writes_and_returns_out(x, out):
    writes_its_out_argument(x, out)
    return out


def test_a_written_argument_is_updated_for_the_caller():
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    out = np.zeros_like(x)
    assert nki.simulate(writes_its_out_argument)(x, out) is None
    np.testing.assert_array_equal(out, x * 3)
    out2 = np.zeros_like(x)
    returned = nki.simulate(writes_and_returns_out)(x, out2)
    np.testing.assert_array_equal(returned, x * 3)
    np.testing.assert_array_equal(out2, x * 3)


def forgets_to_return(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))


def test_a_written_but_unreturned_output_is_a_located_warning():
    x = np.ones((128, 4), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = nki.run(forgets_to_return, x)
    assert run.outputs is None
    texts = [str(w.message) for w in caught if issubclass(w.category, nki.NkiWarning)]
    assert len(texts) == 1 and "does not return it, so its contents are lost" in texts[0]
    line = forgets_to_return.__code__.co_firstlineno + 1
    assert f"test_nki_dropin.py:{line}:" in texts[0] and "'out'" in texts[0]
    assert len(run.result.warnings) >= 1


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch", reason="torch (CPU) is an optional extra")
    x = torch.arange(128 * 4, dtype=torch.bfloat16).reshape(128, 4)
    y = nki.simulate(configured)(x, TileConfig(scale=2.0), nl.bfloat16)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
    assert torch.equal(y, x * 2)


def test_jax_arrays_in_jax_arrays_out():
    jnp = pytest.importorskip("jax.numpy", reason="jax is an optional extra")
    x = jnp.arange(128 * 4, dtype=jnp.float32).reshape(128, 4)
    y = nki.simulate(configured)(x, TileConfig(scale=2.0))
    assert type(y).__module__.startswith("jax")
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x) * 2)


# -- views ----------------------------------------------------------------------------------


def onchip_reshapes(x):
    """x [128, 128] -> [128, 4, 32] on chip, its two free dims swapped by permute, a sliced
    reshape, and reshape(shape=)."""
    out = nl.ndarray((128, 32, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((128, 2, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray((128, 32, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t.reshape((128, 4, 32)).permute((0, 2, 1)))
    nl.store(out, u)
    v = nl.ndarray((128, 2, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=v, src=t[:, 64:128].reshape(shape=(128, 2, 32)))
    nl.store(out2, v)
    return out, out2


def test_onchip_and_sliced_reshapes_and_permute():
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    out, out2 = nki.simulate(onchip_reshapes)(x)
    np.testing.assert_array_equal(out, x.reshape(128, 4, 32).transpose(0, 2, 1))
    np.testing.assert_array_equal(out2, x[:, 64:].reshape(128, 2, 32))


def bits_of(x):
    out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t.view(nl.int32))
    nl.store(out, u)
    return out


def test_view_reinterprets_the_bytes():
    x = np.array(np.linspace(-3, 3, 128 * 8), np.float32).reshape(128, 8)
    np.testing.assert_array_equal(nki.simulate(bits_of)(x), x.view(np.int32))


def row_and_column_broadcasts(x, row, col):
    """x * row (a [1, N] SBUF row broadcast across partitions) + col ([P, 1] along the free
    dim), both with nl.broadcast_to as compute operands."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.load(row)
    c = nl.load(col)
    prod = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=prod, data1=t, data2=nl.broadcast_to(r, x.shape), op=nl.multiply)
    nisa.tensor_tensor(dst=prod, data1=prod, data2=c.broadcast_to(x.shape), op=nl.add)
    nl.store(out, prod)
    return out


def test_broadcast_to_of_onchip_tiles_as_compute_operands():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(128, 64)).astype(np.float32)
    row = rng.normal(size=(1, 64)).astype(np.float32)
    col = rng.normal(size=(128, 1)).astype(np.float32)
    y = nki.simulate(row_and_column_broadcasts)(x, row, col)
    np.testing.assert_allclose(y, x.astype(np.float64) * row + col, rtol=1e-6, atol=1e-6)


def dims_algebra(x):
    """expand_dim / squeeze_dim / reshape_dim / flatten_dims / select / slice round trips."""
    out = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)                                    # [128, 64]
    v = t.reshape_dim(1, (4, 16)).select(1, 2)        # [128, 16]: columns 32..47
    v = v.expand_dim(1).squeeze_dim(1).slice(1, 0, 16, 1)
    w = t.reshape_dim(1, (4, 16)).flatten_dims(1, 2)[:, 32:48]
    u = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=u, data1=v, data2=w, op=nl.add)
    nl.store(out, u)
    return out


def test_view_algebra_of_05():
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(nki.simulate(dims_algebra)(x), 2 * x[:, 32:48])


def transposed_hbm_read(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.T)
    nl.store(out, t)
    return out


def test_hbm_transpose_view():
    x = np.arange(32 * 128, dtype=np.float32).reshape(32, 128)
    np.testing.assert_array_equal(nki.simulate(transposed_hbm_read)(x), x.T)


def reshape_across_partitions(x):
    t = nl.load(x)
    t.reshape((64, 256))


def test_an_onchip_reshape_cannot_move_partitions():
    with pytest.raises(NkiError, match="keeps the partition dim") as info:
        nki.trace(reshape_across_partitions, np.zeros((128, 128), np.float32))
    assert info.value.location.line == reshape_across_partitions.__code__.co_firstlineno + 2


# -- constants and placement ----------------------------------------------------------------


def identity_times(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    eye = nl.shared_identity_matrix(n=128, dtype=nl.bfloat16)
    twos = nl.load(nl.shared_constant(np.full((128, 64), 2.0, np.float32)))
    t = nl.load(x)
    acc = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
    nisa.nc_matmul(dst=acc, stationary=eye, moving=t)
    r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=acc, data2=twos, op=nl.multiply)
    nl.store(out, r)
    return out


def test_shared_constants_identity_and_address_placement():
    x = np.arange(128 * 64).reshape(128, 64).astype(ml_dtypes.bfloat16)
    run = nki.run(identity_times, x)
    np.testing.assert_array_equal(run.outputs, x.astype(np.float32) * 2)
    assert "alias=psum_pool at=2048" in run.asm


def two_byte_addresses(x, y):
    """bfloat16 tiles at byte offsets 0 and 2 (nki-library's allocator aligns to the item size),
    read back through a third tile over both."""
    out = nl.ndarray((128, 4), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    first = nl.ndarray((128, 1), nl.bfloat16, buffer=nl.sbuf, address=(0, 0))
    rest = nl.ndarray((128, 3), nl.bfloat16, buffer=nl.sbuf, address=(0, 2))
    nisa.dma_copy(dst=first, src=y)
    nisa.dma_copy(dst=rest, src=x)
    both = nl.ndarray((128, 4), nl.bfloat16, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=out, src=both)
    return out


def test_an_address_is_aligned_to_its_dtypes_size():
    x = np.arange(128 * 3).reshape(128, 3).astype(ml_dtypes.bfloat16)
    y = -np.arange(128).reshape(128, 1).astype(ml_dtypes.bfloat16)
    out = nki.simulate(two_byte_addresses)(x, y)
    np.testing.assert_array_equal(out, np.concatenate([y, x], axis=1))

    def odd(x):
        nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf, address=(0, 2))

    with pytest.raises(NkiError, match=r"multiple of 4 \(the size of one float32\)"):
        nki.trace(odd, np.zeros((128, 4), np.float32))


def test_address_in_another_partition_is_unsupported_at_the_line():
    def kernel(x):
        nl.ndarray((64, 4), nl.float32, buffer=nl.sbuf, address=(64, 0))

    with pytest.raises(NkiUnsupported, match="starting at partition 64") as info:
        nki.trace(kernel, np.zeros((128, 4), np.float32))
    assert info.value.location.line == kernel.__code__.co_firstlineno + 1


# -- diagnostics ----------------------------------------------------------------------------


def bad_keyword(x):
    t = nl.load(x)
    nisa.tensor_scalar(dst=t, data=t,
                       op0=nl.multiply, operand=2.0)


def test_a_call_whose_arguments_do_not_bind_is_located_at_its_own_column():
    with pytest.raises(NkiUnsupported) as info:
        nki.trace(bad_keyword, np.zeros((128, 4), np.float32))
    err = info.value
    first = bad_keyword.__code__.co_firstlineno
    assert (err.location.line, err.location.column) == (first + 2, 5)
    assert "nisa.tensor_scalar() has no argument 'operand' in NKI 0.6" in err.message
    assert any("NKI 0.6 signature: nisa.tensor_scalar(dst, data, op0, operand0" in n
               for n in err.notes)


def older_dtype_argument(x, dtype):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype=dtype)
    nl.store(out, u)
    return out


def test_the_02_dtype_argument_of_tensor_copy_rounds_through_that_dtype():
    # NKI 0.2's tensor_copy(dtype=) (the matmul tutorials' PSUM -> SBUF copies): the same
    # dtype as dst is a plain copy; another rounds through it (RNE, as ml_dtypes casts)
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4) + 0.3
    np.testing.assert_array_equal(nki.simulate(older_dtype_argument)(x, nl.float32), x)
    np.testing.assert_array_equal(nki.simulate(older_dtype_argument)(x, nl.bfloat16),
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_names_of_other_versions_say_what_to_write():
    def kernel(x):
        nl.arange(128)

    with pytest.raises(NkiUnsupported, match=r"nki.language.arange belongs to NKI 0.1 "
                                             r"\(neuronxcc.nki\); index with slices"):
        nki.trace(kernel, np.zeros((128, 4), np.float32))

    def typo(x):
        nisa.tensor_tensr(x, x, x)

    with pytest.raises(NkiUnsupported, match="nki.isa.tensor_tensr is not an NKI 0.6 name"):
        nki.trace(typo, np.zeros((128, 4), np.float32))


def test_the_target_comes_from_neurons_environment(monkeypatch):
    def kernel(x):
        assert nisa.get_nc_version() == nisa.nc_version.gen2

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    assert nki.trace(kernel, np.zeros((128, 4), np.float32)).target == "trn1"
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE")
    monkeypatch.setenv("NEURON_CC_FLAGS", " --target trn3 --pipeline compile")
    assert nki.trace(lambda x: None, np.zeros((128, 4), np.float32)).target == "trn3"


def rearranged(x):
    """Split the free dim into (h, w), swap them (an SBUF view read by a copy), and an HBM
    view that merges two dims back."""
    t = nl.load(x)                                                      # [128, 24]
    v = t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4})       # [128, 6, 4]
    u = nl.ndarray(v.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=v)
    out = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, u)
    flat = nl.ndarray((128, 24), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=flat, src=x.rearrange((("p", "q"), "f"), (("p", "q"), "f"),
                                            {"q": 2}))
    return out, flat


def test_rearrange_splits_permutes_and_merges():
    x = np.arange(128 * 24, dtype=np.float32).reshape(128, 24)
    out, flat = nki.simulate(rearranged)(x)
    np.testing.assert_array_equal(out, x.reshape(128, 4, 6).transpose(0, 2, 1))
    np.testing.assert_array_equal(flat, x)


def test_rearrange_names_must_match():
    def bad(x):
        t = nl.load(x)
        return t.rearrange(("b", "f"), ("b", "g"))

    with pytest.raises(NkiError, match="must use each name"):
        nki.trace(bad, np.zeros((128, 8), np.float32))


def rows_by_vector_select(table, idx):
    ids = nl.ndarray((idx.shape[0], 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=idx)
    rows = nl.ndarray((idx.shape[0], table.shape[1]), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.vector_select(0, ids))
    out = nl.ndarray(rows.shape, dtype=table.dtype, buffer=nl.shared_hbm)
    nl.store(out, rows)
    return out


def test_vector_select_gathers_one_row_per_partition():
    rng = np.random.default_rng(8)
    table = rng.standard_normal((200, 16)).astype(np.float32)
    idx = rng.integers(0, 200, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(nki.simulate(rows_by_vector_select)(table, idx),
                                  table[idx[:, 0]])


def test_a_jitted_kernel_named_test_is_not_collected_as_a_test(tmp_path):
    """NKI 0.1 test files name kernels test_*: pytest must run the test that calls the kernel,
    not the kernel (which it would call with fixtures for its arguments)."""
    (tmp_path / "test_named_kernel.py").write_text(
        "import numpy as np\n"
        "from neuronemu import nki\n"
        "import neuronemu.nki.language as nl\n"
        "import neuronemu.nki.isa as nisa\n\n\n"
        "@nki.jit\n"
        "def test_copy_kernel(x):\n"
        "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=x)\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n\n\n"
        "def test_calls_the_kernel():\n"
        "    x = np.arange(512, dtype=np.float32).reshape(128, 4)\n"
        "    np.testing.assert_array_equal(test_copy_kernel(x), x)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_named_kernel.py"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "error" not in done.stdout.lower()
