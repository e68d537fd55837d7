"""Assembler: lark front end, table-driven operand checks, lowering to program arrays."""
