# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/tensor.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# tensor.matmul: isa/tensor.toml: [matmul]
MATMUL_DST = 0
MATMUL_STATIONARY = 1
MATMUL_MOVING = 2
MATMUL_ACCUMULATE = 3
MATMUL_PERF_MODE = 4
MATMUL_IS_TRANSPOSE = 5
MATMUL_IS_STATIONARY_ONEZERO = 6
MATMUL_IS_MOVING_ONEZERO = 7
MATMUL_TILE_POSITION = 8
MATMUL_TILE_SIZE = 9

# tensor.transpose: isa/tensor.toml: [transpose]
TRANSPOSE_DST = 0
TRANSPOSE_DATA = 1
