"""``neuronemu debug kernel.py``: run the script until it calls its first NKI kernel (``@nki.jit``
kernel call, ``nki.run`` or ``nki.simulate``), and hand that kernel's trace to the debugger."""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from neuronemu.errors import InputError, NeuronemuError
from neuronemu.source import Location, SourceFile


class _Traced(BaseException):
    """Carries the trace out of the script (a BaseException: the script's own ``except
    Exception`` does not catch it)."""

    def __init__(self, trace):
        super().__init__()
        self.trace = trace


def trace_script(path: str, argv: list[str] | None = None, kernel: str | None = None):
    """The ``KernelTrace`` of the first kernel the script runs (named ``kernel``, if given)."""
    from neuronemu import nki

    def hook(tr) -> None:
        if kernel is None or tr.asm_name == f"{kernel}.nki.s":
            raise _Traced(tr)

    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    nki.TRACE_HOOKS.append(hook)
    try:
        runpy.run_path(path, run_name="__main__")
    except _Traced as found:
        return found.trace
    except NeuronemuError:
        raise
    except SystemExit as e:
        raise InputError(f"{path} exited (status {e.code}) before it ran an NKI kernel") from None
    except Exception as e:  # noqa: BLE001 - whatever the user's script raises, located
        raise _script_error(path, e) from None
    finally:
        nki.TRACE_HOOKS.remove(hook)
        sys.argv, sys.path[:] = saved_argv, saved_path
    which = f"a kernel named {kernel}" if kernel else "an NKI kernel"
    raise InputError(f"{path} ran to its end without running {which}: call the kernel at the "
                     f"script's top level (kernel(x), nki.run(kernel, x) or "
                     f"nki.simulate(kernel)(x))")


def _script_error(path: str, error: Exception) -> InputError:
    """The script's own exception, located at its innermost line in the script."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path)]
    message = f"the script raised {type(error).__name__}: {error}"
    if not frames:
        return InputError(f"{path}: {message}")
    frame = frames[-1]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return InputError(message, Location(SourceFile(path, text), frame.lineno or 1, 1))
