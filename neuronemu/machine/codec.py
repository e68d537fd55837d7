"""The jitted codec of the inline-compression format defined in ``compression``."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine.compression import BLOCK_ELEMENTS, MASK_BYTES, blocks_per_row, slot_bytes


@jit
def encode_row(bits, mem, row, col, itemsize, slot):
    """Compress one row of raw element bits (int64 [n]) into block slots starting at byte
    ``col`` of memory row ``row``; returns the compressed bytes."""
    n = bits.size
    size = 0
    for b in range(0, n, BLOCK_ELEMENTS):
        start = col + (b // BLOCK_ELEMENTS) * slot
        mask = np.uint64(0)
        k = 0
        for i in range(b, min(n, b + BLOCK_ELEMENTS)):
            v = bits[i]
            if v != 0:
                mask |= np.uint64(1) << np.uint64(i - b)
                c = start + MASK_BYTES + k * itemsize
                for j in range(itemsize):
                    mem[row, c + j] = np.uint8((v >> (8 * j)) & 0xFF)
                k += 1
        for j in range(MASK_BYTES):
            mem[row, start + j] = np.uint8((mask >> np.uint64(8 * j)) & np.uint64(0xFF))
        size += MASK_BYTES + k * itemsize
    return size


@jit
def decode_row(mem, row, col, n, itemsize, slot, out):
    """Inverse of ``encode_row``: fills ``out`` (int64 [n]) with the raw element bits and
    returns the compressed bytes read."""
    size = 0
    for b in range(0, n, BLOCK_ELEMENTS):
        start = col + (b // BLOCK_ELEMENTS) * slot
        mask = np.uint64(0)
        for j in range(MASK_BYTES):
            mask |= np.uint64(mem[row, start + j]) << np.uint64(8 * j)
        k = 0
        for i in range(b, min(n, b + BLOCK_ELEMENTS)):
            if (mask >> np.uint64(i - b)) & np.uint64(1):
                c = start + MASK_BYTES + k * itemsize
                v = np.int64(0)
                for j in range(itemsize):
                    v |= np.int64(mem[row, c + j]) << (8 * j)
                out[i] = v
                k += 1
            else:
                out[i] = 0
        size += MASK_BYTES + k * itemsize
    return size


def encode_tensor(bits: np.ndarray, itemsize: int) -> np.ndarray:
    """Raw bits [R, C] -> the slot image of the compressed tensor as bytes [R * row pitch]."""
    bits = np.ascontiguousarray(bits, dtype=np.int64).reshape(bits.shape[0], -1)
    rows, columns = bits.shape
    slot = slot_bytes(itemsize)
    pitch = blocks_per_row(columns) * slot
    image = np.zeros((rows, pitch), dtype=np.uint8)
    for r in range(rows):
        encode_row(bits[r], image, r, 0, itemsize, slot)
    return image.reshape(-1)


def decode_tensor(image: np.ndarray, rows: int, columns: int, itemsize: int) -> np.ndarray:
    """The slot image of a compressed tensor -> raw bits int64 [R, C]."""
    slot = slot_bytes(itemsize)
    pitch = blocks_per_row(columns) * slot
    image = np.ascontiguousarray(image, dtype=np.uint8).reshape(rows, pitch)
    out = np.empty((rows, columns), dtype=np.int64)
    for r in range(rows):
        decode_row(image, r, 0, columns, itemsize, slot, out[r])
    return out
