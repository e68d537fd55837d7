"""neuronemu.compiled.linking: a large jitted function's callers call its code by a symbol instead
of copying it, in the process that compiles them and in a later one that loads them from numba's
cache (where a symbol not found would abort the process, so these run in subprocesses)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from neuronemu.compiled import linking

REPO = Path(__file__).resolve().parents[2]

# A helper above the threshold (lowered here so the module stays small), two callers of it, a
# small helper still copied, and a C callback (as the instruction kernels are) calling the big one.
MODULE = textwrap.dedent('''
    import numpy as np
    from numba import carray, types
    from numba.core import sigutils
    from neuronemu.compiled import linking
    from neuronemu.compiled.jit import Kernel, jit

    linking.MIN_INSTRUCTIONS = 60

    @jit
    def big(a, k):
        s = 0.0
        for i in range(a.shape[0]):
            x = a[i]
            if k == 0:
                s += x * x - 3.0 * x
            elif k == 1:
                s += abs(x) + 2.0 * x
            else:
                s += x ** 3 - 2.0
        return s

    @jit
    def small(x):
        return x + 1.0

    @jit
    def first(a):
        return big(a, 0) + small(a[0])

    @jit
    def second(a, k):
        return big(a, k) * 2.0

    @jit
    def via_small(a):   # small: copied into its callers, with its call of big by symbol
        return big(a, 1) + 1.0

    @jit
    def outer(a):
        return via_small(a) * 3.0

    def _kernel(p, n):
        return int(big(carray(p, (n,)), 2))

    def kernel():
        sig = sigutils.normalize_signature(
            types.int64(types.CPointer(types.float64), types.int64))
        k = Kernel(_kernel, sig, locals={}, options={})
        k.enable_caching()
        k.compile()
        return k
''')

# A caller compiled in a process that loaded its (copied) callee from the cache: the callee's
# code calls big by symbol, so the caller's cached code must bring big in too.
NESTED = textwrap.dedent('''
    import json, sys
    import numpy as np
    import linked_mod as m
    a = np.arange(-20, 21) / 4.0
    f = m.via_small if sys.argv[1] == "small" else m.outer
    print(json.dumps({"value": f(a), "hits": sum(f.stats.cache_hits.values())}))
''')

DRIVER = textwrap.dedent('''
    import ctypes, json, sys
    import numpy as np
    import linked_mod as m
    from neuronemu.compiled import linking
    a = np.arange(-20, 21) / 4.0
    k = m.kernel()
    buf = np.ascontiguousarray(a)
    out = {
        "first": m.first(a), "second": m.second(a, 1),
        "kernel": k.ctypes(buf.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), buf.size),
        "first_hits": sum(m.first.stats.cache_hits.values()),
        "big_hits": sum(m.big.stats.cache_hits.values()),
        "kernel_hits": k.cache_hits,
    }
    print(json.dumps(out))
''')


def _expected(a: np.ndarray) -> dict:
    big = {0: float(np.sum(a * a - 3.0 * a)), 1: float(np.sum(np.abs(a) + 2.0 * a)),
           2: float(np.sum(a ** 3 - 2.0))}
    return {"first": big[0] + a[0] + 1.0, "second": big[1] * 2.0, "kernel": int(big[2])}


def _run(tmp: Path, cache: Path, script: str = DRIVER, *args: str) -> dict:
    import json

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(tmp), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def linked_module(tmp_path):
    (tmp_path / "linked_mod.py").write_text(MODULE)
    return tmp_path


def _check(values: dict, expected: dict) -> None:
    assert values["first"] == expected["first"]  # exact: quarters, cubed and summed
    assert values["second"] == expected["second"]
    assert values["kernel"] == expected["kernel"]


def test_cached_callers_find_the_function_they_call_in_a_new_process(linked_module, tmp_path):
    expected = _expected(np.arange(-20, 21) / 4.0)
    cache = tmp_path / "cache"
    compiled = _run(linked_module, cache)
    _check(compiled, expected)
    assert compiled["first_hits"] == compiled["big_hits"] == compiled["kernel_hits"] == 0
    # a new process loads the callers from the cache; each brings in ``big`` before its own code
    loaded = _run(linked_module, cache)
    _check(loaded, expected)
    assert loaded["first_hits"] >= 1 and loaded["big_hits"] >= 1 and loaded["kernel_hits"] == 1
    # ``big`` compiled again (its cache entries gone) gets numba's new serial number in its
    # mangled name: the cached callers still find it, by the symbol named after module,
    # function and argument types
    for index in cache.rglob("*big*"):
        if index.is_file():
            index.unlink()
        else:
            shutil.rmtree(index)
    again = _run(linked_module, cache)
    _check(again, expected)
    assert again["big_hits"] == 0 and again["first_hits"] >= 1 and again["kernel_hits"] == 1


def test_a_caller_of_a_cached_copied_helper_brings_in_what_the_helper_calls(linked_module,
                                                                          tmp_path):
    a = np.arange(-20, 21) / 4.0
    want = (float(np.sum(np.abs(a) + 2.0 * a)) + 1.0) * 3.0
    cache = tmp_path / "cache"
    assert _run(linked_module, cache, NESTED, "small")["hits"] == 0
    # outer compiled here, linking via_small as loaded from the cache
    compiled = _run(linked_module, cache, NESTED, "outer")
    assert compiled == {"value": want, "hits": 0}
    # outer loaded from the cache: big's symbol must be there before its code is linked
    assert _run(linked_module, cache, NESTED, "outer") == {"value": want, "hits": 1}


def test_callers_link_a_forwarder_not_a_copy(linked_module, monkeypatch):
    # (numba caches the module beside it, in tmp_path's __pycache__)
    monkeypatch.syspath_prepend(str(linked_module))
    sys.modules.pop("linked_mod", None)
    import linked_mod as m

    try:
        a = np.arange(-20, 21) / 4.0
        _check({"first": m.first(a), "second": m.second(a, 1), "kernel": _expected(a)["kernel"]},
               _expected(a))
        big = m.big.overloads[m.big.signatures[0]]
        symbol = linking.alias("linked_mod", "big", tuple(big.signature.args))
        shared = big.library._shared_module
        assert {f.name for f in shared.functions if f.is_declaration} >= {symbol}
        for caller in (m.first, m.second):
            module = caller.overloads[caller.signatures[0]].library._final_module
            defined = {f.name for f in module.functions if not f.is_declaration}
            declared = {f.name for f in module.functions if f.is_declaration}
            assert big.fndesc.mangled_name not in defined and symbol in declared
        small = m.small.overloads[m.small.signatures[0]]
        assert not any(f.name.startswith(linking.PREFIX)
                       for f in small.library._get_module_for_linking().functions)
    finally:
        sys.modules.pop("linked_mod", None)


def test_parameter_types_split_at_top_level_commas():
    assert linking._split_types("ptr, { ptr, i64 }, [2 x i64], i64") == [
        "ptr", "{ ptr, i64 }", "[2 x i64]", "i64"]
    assert linking._split_types("") == []
