"""Assembler: parser, table-driven operand checks, one resolver with plans, lowering to program
arrays."""
