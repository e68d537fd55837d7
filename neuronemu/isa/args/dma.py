# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/dma.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# dma.accumulate: isa/dma.toml: [accumulate]
ACCUMULATE_DST = 0
ACCUMULATE_SRC = 1
ACCUMULATE_QUEUE = 2

# dma.compress: isa/dma.toml: [compress]
COMPRESS_DST = 0
COMPRESS_SRC = 1
COMPRESS_QUEUE = 2
COMPRESS_DGE = 3

# dma.compute: isa/dma.toml: [compute]
COMPUTE_DST = 0
COMPUTE_SRC0 = 1
COMPUTE_SRC1 = 2
COMPUTE_SRC2 = 3
COMPUTE_SRC3 = 4
COMPUTE_SRC4 = 5
COMPUTE_SRC5 = 6
COMPUTE_SRC6 = 7
COMPUTE_SRC7 = 8
COMPUTE_QUEUE = 9

# dma.copy: isa/dma.toml: [copy]
COPY_DST = 0
COPY_SRC = 1
COPY_QUEUE = 2
COPY_DGE = 3
COPY_OOB = 4

# dma.decompress: isa/dma.toml: [decompress]
DECOMPRESS_DST = 0
DECOMPRESS_SRC = 1
DECOMPRESS_QUEUE = 2
DECOMPRESS_DGE = 3

# dma.gather: isa/dma.toml: [gather]
GATHER_DST = 0
GATHER_TABLE = 1
GATHER_INDEX = 2
GATHER_QUEUE = 3
GATHER_OOB = 4

# dma.scatter: isa/dma.toml: [scatter]
SCATTER_TABLE = 0
SCATTER_SRC = 1
SCATTER_INDEX = 2
SCATTER_QUEUE = 3
SCATTER_OOB = 4

# dma.transpose: isa/dma.toml: [transpose]
TRANSPOSE_DST = 0
TRANSPOSE_SRC = 1
TRANSPOSE_QUEUE = 2
