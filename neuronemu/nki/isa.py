"""``nki.isa`` (NKI 0.6.0 names and signatures, ``dst`` first) lowered to neuronemu instructions.

Each function appends one instruction (the ``nki =`` field of ``isa/*.toml`` names the pairs)
to the kernel being traced. Shapes, dtypes and memory spaces are checked by neuronemu's
assembler; its errors are reported at the kernel's Python line. Calls this module does not
implement raise ``NkiUnsupported`` at the calling line (see ``__getattr__``)."""

from __future__ import annotations

import enum
import itertools
import math
import sys

import numpy as np

from neuronemu.nki import _emit, _indirection
from neuronemu.nki._operands import (
    act_name,
    alu_name,
    bool_text,
    mark_written,
    number,
    onchip,
    reduce_name,
    scalar_operand,
    tile_arg,
    unused,
)
from neuronemu.nki._trace import (
    HOOKS,
    NkiError,
    NKIObject,
    NkiTensor,
    dtype_name,
    fail,
    tracer,
    unsupported_name,
    user_site,
)

# ------------------------------------------------------------------------------------------
# config enums (values are neuronemu's spellings)


class engine:
    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    dma = "dma"
    sync = "sync"


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd:
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class dge_mode:
    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class oob_mode:
    error = "error"
    skip = "skip"


class matmul_perf_mode:
    none = "none"
    double_row = "double_row"


class nc_version(enum.IntEnum):
    """NeuronCore generations; an enum as in NKI (harnesses read ``.name``: "gen3")."""
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine:
    dma = "dma"
    gpsimd_dma = "gpsimd_dma"


NkiValidationError = NkiError
"""What NKI raises when a call breaks a hardware rule: neuronemu's located error, so that an
``except nisa.NkiValidationError`` in a kernel's harness catches it."""


class NkiInstruction(NKIObject):
    """The handle type NKI 0.6's ISA calls return (for annotations and isinstance). neuronemu's
    calls return None: a scheduling edge (``depends_on``) adds nothing here, where every
    instruction already waits for the data it reads (auto sync)."""


def get_nc_version():
    """The NeuronCore generation of the target being traced (trn1 -> gen2, trn2 -> gen3, ...)."""
    return getattr(nc_version, tracer().target_data.nki_version)   # isa/targets.toml


def get_nc_sub_version() -> int:
    """The silicon revision within the generation: 0 (neuronemu models the first revision of
    each target)."""
    tracer()
    return 0


# ------------------------------------------------------------------------------------------
# data movement


def dma_copy(dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown,
             engine=engine.unknown, name=None, **removed):
    """dst = src by DMA (``dma.copy``). The queue is chosen round-robin (see
    ``neuronemu.nki.run(dma_queues=...)``); ``priority`` (QoS) and ``engine`` (which engine
    generates hardware descriptors) are accepted and change nothing modelled. A ``[1, N]``
    source broadcast with ``.broadcast_to((P, N))`` is a DMA partition broadcast. A source or
    destination ``.ap(..., vector_offset=idx, indirect_dim=0)`` of an HBM tensor is an indirect
    gather (``dma.gather``) or scatter (``dma.scatter``) of whole rows."""
    tr = tracer()
    if "dst_rmw_op" in removed:
        fail("dma_copy(dst_rmw_op=...) was removed in NKI 0.3",
             "read-modify-write: nisa.dma_compute(dst=d, srcs=[d, src], reduce_op=nl.add)",
             unsupported=True)
    for key in removed:
        fail(f"dma_copy() got an unexpected argument {key!r}",
             "arguments: dst, src, priority, oob_mode, dge_mode, engine, name")
    if not isinstance(src, NkiTensor):
        fail(f"src must be a tensor, got {type(src).__name__}")
    if not isinstance(dst, NkiTensor):
        fail(f"dst must be a tensor, got {type(dst).__name__}")
    d = tile_arg(dst, "dst") if dst._broadcast is not None else dst
    if src.kind == "psum" or d.kind == "psum":
        fail("DMA cannot read or write PSUM (NKI 0.4+): copy PSUM to SBUF with "
             "nisa.tensor_copy first")
    if src._broadcast is not None and src._broadcast != d.shape[0]:
        fail(f"src is broadcast to {src._broadcast} partitions but dst has {d.shape[0]}")
    if oob_mode not in ("error", "skip", None):
        fail(f"oob_mode={oob_mode!r}: nisa.oob_mode.error or nisa.oob_mode.skip")
    kw = {"queue": tr.next_queue()}
    if dge_mode == "hwdge":
        kw["dge"] = "hw"
    if oob_mode == "skip" and src._indirect is None and d._indirect is None:
        # a scalar_offset view wholly outside its tensor is not moved (dma.copy oob=skip)
        kw["oob"] = "skip"
    if src._indirect is not None or d._indirect is not None:
        _indirect_copy(tr, d, src, oob_mode, kw)
        return
    d, src = _as_row(d, src), _as_row(src, d)
    tr.emit("dma.copy", d.operand(tr), src.operand(tr), **kw)


def _as_row(t: NkiTensor, other: NkiTensor) -> NkiTensor:
    """``tile[0, :]`` and ``hbm[0, :]`` both have shape [N], but on chip the indexed partition
    stays the one partition of the operand while in HBM the next dim becomes the partitions:
    copied into or out of such a tile, or of a [1, N] tile, an HBM view of shape [N] is one
    row, [1, N]."""
    if t.kind != "hbm" or t._ap is not None or t._broadcast is not None or other.kind == "hbm":
        return t
    if (other._ap is None and isinstance(other._index[0], int)
            and tuple(t.shape) == tuple(other.shape)):
        return t.reshape((1,) + tuple(t.shape))
    # hbm[i, :] (shape [N]) into or out of a [1, N] tile: one row too
    if (len(t.shape) == 1 and len(other.shape) == 2 and other.shape[0] == 1
            and other.shape[1] == t.shape[0]):
        return t.reshape((1, t.shape[0]))
    return t


def _gathered(tr, src: NkiTensor, oob) -> NkiTensor:
    """A new SBUF tile holding what the vector_offset view ``src`` picks (``dma.gather``)."""
    tile = tr.onchip("sbuf", src._buffer.slot.dtype, tuple(src.shape), user_site(), "gathered")
    _indirect_copy(tr, tile, src, oob, {"queue": tr.next_queue()})
    return tile


def _indirect_copy(tr, dst: NkiTensor, src: NkiTensor, oob, kw: dict) -> None:
    """A vector-offset copy: whole rows of an HBM tensor picked per partition."""
    if src._indirect is not None and dst._indirect is not None:
        fail("only one side of a DMA copy can be indirect (vector_offset)")
    kw.pop("dge", None)
    if oob == "skip":   # a partition whose row is outside the table is not transferred
        kw["oob"] = "skip"
    if src._indirect is not None:
        table, index, _ = src._indirect
        tr.emit("dma.gather", onchip(dst, "dst"), table.operand(tr),
                index=onchip(index, "vector_offset"), **kw)
    else:
        table, index, _ = dst._indirect
        tr.emit("dma.scatter", table.operand(tr), onchip(src, "src"),
                index=onchip(index, "vector_offset"), **kw)


def dma_compute(dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=oob_mode.error,
                name=None):
    """dst = srcs[0] + srcs[1] + ... by the DMA engines in fp32 (``dma.compute``, up to 8
    sources); ``dst`` given again as the first source in SBUF on trn3 is ``dma.accumulate``.
    Only ``reduce_op=nl.add`` with unit ``scales``, as in NKI."""
    tr = tracer()
    if reduce_name(reduce_op, "reduce_op") != "add":
        fail("dma_compute supports reduce_op=nl.add only (as NKI does)")
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    if scales is not None and any(float(s) != 1.0 for s in scales):
        fail(f"dma_compute scales={list(scales)!r}: every scale must be 1.0 (as NKI requires)")
    if not unique_indices:
        fail("dma_compute(unique_indices=False) is not supported (nor by NKI)", unsupported=True)
    unused("oob_mode", oob_mode, "error")
    d = tile_arg(dst, "dst")
    if not 2 <= len(srcs) <= 8:
        fail(f"dma_compute takes 2 to 8 sources here, got {len(srcs)}")
    for k, s in enumerate(srcs):
        if not isinstance(s, NkiTensor):
            fail(f"srcs[{k}] must be a tensor, got {type(s).__name__}")
        if s.kind == "psum":
            fail(f"srcs[{k}] is in PSUM; DMA reads HBM or SBUF")
    for k, s in enumerate(srcs):
        if s._indirect is not None:
            # a vector_offset source (rows picked per partition, nki-library's top-k
            # reduction): gathered into an SBUF tile first, then summed with the others
            srcs[k] = _gathered(tr, s, oob_mode)
    same = [k for k, s in enumerate(srcs) if s._buffer is d._buffer and s.region() == d.region()]
    if (len(srcs) == 2 and same and d.kind == "sbuf" and tr.target == "trn3"):
        other = srcs[1 - same[0]]
        tr.emit("dma.accumulate", d.operand(tr), other.operand(tr), queue=tr.next_queue())
        return
    tr.emit("dma.compute", d.operand(tr), *(s.operand(tr) for s in srcs),
            queue=tr.next_queue())


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown,
                  oob_mode=oob_mode.error, name=None):
    """dst[j, i] = src[i, j] by DMA (``dma.transpose``; 2- and 4-byte dtypes). A 3-D or 4-D
    src (NKI's permutations (2, 1, 0) and (3, 1, 2, 0): the first and last dims swap, the
    middle ones stay) is one 2-D transpose per index of its middle dims (nki-library turns a
    [N, 1, 1, 1] column into a [1, 1, 1, N] row, and [128, 1, 4, 128] blocks of K into
    [128, 1, 4, 128] blocks of K^T). A ``vector_offset`` source (the indirect transpose) is
    gathered into SBUF by ``dma.gather`` first."""
    tr = tracer()
    d, s = tile_arg(dst, "dst"), tile_arg(src, "src")
    if s._indirect is not None:
        # the indirect transpose (rows picked per partition by vector_offset, attention_tkg's
        # block-KV cache): the rows are gathered into an SBUF tile by dma.gather, then
        # transposed from there (two transfers where the hardware's software DGE makes one)
        s = _gathered(tr, s, oob_mode)
    shape = tuple(s.shape)
    permutation = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(len(shape))
    if permutation is None or (axes is not None and tuple(axes) != permutation):
        fail(f"dma_transpose of a {len(shape)}-D src with axes="
             f"{None if axes is None else tuple(axes)}: NKI's transposes are (1, 0), (2, 1, 0) "
             f"and (3, 1, 2, 0) of 2-, 3- and 4-D tiles")
    unused("oob_mode", oob_mode, "error")
    middle = shape[1:-1]
    if all(n == 1 for n in middle):
        tr.emit("dma.transpose", d.operand(tr), s.operand(tr), queue=tr.next_queue())
        return
    want = (shape[-1], *middle, shape[0])
    if tuple(d.shape) != want:
        fail(f"dma_transpose of a {list(shape)} src writes a {list(want)} dst, got "
             f"{list(d.shape)}")
    for at in itertools.product(*(range(n) for n in middle)):
        part = (slice(None), *at, slice(None))
        tr.emit("dma.transpose", d[part].operand(tr), s[part].operand(tr),
                queue=tr.next_queue())


def tensor_copy(dst, src, engine=engine.unknown, name=None, dtype=None):
    """dst = src on chip (``vector.tensor_copy``; gpsimd/scalar when asked), cast to dst's
    dtype. ``dtype=`` (not an NKI 0.6 argument; the nki-samples tutorials pass it) rounds the
    values to that dtype on the way: through a temporary tile of it when it is not dst's."""
    tr = tracer()
    if (dtype is not None and isinstance(dst, NkiTensor)
            and dtype_name(dtype) != dtype_name(dst.dtype)):
        staged = HOOKS["nl"].ndarray(tuple(dst.shape), dtype=dtype, buffer=dst.buffer)
        tensor_copy(staged, src, engine=engine)
        tensor_copy(dst, staged, engine=engine)
        return
    if _indirection.has_indirect((dst, src)):
        if engine == "gpsimd":
            fail("tensor_copy with an indirect view (t.indirect(index)) runs on the Vector or "
                 "Scalar engine, not GpSimd (as in NKI)")
        ops, scatter = _indirection.resolve("tensor_copy", {"dst": dst, "src": src},
                                            _indirection.OTHER_GROUP)
        tensor_copy(ops["dst"], ops["src"], engine=engine)
        scatter()
        return
    d, s = onchip(dst, "dst"), onchip(src, "src")
    if engine == "scalar":
        tr.emit("scalar.activation", d, s, func="copy")
    elif engine == "gpsimd" and dst.kind == "sbuf" and src.kind == "sbuf":
        tr.emit("gpsimd.tensor_copy", d, s)
    elif engine == "unknown" and tr.schedule == "compiler" and _floats(dst, src):
        # the compiler's choice of engine: VectorE, or ScalarE when it finishes first (its
        # copy casts through fp32, exact for float tiles: the values are the same)
        tr.emit("vector.tensor_copy", d, s, compiler_engine="true")
    else:
        tr.emit("vector.tensor_copy", d, s)


def _floats(*tiles) -> bool:
    from neuronemu.isa import dtypes

    return all(dtypes.get(dtype_name(t.dtype)).is_float for t in tiles)


def memset(dst, value, engine=engine.unknown, name=None):
    """Fill dst with a constant (``vector.memset``; ``gpsimd.memset`` when asked)."""
    tr = tracer()
    d = onchip(dst, "dst")
    mnemonic = "gpsimd.memset" if engine == "gpsimd" and dst.kind == "sbuf" else "vector.memset"
    tr.emit(mnemonic, d, value=number(value, "value"))
    mark_written(dst)


# ------------------------------------------------------------------------------------------
# vector / scalar / gpsimd


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, name=None):
    """dst = op(data * scale + bias) on ScalarE (``scalar.activation``); with ``reduce_res``
    the add-reduction of dst along the free axes goes to reduce_res[P, 1]."""
    tr = tracer()
    kw = {"func": act_name(op)}
    if not (isinstance(scale, (int, float)) and float(scale) == 1.0):
        kw["scale"] = scalar_operand(scale, "scale")
    if bias is not None:
        kw["bias"] = scalar_operand(bias, "bias")
    if reduce_res is not None:
        if reduce_op is not None and reduce_name(reduce_op, "reduce_op") != "add":
            fail("reduce_op must be nl.add: ScalarE's reduction registers only sum")
        if reduce_cmd not in ("idle", "reset_reduce"):
            fail(f"reduce_cmd={reduce_cmd!r} (accumulating across instructions) is not "
                 f"supported", unsupported=True)
        kw["reduce_res"] = onchip(reduce_res, "reduce_res")
    elif reduce_cmd not in ("idle",):
        fail(f"reduce_cmd={reduce_cmd!r} without reduce_res is not supported", unsupported=True)
    tr.emit("scalar.activation", onchip(dst, "dst"), onchip(data, "data"), **kw)
    mark_written(dst)


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """``activation`` with ``reduce_res`` (kept for backward compatibility in NKI)."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
               reduce_res=reduce_res, reduce_cmd=reduce_cmd.reset_reduce)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """Reduce the trailing free axes of data (``vector.tensor_reduce``)."""
    tr = tracer()
    d = tile_arg(data, "data")
    axes = sorted({axis} if isinstance(axis, int) else set(axis))
    ndim = len(d.shape)
    axes = sorted(a % ndim for a in axes)
    if not axes or 0 in axes or axes != list(range(axes[0], ndim)):
        fail(f"axis={axis!r}: the reduced axes must be the last free axes of the tile "
             f"(ending at axis {ndim - 1}; axis 0 is the partition axis)")
    kept = 1
    for s in d.shape[1:axes[0]]:
        kept *= s
    out = tile_arg(dst, "dst")
    out_free = 1
    for s in out.shape[1:]:
        out_free *= s
    if out_free != kept:
        fail(f"dst has {out_free} elements per partition; reducing axes {axes} of "
             f"{list(d.shape)} leaves {kept}")
    kw = {"op": reduce_name(op)}
    if negate:
        kw["negate"] = "true"
    tr.emit("vector.tensor_reduce", onchip(dst, "dst"), onchip(data, "data"), **kw)
    mark_written(dst)


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         reduce_cmd=reduce_cmd.idle, reduce_init=None, reduce_res_negate=False,
                         name=None):
    """dst = data op0 operand0 and reduce_res[P, 1] = reduce_op over dst's fp32 values
    (``vector.tensor_scalar_reduce``)."""
    tr = tracer()
    if reverse0:
        fail("tensor_scalar_reduce(reverse0=True) is not supported", unsupported=True)
    if reduce_cmd not in ("idle", "reset_reduce") or reduce_init is not None:
        fail("tensor_scalar_reduce accumulating across instructions (reduce_cmd, reduce_init) "
             "is not supported", unsupported=True)
    if reduce_res_negate:
        fail("tensor_scalar_reduce(reduce_res_negate=True) is not supported", unsupported=True)
    tr.emit("vector.tensor_scalar_reduce", onchip(dst, "dst"), onchip(data, "data"),
            op0=alu_name(op0, "op0"), operand0=scalar_operand(operand0, "operand0"),
            reduce_op=reduce_name(reduce_op, "reduce_op"),
            reduce_res=onchip(reduce_res, "reduce_res"))
    mark_written(dst)


_MAX_AFFINE_RUNS = 256   # instructions one iota / affine_select may unroll into


def _affine_runs(pattern, dst) -> list[tuple[int, int, int, int]]:
    """An NKI ``pattern`` [[step, num], ...] (free dims, outermost first; value = offset +
    p * channel_multiplier + sum of index * step) as runs that neuronemu's iota /
    affine_select express, one step each: (first flat free element, count, value added to
    the offset, step). The innermost dims whose steps nest (a step equal to the inner step
    times the inner count) make one run; each index of the dims outside them is a run of its
    own, so ``[[0, 4], [128, 32]]`` is 4 runs of 32 values 0, 128, ..., 3968."""
    dims = [(int(s), int(n)) for s, n in pattern]
    if any(n < 1 for _, n in dims):
        fail(f"pattern {pattern!r}: every count must be at least 1")
    total = math.prod(n for _, n in dims)
    free = math.prod(dst.shape[1:])
    if total != free:
        fail(f"pattern covers {total} elements per partition, dst has {free}")
    dims = [(s, n) for s, n in dims if n > 1]
    step, inner = 0, 1
    while dims:
        s, n = dims[-1]
        if inner > 1 and s != step * inner:
            break
        step = s if inner == 1 else step
        inner *= n
        dims.pop()
    outer = math.prod(n for _, n in dims)
    if outer > _MAX_AFFINE_RUNS:
        fail(f"pattern {pattern!r} makes {outer} runs of {inner} values, each a separate "
             f"instruction here (at most {_MAX_AFFINE_RUNS}); neuronemu's iota / affine_select "
             f"take one step", unsupported=True)
    runs = []
    for k, index in enumerate(itertools.product(*(range(n) for _, n in dims))):
        added = sum(i * s for i, (s, _) in zip(index, dims, strict=True))
        runs.append((k * inner, inner, added, step))
    return runs


def _run_views(t, runs, what: str) -> list:
    """``t`` as one view per run (all of it for a single run): the flat free elements
    [first, first + count) of each partition."""
    if len(runs) == 1:
        return [t]
    flat = t.reshape((t.shape[0], math.prod(t.shape[1:]))) if t.ndim != 2 else t
    if not isinstance(flat, NkiTensor):
        fail(f"{what}: a pattern of several runs needs a tile view", unsupported=True)
    return [flat[:, first: first + count] for first, count, _, _ in runs]


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst[p, i] = offset + p * channel_multiplier + pattern(i) (``gpsimd.iota``; a pattern
    whose steps do not nest is one instruction per run of ``_affine_runs``)."""
    tr = tracer()
    d = tile_arg(dst, "dst")
    runs = _affine_runs(pattern, d)
    for (_, _, added, step), view in zip(runs, _run_views(d, runs, "iota dst"), strict=True):
        tr.emit("gpsimd.iota", onchip(view, "dst"), base=int(offset) + added,
                channel_multiplier=int(channel_multiplier), step=step)


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None,
                  offset=0, name=None):
    """dst = on_true_tile where cmp_op(offset + p * cm + pattern(i), 0) else on_false_value
    (``gpsimd.affine_select``; cmp_op defaults to nl.equal as in NKI; a pattern whose steps do
    not nest is one instruction per run of ``_affine_runs``)."""
    tr = tracer()
    d = tile_arg(dst, "dst")
    runs = _affine_runs(pattern, d)
    cmp = alu_name(cmp_op, "cmp_op") if cmp_op is not None else "equal"
    views = _run_views(d, runs, "affine_select dst")
    sources = _run_views(tile_arg(on_true_tile, "on_true_tile"), runs,
                         "affine_select on_true_tile")
    for (_, _, added, step), view, source in zip(runs, views, sources, strict=True):
        tr.emit("gpsimd.affine_select", onchip(view, "dst"), onchip(source, "on_true_tile"),
                cmp_op=cmp, on_false_value=number(on_false_value, "on_false_value"),
                offset=int(offset) + added, channel_multiplier=int(channel_multiplier),
                step=step)


# ------------------------------------------------------------------------------------------
# TensorE


def _psum_accumulate(dst: NkiTensor) -> bool:
    """NKI 0.3+ accumulate=None: the first write to a PSUM location overwrites, later ones
    accumulate. Which elements were written is known exactly (a view at a run-time offset
    counts as its box); a write that covers some written elements and some not is refused."""
    buffer = dst._buffer
    if buffer.pending_zero is not None:   # nl.zeros, then a matmul: onto the zeros
        buffer.fill_zero()
    size = math.prod(buffer.slot.shape)
    if buffer.written_count == size:   # every element written: this one accumulates
        return True
    box = elements = None
    if not buffer.written:
        box = dst.box()
        elements = None if box is not None else dst.elements()
    if box is not None or elements is not None:
        # a box is looked at through slices of the mask (matmul tiles in a K loop are one
        # box each; listing their elements cost more than the rest of the trace)
        if buffer.written_mask is None:
            buffer.written_mask = np.zeros(size, bool)
        if box is not None:   # a view of the mask: setting it marks the elements
            seen = buffer.written_mask.reshape(buffer.slot.shape)[box]
        else:
            inside = elements[(elements >= 0) & (elements < size)]
            seen = buffer.written_mask[inside]
        if seen.size and seen.all():
            return True
        if seen.any():
            fail("this matmul's PSUM region covers elements written before and elements not "
                 "written yet; neuronemu.nki cannot tell overwrite from accumulate: pass "
                 "accumulate=True/False", unsupported=True)
        _check_loop_depth(dst)
        if box is not None:
            seen[...] = True
            buffer.written_count += seen.size
        else:
            inside = np.unique(inside)
            buffer.written_mask[inside] = True
            buffer.written_count += inside.size
        return False
    if buffer.written_mask is not None:   # a run-time offset after exact writes: as boxes
        buffer.written.append(tuple((0, n) for n in buffer.slot.shape))
        buffer.written_mask = None
        buffer.written_count = 0
        return True
    region = dst.region()
    for old in dst._buffer.written:
        inside = all(o0 <= r0 and r1 <= o1 for (r0, r1), (o0, o1) in zip(region, old))
        if inside:
            return True
        overlap = all(r0 < o1 and o0 < r1 for (r0, r1), (o0, o1) in zip(region, old))
        if overlap:
            fail("this matmul's PSUM region partly overlaps one written before; neuronemu.nki "
                 "cannot tell overwrite from accumulate: pass accumulate=True/False",
                 unsupported=True)
    _check_loop_depth(dst)
    dst._buffer.written.append(region)
    return False


def _check_loop_depth(dst: NkiTensor) -> None:
    if dst._buffer.loop_depth < len(tracer().loops):
        fail("accumulate=None in a device loop (nl.fori_loop, nl.dynamic_range, "
             "nl.while_loop) into a PSUM tile from outside it: the first write of the traced "
             "body would overwrite on every iteration",
             "pass accumulate=True to sum over the iterations (zero the tile before the loop, "
             "e.g. nisa.memset) or accumulate=False to overwrite", unsupported=True)


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, accumulate=None, tile_position=(), tile_size=(),
              perf_mode=matmul_perf_mode.none, name=None):
    """dst (+)= stationary.T @ moving on TensorE (``tensor.matmul``); ``accumulate=None``
    overwrites on the first write to a PSUM region and accumulates on the later ones."""
    if _indirection.has_indirect((dst, stationary, moving)):
        if tile_position or tile_size:
            fail("nc_matmul: tensor indirection is incompatible with hardware tiling "
                 "(tile_position / tile_size), as in NKI")
        if is_transpose and isinstance(moving, NkiTensor) and moving.is_indirect():
            fail("nc_matmul(is_transpose=True): moving cannot be an indirect view (as in NKI)")
        if isinstance(dst, NkiTensor) and dst.is_indirect():
            base = dst._ti[0]
            if base.kind != "psum":
                fail("nc_matmul writes PSUM: dst must be an nl.psum tile")
            accumulate = _psum_accumulate(base) if accumulate is None else bool(accumulate)
        ops, scatter = _indirection.resolve(
            "nc_matmul", {"dst": dst, "stationary": stationary, "moving": moving},
            _indirection.TENSOR_GROUP, reads_dst=bool(accumulate))
        nc_matmul(ops["dst"], ops["stationary"], ops["moving"], is_stationary_onezero,
                  is_moving_onezero, is_transpose, accumulate, perf_mode=perf_mode)
        scatter()
        return
    tr = tracer()
    d = tile_arg(dst, "dst")
    if d.kind != "psum":
        fail("nc_matmul writes PSUM: dst must be an nl.psum tile")
    if accumulate is None:
        acc = _psum_accumulate(d)
    else:
        acc = bool(accumulate)
        mark_written(d)
    kw = {"accumulate": bool_text(acc)}
    if is_transpose:
        kw["is_transpose"] = "true"
    if is_stationary_onezero:
        kw["is_stationary_onezero"] = "true"
    if is_moving_onezero:
        kw["is_moving_onezero"] = "true"
    if perf_mode not in (None, "none"):
        kw["perf_mode"] = str(perf_mode)
    if tile_position:
        kw["tile_position"] = "[" + ", ".join(str(int(v)) for v in tile_position) + "]"
    if tile_size:
        kw["tile_size"] = "[" + ", ".join(str(int(v)) for v in tile_size) + "]"
    tr.emit("tensor.matmul", d.operand(tr), onchip(stationary, "stationary"),
            onchip(moving, "moving"), **kw)


def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None, name=None):
    """dst (+)= dequantized MX matmul of x4-packed MXFP8 stationary [P, M] and moving [P, N]
    (4P contraction rows) with their E8M0 scale tiles (``tensor.matmul_mx``, trn3 only).
    PSUM accumulation follows ``nc_matmul``: the first write to a region overwrites, later
    ones accumulate (``accumulate=`` forces either; not an NKI 0.6 argument)."""
    tr = tracer()
    d = tile_arg(dst, "dst")
    if d.kind != "psum":
        fail("nc_matmul_mx writes PSUM: dst must be an nl.psum tile")
    if accumulate is None:
        acc = _psum_accumulate(d)
    else:
        acc = bool(accumulate)
        mark_written(d)
    kw = {"stationary_scale": onchip(stationary_scale, "stationary_scale"),
          "moving_scale": onchip(moving_scale, "moving_scale"), "accumulate": bool_text(acc)}
    if tile_position:
        kw["tile_position"] = "[" + ", ".join(str(int(v)) for v in tile_position) + "]"
    if tile_size:
        kw["tile_size"] = "[" + ", ".join(str(int(v)) for v in tile_size) + "]"
    tr.emit("tensor.matmul_mx", d.operand(tr), onchip(stationary, "stationary"),
            onchip(moving, "moving"), **kw)


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """dst[F, P] = data[P, F]: TensorE (``tensor.transpose``, dst in PSUM) or VectorE
    (``vector.transpose``, up to 32x32)."""
    tr = tracer()
    d = tile_arg(dst, "dst")
    use_vector = engine == "vector" or (engine != "tensor" and d.kind != "psum")
    if engine == "tensor" and d.kind != "psum":
        fail("nc_transpose on TensorE writes PSUM: dst must be an nl.psum tile")
    tr.emit("vector.transpose" if use_vector else "tensor.transpose",
            onchip(dst, "dst"), onchip(data, "data"))
    mark_written(dst)


# ------------------------------------------------------------------------------------------
# control flow, registers, multi-core (their own modules), and every call the tables define


from neuronemu.nki._collectives import (  # noqa: F401
    core_barrier,
    grid_programs,
    grid_sendrecv,
    record_sync,
)
from neuronemu.nki._control import (  # noqa: F401
    VirtualRegister,
    register_alloc,
    register_load,
    register_move,
    register_store,
)


def sendrecv(*args, **kwargs) -> None:
    """Send src to rank send_to_rank while receiving dst from recv_from_rank
    (``cc.sendrecv``; ``pipe_id`` and ``dma_engine`` change nothing modelled). Between the
    programs of a launch grid (an LNC2 ``kernel[2]``) it is a DMA copy each way once both
    programs have reached it (``_collectives.grid_sendrecv``)."""
    if grid_programs(tracer()) > 1:
        grid_sendrecv(*args, **kwargs)
        return
    record_sync("sendrecv")
    _emit.call("sendrecv", args, kwargs)


for _name in _emit.isa_entries():
    if _name not in globals():
        globals()[_name] = _emit.wrapper(_name)
del _name

HOOKS["nisa"] = sys.modules[__name__]


def __getattr__(name: str):
    return unsupported_name("isa", name)
