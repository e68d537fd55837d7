"""Calls with the wrong arguments: ``checked`` wraps the public functions of ``nki.isa`` /
``nki.language`` so that a call whose arguments do not bind (an unknown keyword, a missing
argument) is a located ``NkiUnsupported`` at the kernel's line naming the NKI 0.6 signature,
never Python's TypeError. (Which NKI version a name belongs to: ``versions``.)
"""

from __future__ import annotations

import functools
import inspect

from neuronemu.nki.versions import COLLECTIVES_06, ISA_06, LANGUAGE_06

_SETS = {"isa": ISA_06, "language": LANGUAGE_06, "collectives": COLLECTIVES_06}


def checked(namespace: str, func):
    """``func`` whose argument-binding errors are located NKI diagnostics (see module doc)."""
    if getattr(func, "_nki_checked", False):
        return func
    params = list(inspect.signature(func).parameters.values())
    if [p.kind for p in params] == [inspect.Parameter.VAR_POSITIONAL,
                                    inspect.Parameter.VAR_KEYWORD]:
        return func   # (*args, **kwargs): it binds them itself (the table-driven calls)

    @functools.wraps(func)
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except TypeError as error:
            if error.__traceback__ is None or error.__traceback__.tb_next is not None:
                raise   # raised inside the function: not a binding error
            retried = _older_argument(func, args, kwargs)
            if retried is not None:
                return retried()
            _binding_error(namespace, func, error)

    call._nki_checked = True
    return call


def _older_argument(func, args, kwargs):
    """``dtype=`` of NKI 0.2's ISA calls, when it repeats the ``dst``'s dtype (0.3+ takes the
    output type from ``dst``): accepted and dropped. A ``dtype=`` that disagrees with ``dst``
    stays an error."""
    from neuronemu.nki._trace import fail, numpy_dtype

    if "dtype" not in kwargs:
        return None
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return None
    if "dtype" in params or "dst" not in params:
        return None
    rest = {k: v for k, v in kwargs.items() if k != "dtype"}
    try:
        bound = inspect.signature(func).bind(*args, **rest)
    except TypeError:
        return None
    dst = bound.arguments.get("dst")
    if dst is None or not hasattr(dst, "dtype"):
        return None
    if numpy_dtype(kwargs["dtype"]) != numpy_dtype(dst.dtype):
        fail(f"{func.__name__}(dtype={kwargs['dtype']}) differs from dst's dtype "
             f"{dst.dtype}: since NKI 0.3 the output type is dst's; allocate dst with the "
             f"dtype wanted and drop dtype=", unsupported=True)
    return lambda: func(*args, **rest)


def _binding_error(namespace: str, func, error: TypeError):
    from neuronemu.nki._trace import fail

    try:
        sig = str(inspect.signature(func))
    except (TypeError, ValueError):
        sig = "(...)"
    text = str(error)
    name = func.__name__
    prefix = "nl" if namespace == "language" else "nisa" if namespace == "isa" else namespace
    if "unexpected keyword argument" in text:
        key = text.split("unexpected keyword argument")[-1].strip(" '\"")
        message = f"{prefix}.{name}() has no argument '{key}' in NKI 0.6"
    else:
        message = f"{prefix}.{name}(): {text.split(': ', 1)[-1] if ': ' in text else text}"
    fail(message, f"NKI 0.6 signature: {prefix}.{name}{sig}", unsupported=True)


def check_module(namespace: str, module) -> None:
    """Wrap every NKI 0.6 function ``module`` defines with ``checked``."""
    public = _SETS[namespace]
    for key, value in list(vars(module).items()):
        if key in public and inspect.isfunction(value):
            setattr(module, key, checked(namespace, value))
