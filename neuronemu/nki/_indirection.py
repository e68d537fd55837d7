"""NKI tensor indirection (``t.indirect(index)``, NeuronCore-v4) as operands of compute calls.

On the hardware the engine reads or writes the indirect columns itself. Here an indirect
operand becomes a tile of its own: read operands are gathered into it first
(``vector.indirect_gather``), a destination is written there and scattered back afterwards
(``vector.indirect_scatter``; gathered first as well when the call also reads it: a matmul
accumulating into PSUM, a predicated copy). The values are the hardware's; the modelled time
includes the gather and scatter on VectorE, which the hardware does not spend (docs/nki.md).
"""

from __future__ import annotations

from collections.abc import Callable

from neuronemu.nki._operands import mark_written, onchip
from neuronemu.nki._trace import NkiTensor, fail, tracer, user_site

# the NKI calls whose operands may be indirect views, and which operands (NKI 0.6's docs)
OPERANDS = {
    "tensor_copy": ("dst", "src"),
    "tensor_copy_predicated": ("dst", "predicate"),
    "tensor_tensor": ("dst", "data1"),
    "nc_matmul": ("dst", "stationary", "moving"),
}
TENSOR_GROUP = 32   # partitions sharing one offset list on the Tensor engine
OTHER_GROUP = 16    # on the Vector, Scalar and GpSimd engines


def has_indirect(values) -> bool:
    return any(isinstance(v, NkiTensor) and v._ti is not None for v in values)


def resolve(call: str, operands: dict[str, object], group: int,
            reads_dst: bool = False) -> tuple[dict[str, object], Callable[[], None]]:
    """``operands`` with each indirect view replaced by a tile of its [P, num_elem] shape; read
    ones are gathered now. Returns them and the function that scatters the destination back
    (call it after emitting the instruction)."""
    tr = tracer()
    allowed = OPERANDS.get(call, ())
    out = dict(operands)
    scatters = []
    for name, value in operands.items():
        if not isinstance(value, NkiTensor) or value._ti is None:
            continue
        if name not in allowed:
            fail(f"{call}: {name} is an indirect view (t.indirect(index)); tensor indirection "
                 f"applies to {', '.join(allowed) or 'no operand'} of {call}", unsupported=True)
        tile, index, count = value._ti
        kind = tile.kind if name == "dst" else "sbuf"
        column = tr.onchip(kind, tile._buffer.slot.dtype, (tile.shape[0], count), user_site(),
                           "indirect")
        keywords = {"indices": onchip(index, "index"), "group": str(group),
                    "count": str(count)}
        if name != "dst" or reads_dst:
            tr.emit("vector.indirect_gather", onchip(column, name), onchip(tile, name),
                    **keywords)
        if name == "dst":
            scatters.append((tile, column, keywords))
        out[name] = column

    def scatter() -> None:
        for tile, column, keywords in scatters:
            tr.emit("vector.indirect_scatter", onchip(tile, "dst"), onchip(column, "dst"),
                    **keywords)
            mark_written(tile)

    return out, scatter
