# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/scalar.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# scalar.activate2: isa/scalar.toml: [activate2]
ACTIVATE2_DST = 0
ACTIVATE2_DATA = 1
ACTIVATE2_FUNC = 2
ACTIVATE2_IMM0 = 3
ACTIVATE2_IMM1 = 4
ACTIVATE2_OP0 = 5
ACTIVATE2_OP1 = 6
ACTIVATE2_RELU_PARAM = 7
ACTIVATE2_REVERSE0 = 8
ACTIVATE2_REVERSE1 = 9
ACTIVATE2_REDUCE_RES = 10
ACTIVATE2_REDUCE_OP = 11
ACTIVATE2_REDUCE_CMD = 12

# scalar.activation: isa/scalar.toml: [activation]
ACTIVATION_DST = 0
ACTIVATION_DATA = 1
ACTIVATION_FUNC = 2
ACTIVATION_SCALE = 3
ACTIVATION_BIAS = 4
ACTIVATION_REDUCE_RES = 5
ACTIVATION_ALPHA = 6

# scalar.activation_reduce: isa/scalar.toml: [activation_reduce]
ACTIVATION_REDUCE_DST = 0
ACTIVATION_REDUCE_DATA = 1
ACTIVATION_REDUCE_FUNC = 2
ACTIVATION_REDUCE_SCALE = 3
ACTIVATION_REDUCE_BIAS = 4
ACTIVATION_REDUCE_REDUCE_RES = 5
ACTIVATION_REDUCE_ALPHA = 6
ACTIVATION_REDUCE_REDUCE_OP = 7
