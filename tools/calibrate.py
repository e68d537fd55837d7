"""Modelled times of AWS's public NKI kernels against their stated hardware figures.

    python -m tools.calibrate --public DIR [--only SUBSTR] [--json FILE] [--markdown]
    python -m tools.calibrate --public DIR --check      # each ratio inside its recorded band
    python -m tools.calibrate --public DIR --record     # write tools/calibration_bands.json

The kernels are not part of neuronemu (their code never enters this repository): DIR (or the
environment's NEURONEMU_PUBLIC_KERNELS) holds copies checked out by the user:

    DIR/nki-samples-01    github.com/aws-neuron/nki-samples at 7af4e4d (the last commit with
                          the NKI 0.1 tutorials, reference kernels and their unit tests)
    DIR/nki-samples-02    the same repository at 6905a68 (the 0.2+ matmul tutorial)
    DIR/nki-samples-221   the same repository at 05c0769 (Neuron SDK 2.21, December 2024):
                          the kernels two figures were measured with, changed since (below)

Every case runs the public code unchanged, in a process of its own, through neuronemu's
drop-in switch (``neuronxcc.nki`` and ``nki`` are neuronemu), on the figure's target:

- nki-samples' unit-test perf cases (their ``latency`` bounds: ``assert p99 <= latency`` held
  on AWS's machines until the checks were removed): the test method itself with its own
  parametrize row; the modelled time is its ``nki.benchmark`` result (neuronemu's benchmark
  reports the modelled latency). A figure belongs to the kernel it was measured with: where
  the kernel changed the work it does after its test's latency was last written, the case
  runs the kernel and test of that commit (``checkout``): resize_nearest_fixed_dma_kernel
  was rewritten in 83a3630 (August 2025, gathers of 128 positions instead of one DMA per
  position) under latencies written in 05c0769 and 5d97201, and allocated_fused_rms_norm_qkv
  stopped computing masked-off row groups in fc202b2 (February 2025) under latencies written
  in 05c0769. The others' kernels did not change their work after their figures.
- the fused Mamba tutorial's kernels (nki-samples' 0.1 copy) at the tutorial's shapes (its
  measured times: aws-neuron-sdk ``guides/tutorials/fused_mamba.rst``).
- the matmul tutorial's four stages at [4096, 8192] x [8192, 8192] bf16 on trn1 (the SDK
  tutorial's measured times).

``ratio`` is modelled / figure. ``--check`` holds each ratio inside the band recorded for it
(tools/calibration_bands.json, +-5% around the reading it was recorded from), so that a model
change that moves a kernel is seen; ``tests/test_calibration.py`` runs it when the kernels
are there. docs/nki.md, "Modelled times against the public hardware figures", is the table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BANDS = Path(__file__).with_name("calibration_bands.json")
BAND = 0.05   # a recorded ratio's band: +-5%
CHECKOUTS = ("nki-samples-01", "nki-samples-02", "nki-samples-221")
F32, BF16, F16 = "float32", "bfloat16", "float16"
LADDER = ("tiled", "hoist_load", "block_free_dimension", "fully_optimized")
LADDER_FIGURES_US = (51800.0, 42960.0, 22070.0, 6970.0)   # trn1, the SDK matmul tutorial


def _unit(name, file, cls, method, params, figure, target="trn2", checkout="nki-samples-01"):
    return {"name": name, "kind": "unit", "file": file, "cls": cls, "method": method,
            "params": params, "figure_us": figure, "target": target, "checkout": checkout}


ERA = "nki-samples-221"   # the kernels of 05c0769, with the figures written then


def _cases() -> list[dict]:
    sd = ("test_SD_attention_small_head.py", "TestAttention", "test_attention_for_SD_perf")
    alloc = ("test_allocated_SD_attention_small_head.py", "TestAttention",
             "test_allocated_attention_for_SD_perf")
    qkv = ("test_rmsnorm_qkv.py", "TestRMSNormQKV", "test_allocated_rmsnorm_qkv_perf")
    resize = ("test_resize_nearest.py", "TestResizeNearest", "test_resize_nearest_for_perf")
    cases = [
        _unit("SD attention small head (1, 4096, 128) fp32", *sd, [1, 4096, 128, F32, 675], 675),
        _unit("SD attention small head (1, 4096, 128) bf16", *sd, [1, 4096, 128, BF16, 536], 536),
        _unit("SD attention small head (1, 4096, 64) fp16", *sd, [1, 4096, 64, F16, 600], 600),
        _unit("allocated SD attention (1, 4096, 128) fp32", *alloc, [1, 4096, 128, F32, 410], 410),
        _unit("allocated SD attention (1, 4096, 128) bf16", *alloc, [1, 4096, 128, BF16, 380],
              380),
        _unit("allocated SD attention (1, 5120, 128) bf16", *alloc, [1, 5120, 128, BF16, 586],
              586),
        _unit("RMSNorm + QKV (1, 128, 512, 512) fp16", *qkv, [1, 128, 512, 512, F16, 25], 25,
              checkout=ERA),
        _unit("RMSNorm + QKV (1, 512, 1024, 384) bf16", *qkv, [1, 512, 1024, 384, BF16, 40], 40,
              checkout=ERA),
        _unit("RMSNorm + QKV (1, 128, 1024, 512) bf16", *qkv, [1, 128, 1024, 512, BF16, 28], 28,
              checkout=ERA),
        _unit("double-row fp8 matmul (512, 16384, 1024)", "test_double_row_matmul.py",
              "TestDoubleRowMatmul", "test_double_row_matmul_perf",
              [512, 16 * 1024, 1024, BF16, 2, 2, 16, 320], 320),
        _unit("resize nearest 30x20 -> 59x38, 1280 ch, batch 1, fp16", *resize,
              [1, 30, 20, 1280, 1, 59, 38, 1280, F16, 659], 659, checkout=ERA),
        _unit("resize nearest, batch 10, fp32", *resize,
              [10, 30, 20, 1280, 10, 59, 38, 1280, F32, 1740], 1740, checkout=ERA),
        _unit("select and scatter (8, 64, 112, 112) fp32", "test_select_and_scatter.py",
              "TestSelectAndScatter", "test_select_and_scatter_for_perf",
              [8, 64, 112, 112, 56, 56, F32, 4500], 4500),
    ]
    pool = ("test_adaptive_avg_pool2d.py", "TestAdaptiveAvgPool2D", "test_adaptive_avg_pool2d_perf")
    # (N, C, H, W, output size, dtype, the test's latency: its measured time x 1.05)
    for n, c, h, w, o, dt, measured in (
            (1, 64, 56, 56, 7, F32, 65), (2, 128, 28, 28, 7, F32, 109),
            (2, 128, 28, 28, (14, 14), F32, 327), (1, 512, 7, 7, 1, F32, 14),
            (1, 256, 14, 14, 7, F16, 88), (4, 64, 56, 56, (7, 7), F32, 152),
            (8, 64, 32, 32, (4, 4), F16, 103), (2, 2048, 32, 32, (3, 3), F32, 564),
            (2, 64, 256, 256, 1, F32, 255)):
        figure = round(measured * 1.05, 4)
        short = {F32: "fp32", F16: "fp16"}[dt]
        cases.append(_unit(f"adaptive avg pool ({n}, {c}, {h}, {w}) -> {o}, {short}", *pool,
                           [n, c, h, w, list(o) if isinstance(o, tuple) else o, dt, figure],
                           figure))
    for version, shape, figure in (("mamba_v1", [1, 512, 256, 16], 172.93),
                                   ("mamba_v1", [1, 512, 4096, 16], 2340.0),
                                   ("mamba_v2", [1, 512, 4096, 16], 1610.0)):
        cases.append({"name": f"fused Mamba {version[-2:]} ({', '.join(map(str, shape))})",
                          "kind": "mamba", "version": version, "shape": shape, "figure_us": figure,
                          "target": "trn2"})
    for stage, figure in zip(LADDER, LADDER_FIGURES_US):
        cases.append({"name": f"matmul tutorial {stage} 4096x8192x8192 bf16", "kind": "matmul",
                          "kernel": f"nki_matmul_{stage}_", "figure_us": figure, "target": "trn1"})
    return cases


CASES = _cases()


# ------------------------------------------------------------------ the child: one case
def _import_path(name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _child_unit(case: dict, public: Path) -> float:
    import neuronxcc.nki.language as nl  # the drop-in's 0.1 language
    import numpy as np

    unit = public / case["checkout"] / "test" / "unit"
    sys.path[:0] = [str(public / case["checkout"] / "src"), str(unit)]
    module = _import_path("calib_" + case["file"][:-3], unit / case["file"])
    if case["file"] == "test_double_row_matmul.py":
        module.get_target_string = lambda: "trn2"   # its perf test runs on trn2 machines only
    dtypes = {F32: np.float32, BF16: nl.bfloat16, F16: nl.float16}
    params = [dtypes.get(p, p) if isinstance(p, str) else tuple(p) if isinstance(p, list) else p
              for p in case["params"]]
    try:
        getattr(getattr(module, case["cls"])(), case["method"])(*params)
    except AssertionError:
        # the test's own `assert p99 <= latency` (removed after 05c0769): the modelled time
        # is over the figure, which the ratio says
        if module.bench_func.benchmark_result is None:
            raise
    return module.bench_func.benchmark_result.nc_latency.get_latency_percentile(50)


def _child_mamba(case: dict, public: Path) -> float:
    """The 0.1 tutorial kernels as their ``--mode perf`` calls them (``nki.benchmark``), with
    the inputs of their ``__main__`` (ones; A = -1)."""
    import numpy as np
    from neuronxcc import nki

    module = _import_path("mamba_nki_kernels", public / "nki-samples-01" / "src" / "nki_samples"
                          / "tutorials" / "fused_mamba" / "mamba_nki_kernels.py")
    batch, seq_len, channels, state = case["shape"]
    ones = np.ones
    inputs = (ones((batch, channels, seq_len), np.float32), ones((batch, channels, seq_len),
              np.float32), -ones((channels, state), np.float32),
              ones((batch, state, seq_len), np.float32), ones((batch, state, seq_len), np.float32))
    bench = nki.benchmark(getattr(module, case["version"]), save_neff_name="file.neff",
                          save_trace_name="profile.ntff")
    bench(*inputs)
    return bench.benchmark_result.nc_latency.get_latency_percentile(50)


def _child_matmul(case: dict, public: Path) -> float:
    import ml_dtypes
    import numpy as np

    module = _import_path("matrix_multiplication_nki_kernels",
                          public / "nki-samples-02" / "src" / "nki_samples" / "tutorials"
                          / "matrix_multiplication" / "matrix_multiplication_nki_kernels.py")
    rng = np.random.default_rng(0)
    lhsT = rng.random((8192, 4096), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.random((8192, 8192), dtype=np.float32).astype(ml_dtypes.bfloat16)
    kernel = getattr(module, case["kernel"])
    kernel(lhsT, rhs)
    return kernel.last_run.time_ns / 1e3


def _child(name: str, public: Path, out: str) -> None:
    from neuronemu.nki import dropin

    dropin.install()
    case = next(c for c in CASES if c["name"] == name)
    work = tempfile.mkdtemp(prefix="calibrate-")
    os.chdir(work)   # the perf tests write their trace files here
    record: dict = {"name": name}
    try:
        run = {"unit": _child_unit, "mamba": _child_mamba, "matmul": _child_matmul}[case["kind"]]
        record.update(status="ok", modelled_us=round(run(case, public), 3))
    except Exception as error:   # noqa: BLE001 (reported by the parent)
        render = getattr(error, "render", None)
        record.update(status="error",
                      error=(render() if render else f"{type(error).__name__}: {error}")[:400])
    Path(out).write_text(json.dumps(record))


# ------------------------------------------------------------------ the parent
def measure(public: Path, only: list[str], timeout: float, log=print) -> list[dict]:
    """Run every case (``only``: names containing one of these) in a process of its own."""
    rows = []
    for case in CASES:
        if only and not any(s.lower() in case["name"].lower() for s in only):
            continue
        env = dict(os.environ, NEURON_PLATFORM_TARGET_OVERRIDE=case["target"])
        env.pop("NKI_NC_VERSION", None)
        env.pop("NEURON_CC_FLAGS", None)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")) if p)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        start = time.time()
        proc = subprocess.run([sys.executable, "-m", "tools.calibrate", "--run-case",
                               case["name"], "--public", str(public), "--out", out],
                              check=False, env=env, capture_output=True, text=True,
                              timeout=timeout,
                              cwd=Path(__file__).resolve().parents[1])
        try:
            record = json.loads(Path(out).read_text() or "{}")
        except (OSError, ValueError):
            record = {}
        finally:
            Path(out).unlink(missing_ok=True)
        if not record:
            record = {"status": "error",
                      "error": f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"}
        row = {"name": case["name"], "target": case["target"], "figure_us": case["figure_us"],
               "modelled_us": record.get("modelled_us"), "status": record["status"],
               "error": record.get("error"), "seconds": round(time.time() - start, 1)}
        if row["modelled_us"]:
            row["ratio"] = round(row["modelled_us"] / case["figure_us"], 4)
        log(f"{case['name']:<58} {case['target']}  figure {case['figure_us']:>9g} us  "
            f"modelled {row['modelled_us'] if row['modelled_us'] is not None else row['error']}")
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> list[str]:
    """Within-2x counts, the geometric mean of |log ratio| and the matmul ladder."""
    lines = []
    logs = [abs(math.log(r["ratio"])) for r in rows if r.get("ratio")]
    if logs:
        within = sum(1 for x in logs if x <= math.log(2))
        lines.append(f"{len(logs)} timed, {within} within 2x of the figure; geometric mean of "
                     f"|log(modelled / figure)| = log {math.exp(sum(logs) / len(logs)):.2f}")
    ladder = {r["name"].split()[2]: r.get("modelled_us") for r in rows if "matmul" in r["name"]}
    if all(ladder.get(s) for s in LADDER):
        times = [ladder[s] for s in LADDER]
        order = all(a > b for a, b in itertools.pairwise(times))
        lines.append(f"matmul tutorial ladder (trn1): {times[0] / times[-1]:.2f}x from tiled to "
                     f"fully_optimized (hardware {LADDER_FIGURES_US[0] / LADDER_FIGURES_US[-1]:.2f}"
                     f"x); stages {'in' if order else 'NOT in'} the measured order")
    return lines


def markdown(rows: list[dict]) -> str:
    out = ["| kernel (shape) | target | figure us | modelled us | modelled / figure |",
           "|---|---|---:|---:|---:|"]
    for r in rows:
        mod = f"{r['modelled_us']:.1f}" if r.get("modelled_us") else r["status"]
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else ""
        out.append(f"| {r['name']} | {r['target']} | {r['figure_us']:g} | {mod} | {ratio} |")
    return "\n".join(out + [""] + summary(rows))


def check(rows: list[dict], bands: dict) -> list[str]:
    """The cases whose ratio left its recorded band (or did not run)."""
    bad = []
    for r in rows:
        band = bands.get(r["name"])
        if band is None:
            bad.append(f"{r['name']}: no band recorded (python -m tools.calibrate --record)")
        elif not r.get("ratio"):
            bad.append(f"{r['name']}: {r['status']}: {r.get('error')}")
        elif not band["low"] <= r["ratio"] <= band["high"]:
            bad.append(f"{r['name']}: modelled / figure {r['ratio']:.3f} left its band "
                       f"[{band['low']:.3f}, {band['high']:.3f}] (recorded at "
                       f"{band['recorded']:.3f})")
    return bad


def public_dir(given: str | None) -> Path | None:
    chosen = given or os.environ.get("NEURONEMU_PUBLIC_KERNELS")
    if not chosen:
        return None
    path = Path(chosen).expanduser().resolve()
    return path if all((path / name).is_dir() for name in CHECKOUTS) else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--public", help="the directory of the public kernels' checkouts "
                                     "(default: $NEURONEMU_PUBLIC_KERNELS)")
    ap.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--check", action="store_true", help="each ratio inside its recorded band")
    ap.add_argument("--record", action="store_true", help="record the bands from this reading")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    ap.add_argument("--run-case", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    public = public_dir(args.public)
    if public is None:
        print("calibrate: error: no public kernels: give --public DIR (or set "
              "NEURONEMU_PUBLIC_KERNELS) holding nki-samples-01 (nki-samples at 7af4e4d), "
              "nki-samples-02 (at 6905a68) and nki-samples-221 (at 05c0769)", file=sys.stderr)
        return 2
    if args.run_case:
        _child(args.run_case, public, args.out)
        return 0
    rows = measure(public, args.only, args.timeout,
                   log=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    print(markdown(rows) if args.markdown else "\n".join(summary(rows)))
    if args.record:
        bands = json.loads(BANDS.read_text()) if BANDS.exists() else {}
        for r in rows:
            if r.get("ratio"):
                bands[r["name"]] = {"recorded": r["ratio"], "low": round(r["ratio"] * (1 - BAND), 4),
                                    "high": round(r["ratio"] * (1 + BAND), 4)}
        BANDS.write_text(json.dumps(bands, indent=1, sort_keys=True) + "\n")
    if args.check:
        bad = check(rows, json.loads(BANDS.read_text()) if BANDS.exists() else {})
        for line in bad:
            print(f"calibrate: {line}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
