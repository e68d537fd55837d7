# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/ctrl.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# ctrl.add: isa/ctrl.toml: [add]
ADD_RD = 0
ADD_RA = 1
ADD_B = 2

# ctrl.beq: isa/ctrl.toml: [beq]
BEQ_A = 0
BEQ_B = 1
BEQ_TARGET = 2

# ctrl.bge: isa/ctrl.toml: [bge]
BGE_A = 0
BGE_B = 1
BGE_TARGET = 2

# ctrl.blt: isa/ctrl.toml: [blt]
BLT_A = 0
BLT_B = 1
BLT_TARGET = 2

# ctrl.bne: isa/ctrl.toml: [bne]
BNE_A = 0
BNE_B = 1
BNE_TARGET = 2

# ctrl.div: isa/ctrl.toml: [div]
DIV_RD = 0
DIV_RA = 1
DIV_B = 2

# ctrl.jmp: isa/ctrl.toml: [jmp]
JMP_TARGET = 0

# ctrl.load: isa/ctrl.toml: [load]
LOAD_RD = 0
LOAD_SRC = 1

# ctrl.mov: isa/ctrl.toml: [mov]
MOV_RD = 0
MOV_VALUE = 1

# ctrl.mul: isa/ctrl.toml: [mul]
MUL_RD = 0
MUL_RA = 1
MUL_B = 2

# ctrl.rank: isa/ctrl.toml: [rank]
RANK_RD = 0

# ctrl.rem: isa/ctrl.toml: [rem]
REM_RD = 0
REM_RA = 1
REM_B = 2

# ctrl.store: isa/ctrl.toml: [store]
STORE_DST = 0
STORE_RA = 1

# ctrl.sub: isa/ctrl.toml: [sub]
SUB_RD = 0
SUB_RA = 1
SUB_B = 2

# ctrl.world: isa/ctrl.toml: [world]
WORLD_RD = 0
