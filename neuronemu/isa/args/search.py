# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/search.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# search.find_index8: isa/vector.toml: [find_index8]
FIND_INDEX8_DST = 0
FIND_INDEX8_DATA = 1
FIND_INDEX8_VALS = 2

# search.match_replace8: isa/vector.toml: [match_replace8]
MATCH_REPLACE8_DST = 0
MATCH_REPLACE8_DATA = 1
MATCH_REPLACE8_VALS = 2
MATCH_REPLACE8_IMM = 3
MATCH_REPLACE8_DST_IDX = 4

# search.max8: isa/vector.toml: [max8]
MAX8_DST = 0
MAX8_DATA = 1

# search.select_reduce: isa/vector.toml: [select_reduce]
SELECT_REDUCE_DST = 0
SELECT_REDUCE_PREDICATE = 1
SELECT_REDUCE_ON_TRUE = 2
SELECT_REDUCE_ON_FALSE = 3
SELECT_REDUCE_REDUCE_RES = 4
SELECT_REDUCE_REVERSE_PRED = 5

# search.stream_shuffle: isa/vector.toml: [stream_shuffle]
STREAM_SHUFFLE_DST = 0
STREAM_SHUFFLE_SRC = 1
STREAM_SHUFFLE_MASK = 2
