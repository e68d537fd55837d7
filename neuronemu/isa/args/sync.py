# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/sync.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# sync.barrier: isa/sync.toml: [barrier]

# sync.signal: isa/sync.toml: [signal]
SIGNAL_TRACK = 0
SIGNAL_SEM = 1

# sync.wait: isa/sync.toml: [wait]
WAIT_TRACK = 0
WAIT_SEM = 1
WAIT_VALUE = 2
