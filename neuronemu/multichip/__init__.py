"""Multi-chip systems: topologies (topology.py), link timing (network.py), collective algorithms
(collectives.py) and the SPMD driver that runs one kernel on every rank (spmd.py)."""
