"""NKI 0.1's block dims: ``nl.ndarray((n, nl.par_dim(128), 512), ...)`` is ``n`` tiles of
[128, 512], each allocated on its own (the compiler gives every block its own bytes and its
own live range: a PSUM tensor of 16 blocks need not fit PSUM at once, only the blocks live
together must). Indexing the block dims with ints picks one tile (made at its first use, so
its live range starts there); the rest of the key indexes that tile."""

from __future__ import annotations

import numpy as np

from neuronemu.nki._trace import NkiTensor, fail


class BlockTensor:
    """``blocks`` (the dims before the partition dim) of tiles of ``tile_shape``, each made by
    ``make(tile_shape)`` when first indexed, then filled by ``fill(tile)`` (``nl.zeros``)."""

    def __init__(self, blocks: tuple[int, ...], tile_shape: tuple[int, ...], make, fill=None):
        self.blocks, self.tile_shape = blocks, tile_shape
        self._make, self._fill = make, fill
        self._tiles: dict[tuple[int, ...], NkiTensor] = {}
        self._first = None   # (the first tile: its dtype and memory describe them all)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.blocks + self.tile_shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        return self._tile((0,) * len(self.blocks)).dtype

    @property
    def buffer(self):
        return self._tile((0,) * len(self.blocks)).buffer

    def __len__(self) -> int:
        return self.blocks[0]

    def __repr__(self) -> str:
        return f"BlockTensor({list(self.blocks)} blocks of {list(self.tile_shape)})"

    def _tile(self, at: tuple[int, ...]) -> NkiTensor:
        tile = self._tiles.get(at)
        if tile is None:
            tile = self._tiles[at] = self._make(self.tile_shape)
            if self._fill is not None:
                self._fill(tile)
        return tile

    def _split(self, key) -> tuple[NkiTensor | BlockTensor, tuple]:
        key = key if type(key) is tuple else (key,)
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (self.ndim - len(key) + 1) + key[at + 1:]
        n = len(self.blocks)
        head, rest = key[:n], key[n:]
        at = []
        for dim, (k, size) in enumerate(zip(head, self.blocks)):
            if isinstance(k, (int, np.integer)) and -size <= k < size:
                at.append(int(k) % size)
            elif isinstance(k, (int, np.integer)):
                fail(f"index {k} is out of bounds for block dim {dim} of size {size}")
            else:
                fail(f"a block dim (the dims before nl.par_dim) is indexed by an int, one "
                     f"block at a time, not {type(k).__name__} (dim {dim})", unsupported=True)
        if len(at) < n:   # (t[i] of a 2-block-dim tensor: the blocks under i)
            sub = BlockTensor(self.blocks[len(at):], self.tile_shape, self._make, self._fill)
            sub._tiles = _Under(self._tiles, tuple(at))
            return sub, ()
        return self._tile(tuple(at)), rest

    def __getitem__(self, key):
        tile, rest = self._split(key)
        return tile[rest] if rest else tile

    def __setitem__(self, key, value) -> None:
        tile, rest = self._split(key)
        if isinstance(tile, BlockTensor):
            fail("assign into one block at a time (t[i] = ...)", unsupported=True)
        tile[rest if rest else ...] = value

    def __iter__(self):
        fail("iterating over a tensor is not supported; index it with t[i]", unsupported=True)


class _Under(dict):
    """The tiles of a block tensor under a fixed first index (``t[i]`` of a tensor with two
    block dims): a view of the parent's dict by the rest of the index."""

    def __init__(self, parent: dict, prefix: tuple[int, ...]) -> None:
        super().__init__()
        self.parent, self.prefix = parent, prefix

    def get(self, at, default=None):
        return self.parent.get(self.prefix + at, default)

    def __setitem__(self, at, tile) -> None:
        self.parent[self.prefix + at] = tile
