"""Execution: the numba-jitted interpreter core and its Python driver (imported lazily)."""
