"""Inline DMA compression: block zero-value compression of HBM tensors (docs/dma.md).

No Trainium compression format is public, so neuronemu defines one that a DMA engine could
implement in a single pass with no search: each row of a compressed tensor is cut into blocks of
``BLOCK_ELEMENTS`` elements, and a block is stored as an 8-byte little-endian presence mask (bit i
set when element i's bit pattern is not all zeros) followed by the non-zero elements, packed, in
order. Only the all-zero bit pattern is dropped: -0.0, NaN payloads and denormals are data.

Each block owns a fixed slot of ``MASK_BYTES + BLOCK_ELEMENTS * itemsize`` bytes, so a tile of
whole blocks can be addressed without reading earlier blocks (capacity is reserved at the raw
size, as in compressible-memory designs); bandwidth and the reported size count only
``MASK_BYTES + nonzeros * itemsize`` per block: a closed form of the data.
"""

from __future__ import annotations

import numpy as np

BLOCK_ELEMENTS = 64
MASK_BYTES = 8


def slot_bytes(itemsize: int) -> int:
    return MASK_BYTES + BLOCK_ELEMENTS * itemsize


def blocks_per_row(columns: int) -> int:
    return -(-columns // BLOCK_ELEMENTS)


def compressed_size(bits: np.ndarray, itemsize: int) -> int:
    """The closed form, for reports and tests: rows of raw bits [R, C] -> compressed bytes."""
    bits = np.asarray(bits).reshape(bits.shape[0], -1)
    nonzero = bits != 0
    return int(bits.shape[0] * blocks_per_row(bits.shape[1]) * MASK_BYTES
               + np.count_nonzero(nonzero) * itemsize)
