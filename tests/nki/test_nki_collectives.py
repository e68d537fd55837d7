"""nki.collectives, nisa.sendrecv and nisa.core_barrier on neuronemu's cc.* instructions, run
on every rank of a real topology, against numpy oracles of each collective."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu.nki.collectives as ncc
import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.api import run_spmd
from neuronemu.errors import AsmError, RuntimeFault
from neuronemu.nki._collectives import check_identical_control_flow
from neuronemu.nki._trace import _CURRENT, NkiError, NkiUnsupported, Tracer

TOPOLOGY, WORLD = "trn2.48xlarge", 16
RG = ncc.ReplicaGroup([list(range(WORLD))])


def _sb(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


def _out(t, dtype=None):
    o = nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def collectives_kernel(x):
    xs = _sb((32, 64))
    nisa.dma_copy(dst=xs, src=x)
    total = _sb((32, 64))
    ncc.all_reduce(srcs=[xs], dsts=[total], replica_group=RG, op=nl.add)
    gathered = nl.ndarray((32, 64 * WORLD), dtype=nl.float32, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[x], dsts=[gathered], replica_group=RG, collective_dim=1)
    shifted = _sb((32, 64))
    ncc.collective_permute(srcs=[xs], dsts=[shifted],
                           source_target_pairs=[(r, (r + 3) % WORLD) for r in range(WORLD)])
    rank = _sb((1, 1), nl.int32)
    nisa.register_store(rank, ncc.rank_id())
    # the left neighbour's tile by sendrecv: send right, receive from the left
    right = ncc.collective_permute_implicit_current_processing_rank_id(-1, RG)
    left = ncc.collective_permute_implicit_current_processing_rank_id(1, RG)
    got = _sb((32, 64))
    nisa.sendrecv(src=xs, dst=got, send_to_rank=right, recv_from_rank=left, pipe_id=0)
    nisa.core_barrier(data=gathered, cores=(0, 1))
    return _out(total), gathered, _out(shifted), _out(rank), _out(got)


def test_collectives_on_sixteen_ranks():
    rng = np.random.default_rng(7)
    x = rng.integers(-8, 8, size=(WORLD, 32, 64)).astype(np.float32)   # exact sums
    tr = nki.trace(collectives_kernel, x[0], target="trn2")
    for op in ("cc.all_reduce", "cc.all_gather", "cc.permute", "ctrl.rank", "cc.sendrecv",
               "cc.barrier"):
        assert op in tr.asm, op
    result = run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x})
    names = [name for name, _ in tr.output_names]
    total, gathered, shifted, rank, got = (result.outputs[n] for n in names)
    for r in range(WORLD):
        np.testing.assert_array_equal(total[r], x.sum(0))
        np.testing.assert_array_equal(gathered[r], np.concatenate(list(x), axis=1))
        np.testing.assert_array_equal(shifted[r], x[(r - 3) % WORLD])
        assert rank[r, 0, 0] == r
        np.testing.assert_array_equal(got[r], x[(r - 1) % WORLD])


CONSECUTIVE = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
STRIDED = [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


def grouped_kernel(x, meta, groups):
    rg = ncc.ReplicaGroup(groups)
    xs = _sb((8, 64))
    nisa.dma_copy(dst=xs, src=x)
    total = _sb((8, 64))
    ncc.all_reduce(srcs=[xs], dsts=[total], replica_group=rg, op=nl.add)
    gathered = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[x], dsts=[gathered], replica_group=rg, collective_dim=0)
    scattered = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    ncc.reduce_scatter(srcs=[x], dsts=[scattered], replica_group=rg, collective_dim=1,
                       op=nl.add)
    swapped = nl.ndarray((8, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    ncc.all_to_all(srcs=[x], dsts=[swapped], replica_group=rg, collective_dim=1)
    varied = _filled((8, 64), -1.0)
    ncc.all_to_all_v(srcs=[x], dsts=[varied], replica_group=rg, metadata_tensor=meta)
    passed = _sb((8, 64))
    ncc.collective_permute_implicit(srcs_by_channel=[[xs]], dsts_by_channel=[[passed]],
                                    replica_group=rg)
    whose = _sb((1, 1), nl.int32)
    nisa.register_store(whose, ncc.collective_permute_implicit_current_processing_rank_id(
        1, rg))
    return (_out(total), gathered, scattered, swapped, varied, _out(passed), _out(whose))


@pytest.mark.parametrize("groups", [CONSECUTIVE, STRIDED], ids=["consecutive", "strided"])
def test_collectives_within_replica_groups(groups):
    """Every nki.collectives call with a ReplicaGroup of four groups of four ranks, against
    numpy over the groups: each group reduces and exchanges among its own members."""
    rng = np.random.default_rng(13)
    x = rng.integers(-32, 32, size=(WORLD, 8, 64)).astype(np.float32)
    counts = rng.integers(0, 128 + 1, (WORLD, 4))          # [sender, member it sends to]
    displs = rng.integers(0, 512 - 128 + 1, (WORLD, 4))
    meta = np.zeros((WORLD, 3, 4), np.uint32)
    meta[:, 0], meta[:, 1] = counts, displs
    tr = nki.trace(grouped_kernel, x[0], meta[0], groups, target="trn2")
    assert "group_size=4" in tr.asm
    assert ("group_stride=4" in tr.asm) == (groups is STRIDED)
    result = run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta": meta})
    total, gathered, scattered, swapped, varied, passed, whose = (
        result.outputs[n] for n, _ in tr.output_names)
    for group in groups:
        s = sum(x[q] for q in group)
        for i, r in enumerate(group):
            np.testing.assert_array_equal(total[r], s)
            np.testing.assert_array_equal(gathered[r], np.concatenate([x[q] for q in group]))
            np.testing.assert_array_equal(scattered[r], s[:, 16 * i:16 * (i + 1)])
            np.testing.assert_array_equal(
                swapped[r], np.concatenate([x[q][:, 16 * i:16 * (i + 1)] for q in group], axis=1))
            want = np.full(512, -1.0, np.float32)
            for j, q in enumerate(group):   # member j's chunk for member i, in slot j
                c, d = counts[q, i], displs[q, i]
                want[128 * j:128 * j + c] = x[q].reshape(-1)[d:d + c]
            np.testing.assert_array_equal(varied[r].reshape(-1), want)
            np.testing.assert_array_equal(passed[r], x[group[(i - 1) % 4]])
            assert whose[r, 0, 0] == (i - 1) % 4


def test_replica_groups_neuronemu_cannot_make_are_located_errors():
    def k(x, groups):
        t = _sb((32, 64))
        ncc.all_reduce(srcs=[x], dsts=[t], replica_group=ncc.ReplicaGroup(groups),
                       op=nl.add)

    with pytest.raises(NkiUnsupported, match="consecutive ranks") as e:
        nki.trace(k, np.zeros((32, 64), np.float32), [[0, 3], [1, 2]])
    assert e.value.location.line == k.__code__.co_firstlineno + 2
    with pytest.raises(NkiError, match="of one size and hold each rank 0 .. n - 1 once"):
        nki.trace(k, np.zeros((32, 64), np.float32), [[0, 1, 2], [3]])
    with pytest.raises(NkiError, match="of one size and hold each rank 0 .. n - 1 once"):
        nki.trace(k, np.zeros((32, 64), np.float32), [[1, 2]])

    def two_worlds(x):
        t = _sb((32, 64))
        ncc.all_reduce(srcs=[x], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1], [2, 3]]),
                       op=nl.add)
        ncc.all_reduce(srcs=[x], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)

    with pytest.raises(NkiUnsupported, match="groups hold 2 ranks; an earlier one's held 4"):
        nki.trace(two_worlds, np.zeros((32, 64), np.float32))

    def perm(x):
        ncc.collective_permute(srcs=[x], dsts=[x], source_target_pairs=[(0, 1), (1, 0), (2, 2)])

    with pytest.raises(NkiUnsupported, match="is not one ring shift"):
        nki.trace(perm, np.zeros((32, 64), np.float32))


SLOT = 32   # elements of dst per sending rank: [8, 64] = 512 elements over 16 ranks


def _filled(shape, value):
    """A new HBM tensor holding ``value`` everywhere (so untouched elements are known)."""
    out = nl.ndarray(shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = _sb(shape)
    nisa.memset(t, value)
    nisa.dma_copy(dst=out, src=t)
    return out


def _meta_out(meta):
    """The metadata after the collective (row 2 written), as an output."""
    t = _sb(meta.shape, nl.uint32)
    nisa.dma_copy(dst=t, src=meta)
    return _out(t)


def variable_kernel(x, meta_a2a, meta_ag):
    a2a = _filled((8, 64), -1.0)
    ncc.all_to_all_v(srcs=[x], dsts=[a2a], replica_group=RG, metadata_tensor=meta_a2a)
    ag = _filled((8, 64), -1.0)
    ncc.all_gather_v(srcs=[x], dsts=[ag], replica_group=RG, metadata_tensor=meta_ag,
                     has_rdispls=True)
    return a2a, _meta_out(meta_a2a), ag, _meta_out(meta_ag)


def _variable_inputs(rng, scale=1):
    x = rng.standard_normal((WORLD, 8, 64)).astype(np.float32)
    counts = rng.integers(0, SLOT + 1, (WORLD, WORLD)) * scale   # [sender, receiver]
    displs = rng.integers(0, 512 - SLOT + 1, (WORLD, WORLD))
    meta_a2a = np.zeros((WORLD, 3, WORLD), np.uint32)
    meta_a2a[:, 0], meta_a2a[:, 1] = counts, displs
    meta_ag = np.zeros((WORLD, 4, WORLD), np.uint32)
    meta_ag[:, 0, 0], meta_ag[:, 1, 0] = counts[:, 0], displs[:, 0]
    for d in range(WORLD):   # rank d puts sender s's chunk in slot (s + d) mod world
        meta_ag[d, 3] = [((s + d) % WORLD) * SLOT for s in range(WORLD)]
    return x, meta_a2a, meta_ag


def test_variable_collectives_move_the_counts_the_metadata_gives():
    """all_to_all_v and all_gather_v against numpy: chunks by the metadata's counts and
    displacements, placed by slot or by row 3, the rest of dst untouched, row 2 written."""
    x, meta_a2a, meta_ag = _variable_inputs(np.random.default_rng(11))
    tr = nki.trace(variable_kernel, x[0], meta_a2a[0], meta_ag[0], target="trn2")
    result = run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta_a2a": meta_a2a,
                                                       "meta_ag": meta_ag})
    a2a, meta_a2a_after, ag, meta_ag_after = (result.outputs[n] for n, _ in tr.output_names)
    for d in range(WORLD):
        want_a2a = np.full(512, -1.0, np.float32)
        want_ag = np.full(512, -1.0, np.float32)
        for s in range(WORLD):
            c, first = meta_a2a[s, 0, d], meta_a2a[s, 1, d]
            want_a2a[s * SLOT:s * SLOT + c] = x[s].ravel()[first:first + c]
            c, first, at = meta_ag[s, 0, 0], meta_ag[s, 1, 0], meta_ag[d, 3, s]
            want_ag[at:at + c] = x[s].ravel()[first:first + c]
        np.testing.assert_array_equal(a2a[d].ravel(), want_a2a)
        np.testing.assert_array_equal(ag[d].ravel(), want_ag)
        np.testing.assert_array_equal(meta_a2a_after[d, 2], meta_a2a[:, 0, d])
        np.testing.assert_array_equal(meta_ag_after[d, 2], meta_ag[:, 0, 0])
        np.testing.assert_array_equal(meta_a2a_after[d, :2], meta_a2a[d, :2])
    # the ranks spread over 3 partitions (each knows only its ranks' metadata): the same bits
    # and the same time
    split = run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta_a2a": meta_a2a,
                                                      "meta_ag": meta_ag}, partitions=3)
    for name, _ in tr.output_names:
        np.testing.assert_array_equal(split.outputs[name], result.outputs[name])
    assert split.time_ns == result.time_ns


def test_variable_collectives_take_the_time_of_what_they_move():
    """The same program with every count 0 and with full slots: the links carry the bytes
    the metadata says, so moving nothing is faster."""
    x, meta_a2a, meta_ag = _variable_inputs(np.random.default_rng(12))
    tr = nki.trace(variable_kernel, x[0], meta_a2a[0], meta_ag[0], target="trn2")
    times = []
    for counts in (0, SLOT):
        meta_a2a[:, 0] = counts
        meta_ag[:, 0, 0] = counts
        result = run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta_a2a": meta_a2a,
                                                           "meta_ag": meta_ag})
        times.append(result.time_ns)
    assert times[0] < times[1]


def test_a_variable_count_outside_its_tensor_is_a_run_time_fault():
    x, meta_a2a, meta_ag = _variable_inputs(np.random.default_rng(13))
    meta_a2a[5, 1, 2] = 500   # rank 5 sends 500 + count elements of a 512-element src
    meta_a2a[5, 0, 2] = 20
    tr = nki.trace(variable_kernel, x[0], meta_a2a[0], meta_ag[0], target="trn2")
    with pytest.raises(RuntimeFault, match="rank 5 sends 20 elements from element 500 of "
                                           "'x' .* past its 512 elements"):
        run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta_a2a": meta_a2a,
                                                  "meta_ag": meta_ag})
    meta_a2a[5, 1, 2] = 0
    meta_a2a[5, 0, 2] = SLOT + 1   # more than rank 2's slot for rank 5
    with pytest.raises(RuntimeFault, match="rank 2 receives 33 elements from rank 5 in its "
                                           "slot of 32 elements"):
        run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": x, "meta_a2a": meta_a2a,
                                                  "meta_ag": meta_ag})


def test_variable_collectives_take_one_tensor_and_a_metadata_tensor():
    def k(x):
        ncc.all_to_all_v(srcs=[x, x], dsts=[x, x], replica_group=RG, metadata_tensor=x)

    with pytest.raises(NkiError, match="exactly one tensor each"):
        nki.trace(k, np.zeros((32, 64), np.float32))

    def k2(x):
        ncc.all_gather_v(srcs=[x], dsts=[x], replica_group=RG, metadata_tensor=3)

    with pytest.raises(NkiError, match="metadata_tensor must be a uint32"):
        nki.trace(k2, np.zeros((32, 64), np.float32))

    def k3(x):
        ncc.all_gather_v(srcs=[x], dsts=[x], replica_group=RG, metadata_tensor=x)

    with pytest.raises(AsmError, match="meta has dtype float32; cc.all_gather_v accepts "
                                       "uint32") as e:
        nki.trace(k3, np.zeros((32, 64), np.float32)).assemble()
    assert e.value.location.line == k3.__code__.co_firstlineno + 1   # the kernel's call


def _sync_trace(branch: bool) -> Tracer:
    """What one core of an LNC2 launch traces when a barrier sits in a branch on its id."""
    tr = Tracer(target="trn2")
    _CURRENT.append(tr)
    try:
        data = tr.hbm_tensor("data", "float32", (4, 4), "input", None)
        if branch:
            nisa.core_barrier(data=data, cores=(0, 1))
        nisa.core_barrier(data=data, cores=(0, 1))
    finally:
        _CURRENT.pop()
    return tr


def test_lnc2_cores_must_reach_the_same_barriers():
    check_identical_control_flow([_sync_trace(False), _sync_trace(False)])
    with pytest.raises(NkiError, match="diverge at their synchronization point #2") as e:
        check_identical_control_flow([_sync_trace(True), _sync_trace(False)])
    assert "identical control flow" in str(e.value)


def barrier_per_rank(x):
    """Rank r reaches r barriers (a device loop bounded by its rank): the cores' control flow
    differs at run time."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)

    def body(i):
        nisa.core_barrier(data=out, cores=(0, 1))

    nl.fori_loop(0, ncc.rank_id(), body)
    return out


def test_cores_reaching_different_barriers_at_run_time_are_reported():
    from neuronemu.errors import NeuronemuError

    tr = nki.trace(barrier_per_rank, np.zeros((4, 4), np.float32), target="trn2")
    with pytest.raises(NeuronemuError) as e:
        run_spmd(tr.assemble(), TOPOLOGY, inputs={"x": np.zeros((4, 4), np.float32)})
    assert "barrier" in str(e.value)


def lnc2_exchange(x):
    """Each program of kernel[2] publishes its half, waits at the barrier, reads the other's."""
    out = nl.ndarray((2, 128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((2, 128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid])
    nisa.dma_copy(dst=scratch[pid], src=t)
    nisa.core_barrier(data=scratch, cores=(0, 1))
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=scratch[1 - pid])
    nisa.dma_copy(dst=out[pid], src=u)
    return out


def test_programs_of_a_grid_meet_at_their_barriers():
    """Traced one after another, program 0 read program 1's half before it was written (NaN);
    traced in lockstep, each program reads what the other wrote before the barrier."""
    x = np.stack([np.full((128, 4), 1.0, np.float32), np.full((128, 4), 2.0, np.float32)])
    with pytest.warns(nki.NkiWarning, match="does not return it"):   # the scratch tensor
        got = nki.run(lnc2_exchange, x, grid=(2,)).outputs
    np.testing.assert_array_equal(got, x[::-1])
    asm = nki.trace(lnc2_exchange, x, grid=(2,)).asm
    assert "cc." not in asm     # one core's stream: the barrier is the order of the phases


def lnc2_parting(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    if pid == 0:
        nisa.core_barrier(data=x, cores=(0, 1))
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0])
    nisa.dma_copy(dst=out, src=t)
    return out


def test_programs_that_part_at_a_barrier_are_a_located_error():
    x = np.zeros((2, 128, 4), np.float32)
    with pytest.raises(NkiError, match="part at core_barrier #1") as e:
        nki.trace(lnc2_parting, x, grid=(2,))
    assert e.value.location.line == lnc2_parting.__code__.co_firstlineno + 4


def lnc2_sendrecv(x):
    """Each program of kernel[2] loads its half, swaps it with the other's by sendrecv, and
    writes max(own, other) + its program id into its half of the output."""
    out = nl.ndarray((2, 128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid])
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=u, send_to_rank=1 - pid, recv_from_rank=1 - pid, pipe_id=0)
    m = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=m, data1=t, data2=u, op=nl.maximum)
    r = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=m, op0=nl.add, operand0=float(pid))
    nisa.dma_copy(dst=out[pid], src=r)
    return out


def test_sendrecv_between_the_programs_of_a_grid_swaps_their_tiles():
    x = np.random.default_rng(3).standard_normal((2, 128, 4)).astype(np.float32)
    got = nki.run(lnc2_sendrecv, x, grid=(2,)).outputs
    both = np.maximum(x[0], x[1])
    np.testing.assert_array_equal(got, np.stack([both, both + 1]))
    asm = nki.trace(lnc2_sendrecv, x, grid=(2,)).asm
    assert "cc." not in asm and asm.count("dma.copy") == 2 + 2 + 2   # loads, the swap, stores


def lnc2_sendrecv_by_address(x):
    """lnc2_sendrecv with every tile placed by hand at the same address= in both programs
    (as nki-library's allocator does): on the hardware each program's SBUF is its own."""
    out = nl.ndarray((2, 128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=t, src=x[pid])
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf, address=(0, 16))
    nisa.sendrecv(src=t, dst=u, send_to_rank=1 - pid, recv_from_rank=1 - pid, pipe_id=0)
    m = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf, address=(0, 32))
    nisa.tensor_tensor(dst=m, data1=t, data2=u, op=nl.subtract)
    nisa.dma_copy(dst=out[pid], src=m)
    return out


def test_programs_placing_tiles_at_one_address_keep_separate_memories():
    x = np.random.default_rng(4).standard_normal((2, 128, 4)).astype(np.float32)
    got = nki.run(lnc2_sendrecv_by_address, x, grid=(2,)).outputs
    np.testing.assert_array_equal(got, np.stack([x[0] - x[1], x[1] - x[0]]))


def lnc2_unpaired(x):
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=u, send_to_rank=1, recv_from_rank=1, pipe_id=0)
    return x


def test_sendrecv_calls_of_a_grid_that_do_not_pair_up_are_a_located_error():
    with pytest.raises(NkiError, match="program 0 sends to program 1, which receives from "
                                       "program 1") as e:
        nki.trace(lnc2_unpaired, np.zeros((128, 4), np.float32), grid=(2,))
    assert e.value.location.line == lnc2_unpaired.__code__.co_firstlineno + 4


def lnc2_zero_then_write(x):
    """Each program of kernel[2] zeroes the whole shared output (no barrier), then writes its
    own rows: on the hardware both zero early, side by side, then both write."""
    out = nl.ndarray((256, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    zero = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(zero, 0)
    for i in nl.affine_range(2):
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=zero)
    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * 128:(pid + 1) * 128, :])
    doubled = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out[pid * 128:(pid + 1) * 128, :], src=doubled)
    return out


def test_programs_of_a_grid_run_side_by_side_not_one_after_the_other():
    """Traced one after the other, program 1's zeroing came after program 0's rows and erased
    them (a wrong value, found in a public LNC2 kernel's test); merged instruction by
    instruction, both programs' rows survive, and each program's tiles keep their own bytes."""
    x = np.random.default_rng(7).standard_normal((256, 8)).astype(np.float32)
    run = nki.run(lnc2_zero_then_write, x, grid=(2,))
    np.testing.assert_array_equal(run.outputs, x * 2)
    body = [line.split("#")[0].split()[0] for line in run.asm.splitlines()
            if line.startswith("    ")]
    # the two programs' instructions alternate: memset, memset, copy, copy, ...
    assert len(body) % 2 == 0 and body[:2] == ["vector.memset", "vector.memset"]
    assert body[::2] == body[1::2]


def lnc2_big_tiles(x):
    """Each program keeps a tile of 70% of a partition's SBUF: merged, two do not fit."""
    out = nl.ndarray((256, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    big = nl.ndarray((128, 34000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(big, 1.0)
    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * 128:(pid + 1) * 128, :])
    nisa.tensor_tensor(dst=t, data1=t, data2=big[:, 0:8], op=nl.add)
    nisa.dma_copy(dst=out[pid * 128:(pid + 1) * 128, :], src=t)
    return out


def test_programs_whose_tiles_do_not_fit_together_run_one_after_the_other():
    x = np.random.default_rng(8).standard_normal((256, 8)).astype(np.float32)
    run = nki.run(lnc2_big_tiles, x, grid=(2,))
    np.testing.assert_array_equal(run.outputs, x + 1)
    body = [line.split("#")[0].split()[0] for line in run.asm.splitlines()
            if line.startswith("    ")]
    assert body[0] == "vector.memset" and body[1] != "vector.memset"   # not merged


def lnc2_whole_psum(x):
    """Each program of kernel[2] takes the whole PSUM (8 banks) and most of SBUF by address=,
    as nki-library's allocators do, and the programs meet at a barrier: together they need
    two cores' memories."""
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    big = nl.ndarray((128, 200 * 256), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 200 * 1024))
    nisa.dma_copy(dst=t, src=x[pid])
    nisa.memset(big[:, 0:512], value=float(pid))
    acc = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 2048 * b))
           for b in range(8)]
    nisa.tensor_tensor(dst=acc[7], data1=t, data2=big[:, 0:512], op=nl.add)
    nisa.core_barrier(data=out, cores=(0, 1))
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 202 * 1024))
    nisa.tensor_copy(dst=r, src=acc[7])
    nisa.dma_copy(dst=out[pid], src=r)
    return out


def test_lnc2_programs_that_each_fill_a_core_get_a_core_each():
    """On one core the two programs' hand-placed PSUM tiles would need 32 KiB of its 16: the
    launch is placed in a logical core of two cores' memories (.target trn2 cores=2), each
    program in its own, and each program's values are its own."""
    x = np.random.default_rng(5).standard_normal((2, 128, 512)).astype(np.float32)
    run = nki.run(lnc2_whole_psum, x, grid=(2,))
    np.testing.assert_array_equal(run.outputs, np.stack([x[0], x[1] + 1]))
    assert ".target trn2 cores=2" in run.asm
    assert "cores=" not in nki.trace(lnc2_exchange, np.zeros((2, 128, 4), np.float32),
                                     grid=(2,)).asm   # (it fits one core: no change)
