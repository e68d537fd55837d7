"""Cycle-approximate timing: the cost model and dependency tracking (model.py, jitted) and the
reports built from it (report.py)."""
