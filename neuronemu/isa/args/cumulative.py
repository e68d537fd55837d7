# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/cumulative.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# cumulative.exponential: isa/vector.toml: [exponential]
EXPONENTIAL_DST = 0
EXPONENTIAL_SRC = 1
EXPONENTIAL_MAX_VALUE = 2
EXPONENTIAL_REDUCE_RES = 3
EXPONENTIAL_REDUCE_CMD = 4
EXPONENTIAL_REDUCE_INIT = 5

# cumulative.range_select: isa/vector.toml: [range_select]
RANGE_SELECT_DST = 0
RANGE_SELECT_ON_TRUE = 1
RANGE_SELECT_COMP_OP0 = 2
RANGE_SELECT_COMP_OP1 = 3
RANGE_SELECT_BOUND0 = 4
RANGE_SELECT_BOUND1 = 5
RANGE_SELECT_REDUCE_RES = 6
RANGE_SELECT_REDUCE_CMD = 7
RANGE_SELECT_RANGE_START = 8
RANGE_SELECT_ON_FALSE_VALUE = 9

# cumulative.tensor_scalar_cumulative: isa/vector.toml: [tensor_scalar_cumulative]
TENSOR_SCALAR_CUMULATIVE_DST = 0
TENSOR_SCALAR_CUMULATIVE_SRC = 1
TENSOR_SCALAR_CUMULATIVE_OP0 = 2
TENSOR_SCALAR_CUMULATIVE_OP1 = 3
TENSOR_SCALAR_CUMULATIVE_IMM0 = 4
TENSOR_SCALAR_CUMULATIVE_IMM1 = 5
TENSOR_SCALAR_CUMULATIVE_REDUCE_CMD = 6
TENSOR_SCALAR_CUMULATIVE_REVERSE0 = 7
