# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/indirection.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# indirection.indirect_gather: isa/vector.toml: [indirect_gather]
INDIRECT_GATHER_DST = 0
INDIRECT_GATHER_DATA = 1
INDIRECT_GATHER_INDICES = 2
INDIRECT_GATHER_GROUP = 3
INDIRECT_GATHER_COUNT = 4

# indirection.indirect_scatter: isa/vector.toml: [indirect_scatter]
INDIRECT_SCATTER_DST = 0
INDIRECT_SCATTER_SRC = 1
INDIRECT_SCATTER_INDICES = 2
INDIRECT_SCATTER_GROUP = 3
INDIRECT_SCATTER_COUNT = 4
