"""``nki.isa.constants``: the enums of ``nki.isa`` as a module of their own
(``from nki.isa.constants import oob_mode, dge_mode``), the same objects as ``nisa.oob_mode``,
``nisa.dge_mode``, ... ."""

from neuronemu.nki.isa import (
    dge_mode,
    engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
)

__all__ = ["dge_mode", "engine", "matmul_perf_mode", "nc_version", "oob_mode", "reduce_cmd"]
