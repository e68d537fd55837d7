"""``nki.typing``: the annotation types of NKI kernels (``from nki.typing import tensor``;
``def k(x: nt.tensor[128, 512]) -> nt.tensor: ...``). Annotations are not checked: a traced
kernel receives the same tensors whatever its annotations say."""

from __future__ import annotations

from neuronemu.nki._trace import NkiTensor


class _Annotation(NkiTensor):
    """``tensor`` and ``tensor[shape...]`` (or ``[shape, dtype]``) in annotations."""

    def __class_getitem__(cls, item):
        return cls


class tensor(_Annotation):
    """An NKI tensor argument or value (``nt.tensor[P, F]`` in annotations)."""


class mutable_tensor(_Annotation):
    """A tensor argument the kernel writes (an in/out argument)."""


class scalar:
    """A Python scalar argument."""

    def __class_getitem__(cls, item):
        return cls


__all__ = ["mutable_tensor", "scalar", "tensor"]
