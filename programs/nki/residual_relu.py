"""y = relu(a + b) on 128-row tiles, written in NKI, with a bug left in for docs/debugging.md:
the outputs are wrong from the second row tile on. Run it: python programs/nki/residual_relu.py
(with neuronemu installed); debug it: neuronemu debug programs/nki/residual_relu.py."""

import numpy as np

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki


@nki.jit
def residual_relu(a, b):
    rows, cols = a.shape
    y = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        a_sb = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_sb = nl.ndarray((128, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_sb, src=a[nl.ds(t * 128, 128), :])
        nisa.dma_copy(dst=b_sb, src=b[nl.ds(0, 128), :])
        s_sb = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s_sb, data1=a_sb, data2=b_sb, op=nl.add)
        y_sb = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.activation(dst=y_sb, op=nl.relu, data=s_sb)
        nisa.dma_copy(dst=y[nl.ds(t * 128, 128), :], src=y_sb)
    return y


a = np.arange(256 * 64, dtype=np.float32).reshape(256, 64) / 1024
b = -np.arange(256 * 64, dtype=np.float32).reshape(256, 64) / 2048
y = residual_relu(a, b)
expected = np.maximum(a + b, 0)
bad = np.argwhere(y != expected)
print("wrong elements:", len(bad), "first:", bad[0].tolist() if len(bad) else None)
