"""The cost table: ``isa/costs.toml`` packed into an array the compiled timing code indexes
(one row per cost class, by the class's code; the columns below)."""

from __future__ import annotations

import numpy as np

# cost_table columns
C_FORMULA = 0
C_PER_ELEMENT = 1
C_FAST_PER_ELEMENT = 2
C_MIN_II = 3
C_FIXED = 4
C_EXTRA_OUTPUT = 5
C_FP32_FACTOR = 6
C_EFFICIENCY = 7
C_SBUF_EFFICIENCY = 8
C_INDEXED = 9
C_LATENCY = 10
C_STATIONARY_LOAD = 11
COST_WIDTH = 12
FORMULAS = {"free": 0, "stream": 1, "two_input": 2, "matmul": 3, "transpose": 4, "dma": 5,
            "network": 6}
F_FREE, F_STREAM, F_TWO_INPUT, F_MATMUL, F_TRANSPOSE, F_DMA, F_NETWORK = range(7)


def cost_table(isa) -> np.ndarray:
    rows = np.zeros((len(isa.costs), COST_WIDTH), dtype=np.float64)
    for c in isa.costs.values():
        rows[c.code] = (FORMULAS[c.formula], c.per_element, c.fast_per_element, c.min_ii, c.fixed,
                        c.extra_output, c.fp32_factor, c.efficiency, c.sbuf_efficiency, c.indexed,
                        c.latency, c.stationary_load)
    return rows
