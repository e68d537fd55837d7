"""The timing model: each documented cost formula reproduced exactly (hand-computed cycles over
the clock of isa/targets.toml), engine overlap, memory dependencies, determinism, reports."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu.cli import main

CLOCK = {"trn1": {"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4},
         "trn2": {"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2},
         "trn3": {"tensor": 2.4, "vector": 1.2, "scalar": 1.2, "gpsimd": 1.2}}
DMA = {"trn1": 272.0, "trn2": 368.0, "trn3": 528.0}


def timing(source: str, target: str = "trn2"):
    program = neuronemu.assemble(f".target {target}\n{source}", filename="timing.s")
    return neuronemu.run(program).timing


DECLS = """
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
.sbuf c float32[128, 512]
.sbuf small float32[128, 32]
.sbuf col float32[128, 1]
.sbuf h bfloat16[128, 512]
.sbuf h2 bfloat16[128, 512]
.sbuf w bfloat16[128, 128]
.sbuf wf float32[128, 128]
.sbuf stats float32[128, 30]
.sbuf mv float32[128, 2]
.sbuf t64 bfloat16[64, 128]
.sbuf t32 bfloat16[128, 32]
.psum acc float32[128, 512]
.psum pt float32[128, 128]
.hbm x float32[128, 512] input
"""

# (instruction, engine, cycles by hand from the formula in isa/costs.toml)
CASES = [
    ("vector.tensor_copy c, a", "vector", 512),                      # max(64, N)
    ("vector.tensor_copy small, small", "vector", 64),                # max(64, 32)
    ("vector.memset a, value=0.0", "vector", 512),
    ("vector.tensor_tensor c, a, b, op=add", "vector", 1024),        # max(64, 2N), fp32 SBUF
    ("vector.tensor_tensor c, a, acc, op=add", "vector", 512),       # PSUM + SBUF: max(64, N)
    ("vector.tensor_tensor h, h, h2, op=multiply", "vector", 512),   # all bf16, mul: N
    ("vector.tensor_tensor h, h, h2, op=maximum", "vector", 1024),   # all bf16, max: 2N
    ("vector.tensor_scalar c, a, op0=add, operand0=1.0", "vector", 512),
    ("vector.tensor_reduce col, a, op=add", "vector", 512),          # N, no minimum
    ("vector.tensor_reduce col, small, op=add", "vector", 32),
    ("vector.reciprocal c, a", "vector", 8 * 512),                   # max(64, 8N)
    ("vector.bn_stats stats[:, 0:6], a", "vector", 512),
    ("vector.bn_aggr mv, stats", "vector", 13 * 30 / 3),              # max(64, 13 N / 3) = 130
    ("scalar.activation c, a, func=exp", "scalar", 512),              # max(64, N)
    ("scalar.activation c, a, func=exp, reduce_res=col", "scalar", 512 + 64),
    ("scalar.activation small, small, func=exp", "scalar", 64),
    ("gpsimd.iota a, base=0, channel_multiplier=1, step=1", "gpsimd", 150 + 512),
    ("gpsimd.memset small, value=1.0", "gpsimd", 150 + 32),
    # max(64, N), + LoadStationary of the 128 stationary columns / 4 (the array idled before)
    ("tensor.matmul acc, w, h, accumulate=false", "tensor", 512 + 32),
    ("tensor.matmul acc[:, 0:32], w, h[:, 0:32], accumulate=false", "tensor", 64 + 32),
    ("tensor.matmul acc, wf, a, accumulate=false", "tensor", 4 * 512 + 32),  # fp32: 4x
    ("tensor.transpose pt[:, 0:64], t64", "tensor", 64),              # max(P=64, min(64, 128))
    ("tensor.transpose pt[0:32, :], t32", "tensor", 128),             # max(P=128, min(64, 32))
]


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("instruction, engine, cycles", CASES, ids=[c[0] for c in CASES])
def test_cost_formula(instruction: str, engine: str, cycles: float, target: str) -> None:
    t = timing(DECLS + instruction, target)
    assert t.tracks[engine].instructions == 1
    assert t.tracks[engine].busy_ns == pytest.approx(cycles / CLOCK[target][engine], rel=1e-12)
    assert t.time_ns == pytest.approx(cycles / CLOCK[target][engine], rel=1e-12)


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_dma_cost(target: str) -> None:
    # 128 rows of 2 KiB over 16 engines (8 rows each) at DMA[target] / 16 bytes per ns, every
    # row one buffer with a 256-byte overhead; it waits for no other engine, so no fixed cost
    t = timing(DECLS + "dma.copy a, x, queue=3", target)
    assert t.tracks["dma.q3"].busy_ns == pytest.approx(8 * (2048 + 256) * 16 / DMA[target])
    # the store of a Vector result waits for Vector: + the 1300 ns cross-engine latency (DMABW)
    t = timing(DECLS + ".hbm y float32[128, 512] output\nvector.memset a, value=1.0\n"
               "dma.copy y, a, queue=3", target)
    assert t.tracks["dma.q3"].busy_ns == pytest.approx(1300 + 8 * (2048 + 256) * 16 / DMA[target])


def test_control_takes_no_time() -> None:
    t = timing("ctrl.mov r0, 0\nloop:\nctrl.add r0, r0, 1\nctrl.blt r0, 10, loop\n")
    assert t.time_ns == 0 and t.tracks == {}


def test_independent_engines_overlap() -> None:
    t = timing(DECLS + "vector.tensor_copy c, a\nscalar.activation b, h, func=exp\n")
    vector_ns, scalar_ns = 512 / 0.96, 512 / 1.2
    assert t.time_ns == pytest.approx(max(vector_ns, scalar_ns))


def test_read_after_write_waits() -> None:
    # the reader also waits for Vector's pipeline latency: ~100 cycles (T2A, PERF)
    t = timing(DECLS + "vector.tensor_copy c, a\nscalar.activation b, c, func=exp\n")
    assert t.time_ns == pytest.approx((512 + 100) / 0.96 + 512 / 1.2)
    assert t.critical_path["scalar"] == pytest.approx(512 / 1.2)
    assert sum(t.critical_path.values()) == pytest.approx(t.time_ns)


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_latency_is_not_throughput(target: str) -> None:
    """Issue interval and pipeline latency apart (isa/costs.toml latency): independent
    instructions of one engine issue back to back; a dependent one waits for the latency too
    (Vector ~100 cycles T2A/PERF, Scalar 264 - 64 = 200 PERF, GpSimd 60 chosen); accumulating
    matmuls stream back to back, a reader of their PSUM tile waits R + C - 2 = 254 TensorE
    cycles for the array to drain, and only the first matmul (the array idle before it) pays
    its LoadStationary, 128 columns / 4 = 32 cycles."""
    clock = CLOCK[target]
    independent = timing(DECLS + "vector.tensor_copy c, a\nvector.tensor_copy b, a\n", target)
    assert independent.time_ns == pytest.approx(2 * 512 / clock["vector"])
    dependent = timing(DECLS + "vector.tensor_copy c, a\nvector.tensor_copy b, c\n", target)
    assert dependent.time_ns == pytest.approx((512 + 100 + 512) / clock["vector"])
    scalar = timing(DECLS + "scalar.activation c, a, func=exp\nscalar.activation b, c, func=exp\n",
                    target)
    assert scalar.time_ns == pytest.approx((512 + 200 + 512) / clock["scalar"])
    gpsimd = timing(DECLS + "gpsimd.memset c, value=1.0\nvector.tensor_copy b, c\n", target)
    assert gpsimd.time_ns == pytest.approx((150 + 512 + 60) / clock["gpsimd"]
                                           + 512 / clock["vector"])
    chain = "\n".join(f"tensor.matmul acc, w, h, accumulate={'true' if i else 'false'}"
                      for i in range(4))
    gemm = timing(DECLS + chain + "\nvector.tensor_copy c, acc\n", target)
    assert gemm.tracks["tensor"].busy_ns == pytest.approx((32 + 4 * 512) / clock["tensor"])
    # the copy out of PSUM: max(64, N) Vector cycles
    assert gemm.time_ns == pytest.approx((32 + 4 * 512 + 254) / clock["tensor"]
                                         + 512 / clock["vector"])


def test_write_after_read_waits_and_disjoint_slices_do_not() -> None:
    # scalar reads a; gpsimd then overwrites a (WAR) -> serial
    serial = timing(DECLS + "scalar.activation b, a, func=exp\ngpsimd.memset a, value=0.0\n")
    assert serial.time_ns == pytest.approx(512 / 1.2 + (150 + 512) / 1.2)
    # the same with gpsimd writing a different column range of the buffer -> overlapped
    disjoint = timing(DECLS + "scalar.activation b[:, 0:256], a[:, 0:256], func=exp\n"
                              "gpsimd.memset a[:, 256:512], value=0.0\n")
    assert disjoint.time_ns == pytest.approx(max(256 / 1.2, (150 + 256) / 1.2))


def test_one_engine_runs_in_order() -> None:
    t = timing(DECLS + "vector.tensor_copy c, a\nvector.tensor_copy b, small[:, 0:32]\n"
               .replace("b, small[:, 0:32]", "small, small"))
    assert t.time_ns == pytest.approx((512 + 64) / 0.96)


def test_dma_queues_overlap_and_a_queue_is_fifo() -> None:
    data = 8 * (2048 + 256) * 16 / 368
    same = timing(DECLS + "dma.copy a, x, queue=0\ndma.copy b, x, queue=0\n")
    assert same.time_ns == pytest.approx(2 * data)
    # two queues share the 16 engines' bandwidth
    two = timing(DECLS + "dma.copy a, x, queue=0\ndma.copy b, x, queue=1\n")
    assert two.time_ns == pytest.approx(2 * data)
    # stores of a Vector result: each waits for Vector and pays the cross-engine latency; on one
    # queue one after the other, on two queues the latencies overlap
    store = DECLS + ".hbm y float32[128, 512] output\nvector.memset c, value=1.0\n"
    vector = (512 + 100) / 0.96  # memset, then Vector's ~100-cycle latency (T2A, PERF)
    same = timing(store + "dma.copy y, c, queue=0\ndma.copy x, c, queue=0\n")
    assert same.time_ns == pytest.approx(vector + 1300 + 2 * data)
    two = timing(store + "dma.copy y, c, queue=0\ndma.copy x, c, queue=1\n")
    assert two.time_ns == pytest.approx(vector + 1300 + 2 * data)


def test_tensor_flops_and_peak() -> None:
    t = timing(DECLS + "tensor.matmul acc, w, h, accumulate=false")
    assert t.tensor_flops == 2 * 128 * 128 * 512
    # one 512-column bf16 matmul streams at the array's peak rate after its LoadStationary
    # (32 cycles, not hidden: nothing ran before it)
    assert t.tensor_peak_fraction == pytest.approx(512 / (512 + 32))


def _run_bundled(name: str, target: str = "trn2"):
    from neuronemu.programs import find_program

    return neuronemu.run(neuronemu.assemble_file(find_program(name), target=target))


def test_double_buffering_beats_single_buffering() -> None:
    for target in ("trn1", "trn2", "trn3"):
        single = _run_bundled("timing/single_buffer", target)
        double = _run_bundled("timing/double_buffer", target)
        assert (single.outputs["y"].tobytes() == double.outputs["y"].tobytes())
        assert double.timing.time_ns < 0.72 * single.timing.time_ns


def test_identical_runs_give_identical_times_and_traces(tmp_path) -> None:
    runner = CliRunner()
    traces = []
    for name in ("a.json", "b.json"):
        result = runner.invoke(main, ["run", "matmul_tiled", "--json", "--trace",
                                      str(tmp_path / name)])
        assert result.exit_code == 0, result.stderr
        traces.append((tmp_path / name).read_bytes())
        doc = json.loads(result.stdout)
        assert doc["engines"]["tensor"]["instructions"] == 16
        assert doc["cycles"]["tensor"] == round(doc["time_ns"] * 2.4)
        assert doc["critical_path"]["bound_by"] in doc["engines"]
    assert traces[0] == traces[1]
    trace = json.loads(traces[0])
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"tensor", "vector", "dma.q0"} <= names
    matmuls = [e for e in trace["traceEvents"] if e.get("name") == "tensor.matmul"]
    assert len(matmuls) == 16
    from neuronemu.programs import find_program

    text = find_program("matmul_tiled").read_text().splitlines()
    lines = {f"matmul_tiled.s:{i + 1}" for i, line in enumerate(text) if "tensor.matmul" in line}
    assert {e["args"]["source"] for e in matmuls} == lines


def test_trace_event_cap_keeps_totals() -> None:
    from neuronemu.programs import find_program

    program = neuronemu.assemble_file(find_program("matmul_tiled"))
    full = neuronemu.run(program).timing
    capped = neuronemu.run(program, max_trace_events=5).timing
    assert capped.events_recorded == 5 and capped.events_total == full.events_total
    assert capped.tracks == full.tracks


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_double_row_fp8_matmul_takes_half_the_cycles(target: str) -> None:
    src = """.sbuf w float8_e4m3[128, 128]
.sbuf x float8_e4m3[128, 512]
.psum acc float32[128, 512]
vector.memset w, value=0.5
vector.memset x, value=2.0
tensor.matmul acc, w, x{mode}
"""
    normal = timing(src.format(mode=""), target)
    # the same operand bytes as [128, 2, 64] x [128, 2, 256]: K = 256, N = 256
    fast = timing(src.format(mode=", perf_mode=double_row").replace(
        "acc float32[128, 512]", "acc float32[64, 256]"), target)
    # each after its exposed LoadStationary: 128 stationary columns / 4 = 32 cycles; double_row
    # loads [K, 2, 64] in the time of [K, 64] (T2): 16
    assert normal.tracks["tensor"].busy_ns == pytest.approx((512 + 32) / CLOCK[target]["tensor"])
    assert fast.tracks["tensor"].busy_ns == pytest.approx((256 + 16) / CLOCK[target]["tensor"])


@pytest.mark.parametrize("target, dtype, message", [
    ("trn1", "float8_e4m3", "perf_mode=double_row needs trn2 or trn3"),
    ("trn2", "bfloat16", "stationary must be an fp8 tile, not bfloat16"),
])
def test_double_row_errors(target: str, dtype: str, message: str) -> None:
    src = (f".target {target}\n.sbuf w {dtype}[128, 128]\n.sbuf x {dtype}[128, 512]\n"
           ".psum acc float32[128, 512]\ntensor.matmul acc, w, x, perf_mode=double_row\n")
    with pytest.raises(neuronemu.AsmError, match=message):
        neuronemu.assemble(src, "k.s")


def test_critical_path_bisection_is_numpys_searchsorted() -> None:
    """The walk's own bisection (timing/critical.py) against numpy, brute force over sorted
    end times with repeats, both sides."""
    import numpy as np

    from neuronemu.timing.critical import _bisect

    rng = np.random.default_rng(7)
    for _ in range(200):
        ends = np.sort(rng.integers(0, 12, rng.integers(0, 25)).astype(np.float64))
        for x in np.arange(-1.0, 13.5, 0.5):
            for right in (False, True):
                side = "right" if right else "left"
                assert _bisect(ends, x, right) == np.searchsorted(ends, x, side=side)


def test_critical_path_start_is_numpys_argmax() -> None:
    """The walk starts at the first event to end last: np.argmax, ties and NaN included."""
    import numpy as np

    from neuronemu.timing.critical import _first_max

    rng = np.random.default_rng(11)
    cases = [np.array([3.0]), np.array([1.0, 5.0, 5.0, 2.0]), np.array([2.0, np.nan, 9.0]),
             np.array([-1.0, -0.5, -0.5])]
    cases += [rng.integers(0, 6, rng.integers(1, 30)).astype(np.float64) for _ in range(200)]
    for ends in cases:
        assert _first_max(ends) == np.argmax(ends), ends
