# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/random.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# random.dropout: isa/vector.toml: [dropout]
DROPOUT_DST = 0
DROPOUT_DATA = 1
DROPOUT_PROB = 2

# random.rand2: isa/vector.toml: [rand2]
RAND2_DST = 0
RAND2_MIN = 1
RAND2_MAX = 2

# random.rand_get_state: isa/gpsimd.toml: [rand_get_state], isa/vector.toml: [rand_get_state]
RAND_GET_STATE_DST = 0

# random.rand_set_state: isa/gpsimd.toml: [rand_set_state], isa/vector.toml: [rand_set_state]
RAND_SET_STATE_SRC = 0

# random.rng: isa/gpsimd.toml: [rng], isa/vector.toml: [rng]
RNG_DST = 0

# random.set_rng_seed: isa/vector.toml: [set_rng_seed]
SET_RNG_SEED_SEED = 0
