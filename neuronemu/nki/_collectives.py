"""Multi-core NKI calls on neuronemu's collective instructions (``cc.*``, isa/cc.toml): the
``nki.collectives`` functions, ``nisa.core_barrier`` and the record that lets SPMD launches
check that every core reaches the same barriers and collectives in the same order.

Every rank runs the same program (docs/multichip.md). A ``ReplicaGroup`` is lowered to the
``group_size`` / ``group_stride`` operands of the ``cc.*`` instruction: its groups must cover
ranks 0 .. n - 1 (the run then needs n ranks: ``neuronemu.api.run_spmd``) as blocks of
consecutive ranks (``[[0, 1], [2, 3]]``) or of ranks a fixed distance apart (``[[0, 2],
[1, 3]]``). Uniform ring shifts lower to ``cc.permute``; ranks are ``ctrl.rank`` registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronemu.isa.table import load_isa
from neuronemu.nki import _emit
from neuronemu.nki._dynamic import RegExpr, VirtualRegister
from neuronemu.nki._lockstep import NeedsLockstep
from neuronemu.nki._operands import alu_name, onchip
from neuronemu.nki._trace import NkiError, NkiTensor, fail, tracer, user_site


@dataclass
class ReplicaGroup:
    """The ranks taking part in a collective: a list of disjoint rank lists, each a group
    that reduces or exchanges among itself (NKI's ``ReplicaGroup([[0, 1], [2, 3]])``)."""

    replica_groups: list

    def layout(self) -> tuple[int, int, int]:
        """(world, group_size, group_stride) of the ``cc.*`` operands that make these groups
        (group_size 0: one group of every rank); other shapes are refused, located."""
        try:
            groups = [[int(r) for r in g] for g in self.replica_groups]
        except TypeError:
            fail(f"ReplicaGroup({self.replica_groups!r}): replica_groups must be a list of "
                 f"rank lists, e.g. [[0, 1, 2, 3]]")
        world = sum(len(g) for g in groups)
        size = len(groups[0]) if groups else 0
        if not size or any(len(g) != size for g in groups) or sorted(
                r for g in groups for r in g) != list(range(world)):
            fail(f"ReplicaGroup({self.replica_groups!r}): the groups must be of one size and "
                 f"hold each rank 0 .. n - 1 once", "e.g. [[0, 1], [2, 3]] or [[0, 2], [1, 3]]")
        stride = groups[0][1] - groups[0][0] if size > 1 else 1
        if len(groups) == 1 and stride == 1:
            return world, 0, 0
        want = _groups(world, size, stride) if stride > 0 and world % (size * stride) == 0 \
            else None
        if want is None or sorted(groups) != want:
            fail(f"ReplicaGroup({self.replica_groups!r}): neuronemu's collectives take groups of "
                 f"consecutive ranks ([[0, 1], [2, 3]]) or of ranks a fixed distance apart "
                 f"([[0, 2], [1, 3]]), each in rank order",
                 "renumber the ranks so that each group is one of these shapes, or exchange "
                 "data with nisa.sendrecv between ranks from nki.collectives.rank_id()",
                 unsupported=True)
        return world, size, stride if stride > 1 else 0


def _groups(world: int, size: int, stride: int) -> list[list[int]]:
    span = size * stride
    return sorted([block + j + k * stride for k in range(size)]
                  for block in range(0, world, span) for j in range(stride))


def _layout(replica_group) -> tuple[int, int, int]:
    if replica_group is None:
        fail("replica_group is required (ReplicaGroup([[0, 1, ..., n-1]]))")
    if not isinstance(replica_group, ReplicaGroup):
        replica_group = ReplicaGroup(replica_group)
    return replica_group.layout()


def _group(replica_group) -> dict:
    """The ``cc.*`` group operands of ``replica_group`` (none for one group of every rank),
    after checking that every collective of the kernel names the same number of ranks."""
    world, size, stride = _layout(replica_group)
    tr = tracer()
    if tr.collective_world not in (None, world):
        fail(f"this collective's groups hold {world} ranks; an earlier one's held "
             f"{tr.collective_world} (a kernel runs on one set of ranks)", unsupported=True)
    tr.collective_world = world
    operands = {}
    if size:
        operands["group_size"] = size
    if stride:
        operands["group_stride"] = stride
    return operands


def grid_programs(tr) -> int:
    programs = 1
    for size in tr.grid:
        programs *= size
    return programs


def record_sync(kind: str) -> None:
    """Note a point every core must reach (barrier, collective) for the LNC check. Between the
    programs of a launch grid (``kernel[2](...)``), traced into one core's stream, a data
    exchange is refused: program 0 would read what program 1 has not yet sent (a wrong value);
    ``core_barrier`` there is handled by tracing in lockstep (_lockstep.py)."""
    tr = tracer()
    programs = grid_programs(tr)
    if programs > 1:
        fail(f"{kind} between the programs of a launch of {programs} (kernel{list(tr.grid)}): "
             f"the programs of a launch grid are traced into one core's stream here; they can "
             f"meet at nisa.core_barrier, but exchanging data by sendrecv or collectives "
             f"between them is not modelled",
             "trace the kernel once and run it on the ranks of a topology "
             "(neuronemu.api.run_spmd), exchanging data with nki.collectives",
             unsupported=True)
    tr.sync_points.append((kind, user_site(), len(tr.loops)))


@dataclass
class _Send:
    """What one program of a launch grid leaves at a sendrecv."""

    src: NkiTensor
    dst: NkiTensor
    send_to: int
    recv_from: int
    site: object


def grid_sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id=None, dma_engine=None,
                  name=None) -> None:
    """``nisa.sendrecv`` between the programs of a launch grid (the cores of an LNC2 kernel,
    ``kernel[2]``), traced into one core's stream: the programs meet there in lockstep
    (_lockstep.py), and once every program has arrived each one's ``src`` is copied by DMA
    into its peer's ``dst``."""
    tr = tracer()
    for what, t in (("src", src), ("dst", dst)):
        if not isinstance(t, NkiTensor):
            fail(f"sendrecv {what} must be a tensor, got {type(t).__name__}")
        if t.kind == "psum":
            fail(f"sendrecv {what} is in PSUM; DMA moves SBUF or HBM tensors")
    if tr.lockstep is None:
        raise NeedsLockstep
    if tr.loops:
        fail("sendrecv inside a device loop (nl.fori_loop, nl.while_loop, dynamic_range) "
             "between the programs of a launch grid: the programs are interleaved at their "
             "exchanges while being traced, which a loop run on the device cannot be",
             "use nl.affine_range / static_range for that loop (it is unrolled)",
             unsupported=True)
    send = _Send(src, dst, _rank_value(send_to_rank, "send_to_rank"),
                 _rank_value(recv_from_rank, "recv_from_rank"), user_site())
    tr.lockstep.meet(send.site, send, _deliver)


def _rank_value(value, what: str) -> int:
    if isinstance(value, (RegExpr, VirtualRegister)):
        fail(f"sendrecv {what} between the programs of a launch grid must be a Python int "
             f"(e.g. 1 - nl.program_id(0)), not a register", unsupported=True)
    return int(value)


def _deliver(sends: dict[int, _Send]) -> None:
    """Every program's send of one exchange, as DMA copies (emitted by the last to arrive)."""
    tr = tracer()
    programs = grid_programs(tr)
    for i, send in sorted(sends.items()):
        if not 0 <= send.send_to < programs or not 0 <= send.recv_from < programs:
            raise NkiError(f"program {i} sends to program {send.send_to} and receives from "
                           f"program {send.recv_from}; the launch has programs 0.."
                           f"{programs - 1}", send.site.location())
        peer = sends.get(send.send_to)
        if peer is None or peer.recv_from != i:
            got = ("does not reach this exchange" if peer is None else
                   f"receives from program {peer.recv_from}")
            raise NkiError(f"program {i} sends to program {send.send_to}, which {got} (the "
                           f"{programs} programs' sendrecv calls must pair up)",
                           send.site.location())
        if tuple(send.src.shape) != tuple(peer.dst.shape) or send.src.dtype != peer.dst.dtype:
            raise NkiError(f"program {i} sends {send.src.dtype}{list(send.src.shape)} but "
                           f"program {send.send_to} receives into "
                           f"{peer.dst.dtype}{list(peer.dst.shape)}", send.site.location())
    for _, send in sorted(sends.items()):
        tr.emit("dma.copy", sends[send.send_to].dst.operand(tr), send.src.operand(tr),
                queue=tr.next_queue())


def check_identical_control_flow(traces) -> None:
    """For an SPMD launch traced once per core (LNC2: ``kernel[2]``): every core must reach
    the same barriers and collectives, in the same order. Raises a located NkiError at the
    first difference (on hardware the cores would deadlock; NKI leaves it unchecked)."""
    first = traces[0].sync_points
    for core, tr in enumerate(traces[1:], start=1):
        other = tr.sync_points
        for k in range(max(len(first), len(other))):
            a = first[k] if k < len(first) else None
            b = other[k] if k < len(other) else None
            if a is not None and b is not None and a[0] == b[0]:
                continue
            here = b if b is not None else a
            missing_core = 0 if a is None else core
            what = f"{here[0]} at {here[1].short()}"
            other_text = ("nothing" if (a if b is not None else b) is None else
                          f"{(a if b is not None else b)[0]}")
            raise NkiError(
                f"cores 0 and {core} diverge at their synchronization point #{k + 1}: core "
                f"{core if b is not None else 0} reaches {what} where core {missing_core} "
                f"reaches {other_text}",
                here[1].location(),
                (("LNC2 programs must keep identical control flow: both cores reach every "
                  "core_barrier, sendrecv and collective in the same order (move the call out "
                  "of the branch on nl.program_id)"),))


def _pairs(srcs, dsts, what: str) -> list[tuple[NkiTensor, NkiTensor]]:
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    dsts = list(dsts) if isinstance(dsts, (list, tuple)) else [dsts]
    if len(srcs) != len(dsts) or not srcs:
        fail(f"{what}: srcs and dsts must be lists of the same non-zero length, got "
             f"{len(srcs)} and {len(dsts)}")
    for k, (s, d) in enumerate(zip(srcs, dsts)):
        for name, t in (("srcs", s), ("dsts", d)):
            if not isinstance(t, NkiTensor):
                fail(f"{what}: {name}[{k}] must be a tensor, got {type(t).__name__}")
            if t.kind == "psum":
                fail(f"{what}: {name}[{k}] is in PSUM; collectives move HBM or SBUF tensors")
    return list(zip(srcs, dsts))


def _cc(mnemonic: str, **values) -> None:
    _emit.lower(load_isa().instructions[f"cc.{mnemonic}"], values)


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None) -> None:
    """dsts[i] = op over the group's ranks of srcs[i] (``cc.all_reduce``)."""
    group = _group(replica_group)
    record_sync("all_reduce")
    for s, d in _pairs(srcs, dsts, "all_reduce"):
        _cc("all_reduce", dst=d, src=s, op=op, **group)


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None) -> None:
    """dsts[i] = every rank's srcs[i] concatenated along collective_dim (``cc.all_gather``)."""
    group = _group(replica_group)
    record_sync("all_gather")
    for s, d in _pairs(srcs, dsts, "all_gather"):
        _cc("all_gather", dst=d, src=s, dim=collective_dim, **group)


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None,
                   name=None) -> None:
    """Rank r's dsts[i] = op over ranks of block r of srcs[i] along collective_dim
    (``cc.reduce_scatter``)."""
    group = _group(replica_group)
    record_sync("reduce_scatter")
    for s, d in _pairs(srcs, dsts, "reduce_scatter"):
        _cc("reduce_scatter", dst=d, src=s, op=op, dim=collective_dim, **group)


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None) -> None:
    """Block j of rank i's srcs[k] becomes block i of rank j's dsts[k] (``cc.all_to_all``)."""
    group = _group(replica_group)
    record_sync("all_to_all")
    for s, d in _pairs(srcs, dsts, "all_to_all"):
        _cc("all_to_all", dst=d, src=s, dim=collective_dim, **group)


def _variable(what: str, srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls) -> None:
    group = _group(replica_group)
    record_sync(what)
    pairs = _pairs(srcs, dsts, what)
    if len(pairs) != 1:
        fail(f"{what}: srcs and dsts hold exactly one tensor each (as in NKI), got "
             f"{len(pairs)}")
    if not isinstance(metadata_tensor, NkiTensor) or metadata_tensor.kind == "psum":
        fail(f"{what}: metadata_tensor must be a uint32 HBM tensor (rows, world) or SBUF "
             f"tile (1, rows, world), got {metadata_tensor!r}")
    (s, d), = pairs
    _cc(what, dst=d, src=s, meta=metadata_tensor, recv_counts_known=bool(recv_counts_known),
        has_rdispls=bool(has_rdispls), **group)


def all_to_all_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None) -> None:
    """Variable all-to-all of flat element buffers (``cc.all_to_all_v``): counts and
    displacements from the uint32 ``metadata_tensor`` [rows, world] at run time."""
    _variable("all_to_all_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls)


def all_gather_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None) -> None:
    """Variable all-gather of flat element buffers (``cc.all_gather_v``): each rank's one
    chunk (column 0 of metadata rows 0 and 1) lands in every rank's dst."""
    _variable("all_gather_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls)


def _shift(pairs, n_hint=None) -> int:
    """The k of source_target_pairs that are (s, (s + k) mod n) for every rank s."""
    pairs = [(int(s), int(t)) for s, t in pairs]
    n = len(pairs)
    sources = sorted(s for s, _ in pairs)
    if sources != list(range(n)):
        fail(f"source_target_pairs {pairs}: every rank 0..{n - 1} must send exactly once "
             f"(neuronemu's permute involves every rank)", unsupported=True)
    shifts = {(t - s) % n for s, t in pairs}
    if len(shifts) != 1:
        fail(f"source_target_pairs {pairs} is not one ring shift (s -> (s + k) mod n); "
             f"neuronemu's cc.permute sends every rank the same distance",
             "an arbitrary permutation: nisa.sendrecv with peers computed from "
             "nki.collectives.rank_id()", unsupported=True)
    return shifts.pop()


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None) -> None:
    """Rank s sends srcs[0] to the rank t of its pair (s, t); pairs must be one ring shift
    (``cc.permute shift=k``)."""
    shift = _shift(source_target_pairs)
    tr = tracer()
    n = len(source_target_pairs)
    if tr.collective_world not in (None, n):
        fail(f"source_target_pairs name {n} ranks; an earlier collective had "
             f"{tr.collective_world}", unsupported=True)
    tr.collective_world = n
    record_sync("collective_permute")
    for s, d in _pairs(srcs, dsts, "collective_permute"):
        _cc("permute", dst=d, src=s, shift=shift)


def _by_channel(lists, what: str) -> list:
    out = []
    for ch, inner in enumerate(lists):
        inner = list(inner) if isinstance(inner, (list, tuple)) else [inner]
        if len(inner) != 1:
            fail(f"{what}[{ch}] must hold exactly one tensor (as in NKI)")
        out.append(inner[0])
    return out


def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group,
                                channel_ids=(0,), priority=None, name=None) -> None:
    """Each rank sends to its successor in its group's ring and receives from its
    predecessor, per channel (``cc.permute shift=1``)."""
    group = _group(replica_group)
    record_sync("collective_permute_implicit")
    srcs = _by_channel(srcs_by_channel, "srcs_by_channel")
    dsts = _by_channel(dsts_by_channel, "dsts_by_channel")
    for s, d in _pairs(srcs, dsts, "collective_permute_implicit"):
        _cc("permute", dst=d, src=s, shift=1, **group)


def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                                       replica_group, op, channel_ids=(0,), priority=None,
                                       name=None) -> None:
    """Each rank sends op(srcs0[i], srcs1[i]) to its successor in its group's ring (the sum
    by the DMA engines, ``dma.compute``, or max/min on VectorE for SBUF tiles, into a
    temporary of the destination's shape), then ``cc.permute shift=1``."""
    group = _group(replica_group)
    record_sync("collective_permute_implicit_reduce")
    tr = tracer()
    a = _by_channel(srcs0_by_channel, "srcs0_by_channel")
    b = _by_channel(srcs1_by_channel, "srcs1_by_channel")
    dsts = _by_channel(dsts_by_channel, "dsts_by_channel")
    if len(a) != len(b):
        fail("srcs0_by_channel and srcs1_by_channel need the same number of channels")
    opname = alu_name(op, "op")
    if opname not in ("add", "maximum", "minimum"):
        fail(f"op={opname}: collectives reduce with nl.add, nl.maximum or nl.minimum")
    for (s0, d), s1 in zip(_pairs(a, dsts, "collective_permute_implicit_reduce"), b):
        site = user_site()
        if s0.kind == "sbuf" and s1.kind == "sbuf":
            tmp = tr.onchip("sbuf", d._buffer.slot.dtype, tuple(s0.shape), site, "reduced")
            tr.emit("vector.tensor_tensor", onchip(tmp, "reduced"), onchip(s0, "srcs0"),
                    onchip(s1, "srcs1"), op=opname)
        elif opname == "add":
            tmp = tr.hbm_tensor("reduced", d._buffer.slot.dtype, tuple(s0.shape), "scratch",
                                site)
            tr.emit("dma.compute", tmp.operand(tr), s0.operand(tr), s1.operand(tr),
                    queue=tr.next_queue())
        else:
            fail(f"op={opname} of HBM tensors: neuronemu's DMA engines only add; load the "
                 f"operands to SBUF first", unsupported=True)
        _cc("permute", dst=d, src=tmp, shift=1, **group)


def rank_id(name=None) -> VirtualRegister:
    """A register holding this core's rank (``ctrl.rank``)."""
    tr = tracer()
    reg = tr.register()
    tr.emit("ctrl.rank", reg.register_text())
    return reg


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group,
                                                           channel_id=0,
                                                           name=None) -> VirtualRegister:
    """Whose data ring step ``iteration_id`` of ``collective_permute_implicit`` holds, as a
    member of this rank's group (0 .. n - 1, n ranks per group; with one group, a rank):
    (member - iteration_id) mod n, member = (rank // group_stride) mod n (``ctrl.rank``,
    ``ctrl.div``, ``ctrl.sub``, ``ctrl.rem``)."""
    _group(replica_group)
    world, size, stride = _layout(replica_group)
    n = size or world
    tr = tracer()
    reg = rank_id()
    if stride > 1:
        tr.emit("ctrl.div", reg.register_text(), reg.register_text(), str(stride))
    if size:
        tr.emit("ctrl.rem", reg.register_text(), reg.register_text(), str(n))
    if isinstance(iteration_id, RegExpr) and not isinstance(iteration_id, VirtualRegister):
        fail("iteration_id must be an int or a register (not an expression of registers)",
             unsupported=True)
    step = (iteration_id.register_text() if isinstance(iteration_id, VirtualRegister)
            else str(int(iteration_id)))
    tr.emit("ctrl.sub", reg.register_text(), reg.register_text(), step)
    tr.emit("ctrl.rem", reg.register_text(), reg.register_text(), str(n))
    return reg


def core_barrier(data, cores, engine=None, name=None) -> None:
    """Both cores of an LNC2 pair wait here until the other arrives (``cc.barrier``, which
    waits for every rank of the run: on an LNC2 launch, two ranks, exactly the pair). ``data``
    is the shared HBM tensor they synchronize on."""
    if not isinstance(data, NkiTensor) or data.kind != "hbm":
        fail("core_barrier data must be the shared HBM tensor the cores synchronize on")
    if tuple(int(c) for c in cores) != (0, 1):
        fail(f"core_barrier cores={tuple(cores)!r}: only cores=(0, 1) (an LNC2 pair) is "
             f"supported, as in NKI", unsupported=True)
    tr = tracer()
    if tr.target == "trn1":
        fail("core_barrier needs NeuronCore-v3 or newer (trn2, trn3); this kernel is traced "
             "for trn1")
    if grid_programs(tr) > 1:
        # the programs of one launch, traced into one stream: the barrier is their order
        if tr.lockstep is None:
            raise NeedsLockstep
        if tr.loops:
            fail("core_barrier inside a device loop (nl.fori_loop, nl.while_loop, "
                 "dynamic_range) of a launch grid: the programs are interleaved at their "
                 "barriers while being traced, which a loop run on the device cannot be",
                 "use nl.affine_range / static_range for that loop (it is unrolled)",
                 unsupported=True)
        tr.lockstep.barrier(user_site())
        return
    record_sync("core_barrier")
    _cc("barrier")
