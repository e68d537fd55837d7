"""Modelled time of each NKI-style kernel of tests/nki/nki_kernels.py, traced by neuronemu.nki,
beside the hand-written .s of the same algorithm in programs/ (same shapes and dtypes).

    python -m tools.nki_compare [--target trn2] [--markdown]

The hand-written kernels run on their declared inputs, the traced ones on seeded inputs of the
same shape; modelled times do not depend on the values (docs/timing.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
import neuronemu
from neuronemu import nki
from tests.nki import nki_kernels as K

BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3


def _inputs():
    g = np.random.default_rng(0)

    def n(*shape, dtype=np.float32, scale=1.0):
        return (g.normal(size=shape) * scale).astype(dtype)

    return [
        ("tensor_add [128, 512] fp32", K.tensor_add.func, (n(128, 512), n(128, 512)),
         "examples/vector_add.s", ""),
        ("matmul_tiled 512^3 bf16", K.matmul_tiled, (n(512, 512, dtype=BF16),
                                                     n(512, 512, dtype=BF16)),
         "examples/matmul_tiled.s", ""),
        ("softmax_isa [256, 512] fp32", K.softmax_isa, (n(256, 512, scale=4),),
         "examples/softmax.s", ""),
        ("softmax_nl [256, 512] fp32", K.softmax_nl, (n(256, 512, scale=4),),
         "examples/softmax.s", ""),
        ("softmax_isa [1024, 2048] bf16", K.softmax_isa, (n(1024, 2048, dtype=BF16, scale=4),),
         "kernels/softmax_rows.s", "hand-written: software-pipelined, 2 slots"),
        ("rmsnorm_isa [1024, 2048] bf16", K.rmsnorm_isa,
         (n(1024, 2048, dtype=BF16), n(1, 2048, dtype=BF16)), "kernels/rmsnorm.s", ""),
        ("layernorm_bn [256, 1024] bf16", K.layernorm_bn, (n(256, 1024, dtype=BF16),),
         "examples/layernorm.s", ""),
        ("layernorm_affine [1000, 1024] bf16", K.layernorm_affine,
         (n(1000, 1024, dtype=BF16), n(1, 1024), n(1, 1024)), "kernels/layernorm_affine.s",
         "hand-written: beta added by dma.compute on the store"),
        ("cumsum_scan [256, 4096] fp32", K.cumsum_scan, (n(256, 4096),), "kernels/cumsum.s", ""),
        ("rope_halves [128, 4096] bf16", K.rope_halves,
         (n(128, 4096, dtype=BF16), n(64, 4096, dtype=BF16), n(64, 4096, dtype=BF16)),
         "kernels/rope.s", "hand-written: half swap on TensorE, PSUM operands"),
        ("transpose_blocks [512, 384] fp32", K.transpose_blocks, (n(512, 384),),
         "kernels/transpose_2d.s", ""),
        ("causal_attention S=1024 D=128", K.causal_attention,
         (n(128, 1024, dtype=BF16), n(128, 1024, dtype=BF16), n(1024, 128, dtype=BF16)),
         "kernels/flash_attention_causal.s",
         "different algorithm: hand-written is flash (online softmax, pipelined)"),
        ("mlp_relu_nl [256x128]@[128x512] bf16", K.mlp_relu_nl,
         (n(128, 256, dtype=BF16), n(128, 512, dtype=BF16)), None, ""),
        ("flash_attention_causal S=1024 D=128 KB=512", K.flash_attention_causal,
         (n(128, 1024, dtype=BF16), n(128, 1024, dtype=BF16), n(1024, 128, dtype=BF16), 512),
         "kernels/flash_attention_causal.s",
         "both pipelined; hand-written: mask added on TensorE, pairs of query tiles"),
        ("fp8_matmul_double_row 512x2048x512", K.fp8_matmul_double_row,
         (n(2048, 512, dtype=FP8), n(2048, 512, dtype=FP8),
          g.uniform(0.001, 0.01, size=(1, 512)).astype(np.float32)),
         "kernels/fp8_matmul_colscale.s", ""),
        ("mx_matmul 256x1024x512 bf16->MXFP8", K.mx_matmul,
         (n(256, 1024, dtype=BF16), n(1024, 512, dtype=BF16, scale=0.03125)),
         "kernels/mx_matmul.s", "trn3 only", "trn3"),
        ("conv2d_maxpool [2,64,34,34] * [128,64,3,3]", K.conv2d_maxpool,
         (n(2, 64, 34, 34, dtype=BF16), n(128, 64, 3, 3, dtype=BF16, scale=0.0417),
          n(128, 1)), "kernels/conv2d_maxpool.s", ""),
        ("avg_pool2d 3x3/2 [4,128,64,64] bf16", K.avg_pool2d, (n(4, 128, 64, 64, dtype=BF16),),
         "kernels/avg_pool2d.s", ""),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="trn2")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    for label, kernel, inputs, hand, note, *only in _inputs():
        # a kernel of one target only (MX: trn3) runs there whatever --target says
        target = only[0] if only else args.target
        if only and target != args.target:
            label = f"{label} ({target})"
        traced = nki.run(kernel, *inputs, target=target)
        hand_ns = None
        if hand:
            program = neuronemu.assemble_file(ROOT / "programs" / hand, target=target)
            hand_ns = neuronemu.run(program).timing.time_ns
        rows.append((label, traced.time_ns, sum(traced.result.instructions.values()),
                     hand, hand_ns, note))
    if args.markdown:
        print(f"| kernel ({args.target}) | traced us | instrs | hand-written | hand us | "
              f"traced / hand | note |")
        print("|---|---|---|---|---|---|---|")
    for label, t_ns, count, hand, h_ns, note in rows:
        ratio = f"{t_ns / h_ns:.2f}x" if h_ns else "-"
        h = f"{h_ns / 1000:.3f}" if h_ns else "-"
        if args.markdown:
            print(f"| {label} | {t_ns / 1000:.3f} | {count} | {hand or '-'} | {h} | {ratio} | "
                  f"{note} |")
        else:
            print(f"{label:<38} traced {t_ns / 1000:9.3f} us ({count:4d} instrs)   "
                  f"{hand or '-':<34} {h:>9} us   {ratio:>6}  {note}")


if __name__ == "__main__":
    main()
