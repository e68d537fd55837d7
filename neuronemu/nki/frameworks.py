"""The caller's arrays: numpy / ml_dtypes, torch (CPU) and jax, as ``@nki.jit`` accepts them.

NKI's ``@nki.jit`` detects the framework from its arguments and returns that framework's
arrays; so does neuronemu.nki. torch and jax are optional: nothing here imports them unless
the caller passes one of their arrays (so they are never a dependency)."""

from __future__ import annotations

import sys

import numpy as np

_TORCH_VIEWS = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
                "float8_e5m2": ("uint8", "float8_e5m2")}
"""torch dtypes numpy cannot hold: (the same-size int dtype to view through, ml_dtypes name)."""


def kind(value) -> str | None:
    """'numpy', 'torch', 'jax' or None (not an array)."""
    if isinstance(value, np.ndarray):
        return "numpy"
    module = type(value).__module__ or ""
    if module.startswith("torch") and "torch" in sys.modules and hasattr(value, "detach"):
        return "torch"
    if module.startswith(("jax", "jaxlib")) and "jax" in sys.modules:
        return "jax"
    return None


def to_numpy(value) -> np.ndarray | None:
    """The numpy / ml_dtypes array of a kernel argument (None: not an array; passed as a
    Python value)."""
    k = kind(value)
    if k == "numpy":
        return value
    if k == "torch":
        import ml_dtypes

        t = value.detach().cpu().contiguous()
        name = str(t.dtype).removeprefix("torch.")
        if name in _TORCH_VIEWS:
            import torch

            as_int, ml = _TORCH_VIEWS[name]
            return t.view(getattr(torch, as_int)).numpy().view(getattr(ml_dtypes, ml))
        return t.numpy()
    if k == "jax":
        return np.asarray(value)
    return None


def like(array: np.ndarray, example):
    """``array`` as the kind of array ``example`` is (numpy stays numpy)."""
    k = kind(example)
    if k == "torch":
        import torch

        name = str(array.dtype)
        if name in _TORCH_VIEWS:
            as_int, _ = _TORCH_VIEWS[name]
            return torch.from_numpy(np.ascontiguousarray(array).view(as_int)).view(
                getattr(torch, name))
        return torch.from_numpy(np.ascontiguousarray(array))
    if k == "jax":
        import jax.numpy as jnp

        return jnp.asarray(array)
    return array


def update(caller, final: np.ndarray) -> bool:
    """Write ``final`` into the caller's array in place; False when that cannot be done
    (a jax array, a read-only numpy array)."""
    k = kind(caller)
    if k == "numpy":
        if not caller.flags.writeable:
            return False
        np.copyto(caller, final.astype(caller.dtype, copy=False))
        return True
    if k == "torch":
        with __import__("torch").no_grad():
            caller.copy_(like(final, caller).reshape(caller.shape))
        return True
    return False
