"""``neuronxcc.nki.isa``: the ISA calls as NKI 0.2+ writes them (``dst`` first). 0.1's form,
which returns a new tile, is not run yet: a call whose arguments do not bind says so at the
kernel's line."""

from __future__ import annotations

import functools

from neuronemu.nki import isa as _isa
from neuronemu.nki._trace import NkiUnsupported, fail


def __getattr__(name: str):
    value = getattr(_isa, name)
    if not callable(value) or isinstance(value, type):
        return value

    @functools.wraps(value)
    def call(*args, **kwargs):
        try:
            return value(*args, **kwargs)
        except NkiUnsupported as error:
            if "dst" in kwargs or not error.message.startswith(f"nisa.{name}()"):
                raise
            fail(f"nisa.{name} without dst= (NKI 0.1's call that returns a new tile) is not "
                 f"run yet: allocate the result and pass it as dst=, as NKI 0.2+ does",
                 *error.notes, unsupported=True)

    return call
