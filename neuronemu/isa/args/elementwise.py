# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/elementwise.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# elementwise.bn_aggr: isa/vector.toml: [bn_aggr]
BN_AGGR_DST = 0
BN_AGGR_DATA = 1

# elementwise.bn_stats: isa/vector.toml: [bn_stats]
BN_STATS_DST = 0
BN_STATS_DATA = 1

# elementwise.memset: isa/gpsimd.toml: [memset], isa/vector.toml: [memset]
MEMSET_DST = 0
MEMSET_VALUE = 1

# elementwise.reciprocal: isa/vector.toml: [reciprocal]
RECIPROCAL_DST = 0
RECIPROCAL_DATA = 1

# elementwise.scalar_tensor_tensor: isa/vector.toml: [scalar_tensor_tensor]
SCALAR_TENSOR_TENSOR_DST = 0
SCALAR_TENSOR_TENSOR_DATA = 1
SCALAR_TENSOR_TENSOR_OP0 = 2
SCALAR_TENSOR_TENSOR_OPERAND0 = 3
SCALAR_TENSOR_TENSOR_OP1 = 4
SCALAR_TENSOR_TENSOR_OPERAND1 = 5
SCALAR_TENSOR_TENSOR_REVERSE0 = 6
SCALAR_TENSOR_TENSOR_REVERSE1 = 7

# elementwise.tensor_copy: isa/gpsimd.toml: [tensor_copy], isa/gpsimd.toml: [tensor_copy_dynamic_src], isa/gpsimd.toml: [tensor_copy_dynamic_dst], isa/vector.toml: [tensor_copy], isa/vector.toml: [tensor_copy_dynamic_src], isa/vector.toml: [tensor_copy_dynamic_dst]
TENSOR_COPY_DST = 0
TENSOR_COPY_DATA = 1

# elementwise.tensor_copy_predicated: isa/vector.toml: [tensor_copy_predicated]
TENSOR_COPY_PREDICATED_DST = 0
TENSOR_COPY_PREDICATED_SRC = 1
TENSOR_COPY_PREDICATED_PREDICATE = 2
TENSOR_COPY_PREDICATED_REVERSE_PRED = 3

# elementwise.tensor_reduce: isa/vector.toml: [tensor_reduce]
TENSOR_REDUCE_DST = 0
TENSOR_REDUCE_DATA = 1
TENSOR_REDUCE_OP = 2
TENSOR_REDUCE_NEGATE = 3

# elementwise.tensor_scalar: isa/scalar.toml: [tensor_scalar], isa/gpsimd.toml: [tensor_scalar], isa/vector.toml: [tensor_scalar]
TENSOR_SCALAR_DST = 0
TENSOR_SCALAR_DATA = 1
TENSOR_SCALAR_OP0 = 2
TENSOR_SCALAR_OPERAND0 = 3
TENSOR_SCALAR_REVERSE0 = 4
TENSOR_SCALAR_OP1 = 5
TENSOR_SCALAR_OPERAND1 = 6
TENSOR_SCALAR_REVERSE1 = 7

# elementwise.tensor_scalar_reduce: isa/vector.toml: [tensor_scalar_reduce]
TENSOR_SCALAR_REDUCE_DST = 0
TENSOR_SCALAR_REDUCE_DATA = 1
TENSOR_SCALAR_REDUCE_OP0 = 2
TENSOR_SCALAR_REDUCE_OPERAND0 = 3
TENSOR_SCALAR_REDUCE_REDUCE_OP = 4
TENSOR_SCALAR_REDUCE_REDUCE_RES = 5

# elementwise.tensor_tensor: isa/gpsimd.toml: [tensor_tensor], isa/vector.toml: [tensor_tensor]
TENSOR_TENSOR_DST = 0
TENSOR_TENSOR_DATA1 = 1
TENSOR_TENSOR_DATA2 = 2
TENSOR_TENSOR_OP = 3

# elementwise.tensor_tensor_scan: isa/vector.toml: [tensor_tensor_scan]
TENSOR_TENSOR_SCAN_DST = 0
TENSOR_TENSOR_SCAN_DATA0 = 1
TENSOR_TENSOR_SCAN_DATA1 = 2
TENSOR_TENSOR_SCAN_INITIAL = 3
TENSOR_TENSOR_SCAN_OP0 = 4
TENSOR_TENSOR_SCAN_OP1 = 5
TENSOR_TENSOR_SCAN_REVERSE0 = 6
TENSOR_TENSOR_SCAN_REVERSE1 = 7

# elementwise.transpose32: isa/vector.toml: [transpose]
TRANSPOSE32_DST = 0
TRANSPOSE32_DATA = 1
