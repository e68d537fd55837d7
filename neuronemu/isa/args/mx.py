# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/mx.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# mx.matmul_mx: isa/tensor.toml: [matmul_mx]
MATMUL_MX_DST = 0
MATMUL_MX_STATIONARY = 1
MATMUL_MX_MOVING = 2
MATMUL_MX_STATIONARY_SCALE = 3
MATMUL_MX_MOVING_SCALE = 4
MATMUL_MX_ACCUMULATE = 5
MATMUL_MX_TILE_POSITION = 6
MATMUL_MX_TILE_SIZE = 7

# mx.quantize_mx: isa/vector.toml: [quantize_mx]
QUANTIZE_MX_DST = 0
QUANTIZE_MX_SRC = 1
QUANTIZE_MX_DST_SCALE = 2
