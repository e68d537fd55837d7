# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/gpsimd.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# gpsimd.affine_select: isa/gpsimd.toml: [affine_select]
AFFINE_SELECT_DST = 0
AFFINE_SELECT_DATA = 1
AFFINE_SELECT_CMP_OP = 2
AFFINE_SELECT_ON_FALSE_VALUE = 3
AFFINE_SELECT_OFFSET = 4
AFFINE_SELECT_CHANNEL_MULTIPLIER = 5
AFFINE_SELECT_STEP = 6

# gpsimd.iota: isa/gpsimd.toml: [iota]
IOTA_DST = 0
IOTA_BASE = 1
IOTA_CHANNEL_MULTIPLIER = 2
IOTA_STEP = 3

# gpsimd.local_gather: isa/gpsimd.toml: [local_gather]
LOCAL_GATHER_DST = 0
LOCAL_GATHER_DATA = 1
LOCAL_GATHER_INDICES = 2
LOCAL_GATHER_NUM_ELEM_PER_IDX = 3
LOCAL_GATHER_NUM_VALID_INDICES = 4

# gpsimd.n_gather: isa/gpsimd.toml: [n_gather]
N_GATHER_DST = 0
N_GATHER_DATA = 1
N_GATHER_INDICES = 2

# gpsimd.nonzero_with_count: isa/gpsimd.toml: [nonzero_with_count]
NONZERO_WITH_COUNT_DST = 0
NONZERO_WITH_COUNT_SRC = 1
NONZERO_WITH_COUNT_INDEX_OFFSET = 2
NONZERO_WITH_COUNT_PADDING_VAL = 3

# gpsimd.partition_reduce: isa/gpsimd.toml: [partition_reduce]
PARTITION_REDUCE_DST = 0
PARTITION_REDUCE_DATA = 1
PARTITION_REDUCE_OP = 2

# gpsimd.sequence_bounds: isa/gpsimd.toml: [sequence_bounds]
SEQUENCE_BOUNDS_DST = 0
SEQUENCE_BOUNDS_SEGMENT_IDS = 1

# gpsimd.topk: isa/gpsimd.toml: [topk]
TOPK_VAL_DST = 0
TOPK_IDX_DST = 1
TOPK_SRC = 2
TOPK_N = 3
