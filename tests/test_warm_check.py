"""tools/warm_check.py, the check CI runs right after `neuronemu warm`, finds a unit warm did
not compile: here the host-side fp64 encoder an `init=arange` int32 input takes (warm missed it
before issue 29), removed from a copy of this version's warm cache."""

from __future__ import annotations

import shutil

import pytest

from neuronemu.compiled import cache
from neuronemu.exec import kernels
from tools import warm_check


def test_the_tour_reports_a_unit_missing_from_the_warm_cache(tmp_path):
    if not all(kernels.is_ready(e) for e in kernels.all_entries()):
        pytest.skip("this version's compiled-code cache is cold (run `neuronemu warm` first)")
    copy = tmp_path / "numba" / "neuronemu" / cache.toolchain_key()
    shutil.copytree(cache.cache_dir(), copy)
    encoder = copy / cache.unit_folder("neuronemu.numerics.cast")
    removed = list(encoder.glob("cast.encode_array64-*.nb[ic]"))
    if not removed:
        pytest.skip("the warm cache lacks the fp64 encoder (run `neuronemu warm` first)")
    for path in removed:
        path.unlink()
    compiled = warm_check.compiled_during_tour({"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert compiled == ["neuronemu.numerics.cast.encode_array64"]
