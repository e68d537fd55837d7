"""Multi-chip systems: topologies (issue 6; collectives and SPMD execution are not built yet)."""
