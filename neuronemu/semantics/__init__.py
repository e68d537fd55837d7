"""Instruction semantics: one jitted function per table entry's ``semantics`` name.

Every function has the signature ``fn(ins, ops, imms, mems, regs, fmt, table) -> status``:
``ins`` is the instruction row, ``ops``/``imms`` the program's operand and immediate tables,
``mems`` the (sbuf, psum, hbm) byte arrays, ``regs`` the registers, ``fmt``/``table`` the dtype
format and decode tables. An argument of the table entry is read by its generated name:
``arg_value(ins, TENSOR_SCALAR_OP1)``, from ``neuronemu.isa.args.<module>`` (tools/gen_isa.py;
the name is the argument's position in the entry's ``args``, imported by name so that numba
types it as the literal it is and compiles the same code as ``arg_value(ins, 5)``).
"""
