"""Instruction semantics: one jitted function per table entry's ``semantics`` name.

Every function has the signature ``fn(ins, ops, imms, mems, regs, fmt, table) -> status``:
``ins`` is the instruction row, ``ops``/``imms`` the program's operand and immediate tables,
``mems`` the (sbuf, psum, hbm) byte arrays, ``regs`` the registers, ``fmt``/``table`` the dtype
format and decode tables. Argument k of the table entry is read with ``arg_value(ins, k)``.
"""
