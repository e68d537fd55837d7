"""Collectives (cc.all_reduce, reduce_scatter, all_gather, all_to_all, permute, barrier) against
independent numpy / ml_dtypes oracles on every topology and with every algorithm that applies,
the numerics of the reduction order (fp32 bound, bf16 ring order, mesh order, saturation), and
the modelled time of the ring all-reduce against the textbook formula."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from spmd_helpers import TOPOLOGIES, algorithms, bits_equal, blocks, spmd, world_of

# ---------------------------------------------------------------------------------------------
# 1. every collective, exact int32 results, every topology and algorithm


# (name prefix, declaration shape, instruction) of the algorithm-dependent collectives, n = world
VARIANTS = {
    "ar_add": ("[3, 8]", "cc.all_reduce {dst}, a, op=add, algorithm={alg}"),
    "ar_maximum": ("[3, 8]", "cc.all_reduce {dst}, a, op=maximum, algorithm={alg}"),
    "ar_minimum": ("[3, 8]", "cc.all_reduce {dst}, a, op=minimum, algorithm={alg}"),
    "rs_add0": ("[2, 4]", "cc.reduce_scatter {dst}, s0, op=add, dim=0, algorithm={alg}"),
    "rs_min0": ("[2, 4]", "cc.reduce_scatter {dst}, s0, op=minimum, dim=0, algorithm={alg}"),
    "rs_max1": ("[3, 2]", "cc.reduce_scatter {dst}, s1, op=maximum, dim=1, algorithm={alg}"),
    "ag0": ("[{2n}, 3]", "cc.all_gather {dst}, g0, dim=0, algorithm={alg}"),
    "ag1": ("[3, {2n}]", "cc.all_gather {dst}, g1, dim=1, algorithm={alg}"),
}


def variants(n: int) -> list[tuple[str, str]]:
    """(variant, algorithm) pairs the kernel for world n holds: all of them up to 64 ranks; on
    larger worlds (where the emulator books ~20k messages per mesh step) the ring takes every
    variant and mesh / auto a third each, so each algorithm still runs each kind of collective."""
    if n <= 64:
        return [(v, alg) for alg in algorithms(n) for v in VARIANTS]
    assert algorithms(n) == ["ring", "mesh", "auto"]
    return ([(v, "ring") for v in VARIANTS]
            + [(v, "mesh") for v in ("ar_add", "rs_max1", "ag0")]
            + [(v, "auto") for v in ("ar_minimum", "rs_add0", "ag1")])


def collective_kernel(n: int) -> str:
    """One kernel with every collective, its shapes worked out for a world of n ranks."""
    decl = [
        ".hbm a int32[3, 8] input",                 # all_reduce
        f".hbm s0 int32[{2 * n}, 4] input",          # reduce_scatter dim=0
        f".hbm s1 int32[3, {2 * n}] input",          # reduce_scatter dim=1
        ".hbm g0 int32[2, 3] input",                # all_gather dim=0
        ".hbm g1 int32[3, 2] input",                # all_gather dim=1
        f".hbm t0 int32[{2 * n}, 3] input",          # all_to_all dim=0
        f".hbm t1 int32[2, {3 * n}] input",          # all_to_all dim=1
        ".hbm p int32[2, 5] input",                 # permute
        f".hbm a2a0 int32[{2 * n}, 3] output",
        f".hbm a2a1 int32[2, {3 * n}] output",
        ".hbm perm_plus1 int32[2, 5] output",
        ".hbm perm_minus3 int32[2, 5] output",
        ".hbm perm_reg int32[2, 5] output",
        ".hbm perm_world int32[2, 5] output",
        ".hbm ar_slice int32[4, 12] output init=zeros",
        ".hbm ar_sbuf int32[3, 8] output",
        ".sbuf sa int32[128, 8]",
        ".sbuf sb int32[128, 8]",
    ]
    body = []
    for variant, alg in variants(n):
        shape, instruction = VARIANTS[variant]
        dst = f"{variant}_{alg}"
        decl.append(f".hbm {dst} int32{shape.replace('{2n}', str(2 * n))} output")
        body.append("    " + instruction.format(dst=dst, alg=alg))
    body += [
        "    cc.all_to_all a2a0, t0, dim=0",
        "    cc.all_to_all a2a1, t1, dim=1",
        "    cc.barrier",
        "    cc.permute perm_plus1, p, shift=1",
        "    cc.permute perm_minus3, p, shift=-3",
        "    ctrl.world r5",
        "    ctrl.mul r5, r5, -2",
        "    ctrl.sub r5, r5, 5",                       # -2 world - 5 = -5 (mod world)
        "    cc.permute perm_reg, p, shift=r5",
        "    ctrl.world r6",
        "    cc.permute perm_world, p, shift=r6",       # a whole turn: every rank keeps its own
        "    cc.barrier queue=3",
        # slices of src and dst, and SBUF tiles
        "    cc.all_reduce ar_slice[1:4, 2:6], a[0:3, 4:8], op=add",
        "    dma.copy sa[0:3, :], a[:, :], queue=0",
        "    cc.all_reduce sb[0:3, :], sa[0:3, :], op=maximum, queue=7",
        "    dma.copy ar_sbuf[:, :], sb[0:3, :], queue=1",
    ]
    return "\n".join(decl + body) + "\n"


def collective_inputs(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def ints(*shape):
        return rng.integers(-1000, 1000, size=(n, *shape)).astype(np.int32)

    return {"a": ints(3, 8), "s0": ints(2 * n, 4), "s1": ints(3, 2 * n), "g0": ints(2, 3),
            "g1": ints(3, 2), "t0": ints(2 * n, 3), "t1": ints(2, 3 * n), "p": ints(2, 5)}


def collective_oracle(x: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Per output: the (world, *shape) array the ranks should hold, from numpy alone."""
    a = x["a"].astype(np.int64)
    s0 = x["s0"].astype(np.int64)
    s1 = x["s1"].astype(np.int64)
    by_variant = {
        "ar_add": np.broadcast_to(a.sum(0), (n, 3, 8)),
        "ar_maximum": np.broadcast_to(a.max(0), (n, 3, 8)),
        "ar_minimum": np.broadcast_to(a.min(0), (n, 3, 8)),
        "rs_add0": np.stack(blocks(s0.sum(0), n, 0)),      # rank r: block r of the reduction
        "rs_min0": np.stack(blocks(s0.min(0), n, 0)),
        "rs_max1": np.stack(blocks(s1.max(0), n, 1)),
        "ag0": np.broadcast_to(np.concatenate(list(x["g0"]), axis=0), (n, 2 * n, 3)),
        "ag1": np.broadcast_to(np.concatenate(list(x["g1"]), axis=1), (n, 3, 2 * n)),
    }
    out = {f"{v}_{alg}": by_variant[v] for v, alg in variants(n)}
    # all_to_all: block i of rank j's dst is block j of rank i's src
    for name, src, dim in (("a2a0", x["t0"], 0), ("a2a1", x["t1"], 1)):
        split = [blocks(src[i], n, dim) for i in range(n)]
        out[name] = np.stack([np.concatenate([split[i][j] for i in range(n)], dim)
                              for j in range(n)])
    p = x["p"]
    for name, shift in (("perm_plus1", 1), ("perm_minus3", -3), ("perm_reg", -2 * n - 5),
                        ("perm_world", n)):
        # rank r's src lands on rank (r + shift) mod n
        expected = np.empty_like(p)
        for r in range(n):
            expected[(r + shift) % n] = p[r]
        out[name] = expected
    out["ar_sbuf"] = np.broadcast_to(a.max(0), (n, 3, 8))
    return out


WORLDS = [("trn1.2xlarge", 1), ("trn1.2xlarge", 2), ("trn1.32xlarge", 1), ("trn1.32xlarge", 2),
          ("trn2.48xlarge", 1), ("trn2-ultraserver", 1), ("trn3-ultraserver-gen1", 1),
          ("trn3-ultraserver-gen2", 1)]


@pytest.mark.parametrize("topology, ranks_per_chip", WORLDS,
                         ids=[f"{t}-x{k}" for t, k in WORLDS])
def test_every_collective_is_exact_on_every_topology(topology, ranks_per_chip) -> None:
    n = world_of(topology, ranks_per_chip)
    x = collective_inputs(n, seed=n)
    # world 1: the declared shape (what a single rank takes); otherwise one array per rank
    inputs = {k: v[0] for k, v in x.items()} if n == 1 else x
    result = spmd(collective_kernel(n), topology, inputs, ranks_per_chip=ranks_per_chip)
    assert result.world == n
    expected = collective_oracle(x, n)
    outputs = result.outputs
    assert set(outputs) == {*expected, "ar_slice"}
    for name, want in expected.items():
        got = outputs[name]
        assert got.dtype == np.int32, name
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert np.array_equal(got.astype(np.int64), want), (topology, name)
    # sliced all_reduce: only the addressed window is written
    window = outputs["ar_slice"][:, 1:4, 2:6].astype(np.int64)
    assert np.array_equal(window, np.broadcast_to(x["a"][:, :, 4:8].sum(0), (n, 3, 4)))
    untouched = outputs["ar_slice"].copy()
    untouched[:, 1:4, 2:6] = 0
    assert not untouched.any()
    # collectives read their sources and leave them alone
    for r in (0, n - 1):
        for name, value in x.items():
            assert np.array_equal(result.ranks[r].tensors[name], value[r]), (r, name)
    assert all(not rank.warnings for rank in result.ranks)


@pytest.mark.parametrize("dtype, value, expected", [
    ("int32", 2 ** 30, 2 ** 31 - 1),
    ("int32", -(2 ** 30), -(2 ** 31)),
    ("int8", 100, 127),
    ("uint8", 200, 255),
    ("int16", -20000, -32768),
])
def test_integer_sums_saturate(dtype, value, expected) -> None:
    """Every rank holds the same value, so every partial sum has its sign: the result is the
    saturated total whatever the order."""
    text = (f".hbm x {dtype}[32, 4] input\n.hbm y {dtype}[32, 4] output\n"
            f".hbm z {dtype}[32, 4] output\n.hbm v {dtype}[2, 4] output\n"
            "    cc.all_reduce y, x, op=add, algorithm=ring\n"
            "    cc.all_reduce z, x, op=add, algorithm=rdh\n"
            "    cc.reduce_scatter v, x, op=add, dim=0, algorithm=mesh\n")
    np_dtype = np.dtype(dtype)
    result = spmd(text, "trn2.48xlarge", {"x": np.full((32, 4), value, np_dtype)})
    for name in "yzv":
        out = result.outputs[name]
        assert out.dtype == np_dtype
        assert (out.astype(np.int64) == expected).all(), (name, out.ravel()[:4])


def test_int8_partial_sums_saturate_in_mesh_order() -> None:
    """Mesh: block q is reduced on rank q as own + rank 0's + rank 1's + ... (rank order,
    skipping q), each partial sum saturated to int8 (docs/multichip.md)."""
    n = 16
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, size=(n, 1, n * 4)).astype(np.int8)
    result = spmd(f".hbm x int8[1, {n * 4}] input\n.hbm y int8[1, {n * 4}] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=mesh\n", "trn2.48xlarge", {"x": x})
    flat = x.reshape(n, -1).astype(np.int64)
    bounds = np.linspace(0, flat.shape[1], n + 1).astype(np.int64)
    expected = np.empty(flat.shape[1], np.int64)
    for q in range(n):
        part = slice(bounds[q], bounds[q + 1])
        acc = flat[q, part]
        for r in range(n):
            if r != q:
                acc = np.clip(acc + flat[r, part], -128, 127)
        expected[part] = acc
    assert not np.array_equal(expected, np.clip(flat.sum(0), -128, 127))  # the order matters
    for r in range(n):
        assert np.array_equal(result.outputs["y"][r].ravel().astype(np.int64), expected)


# ---------------------------------------------------------------------------------------------
# 2. float numerics: within the bound of the reduction order; bf16 ring order; fp32 mesh order


@pytest.mark.parametrize("topology", ["trn2.48xlarge", "trn3-ultraserver-gen1"])
def test_float32_all_reduce_within_reduction_bound(topology) -> None:
    n = world_of(topology)
    algs = algorithms(n)
    text = ".hbm x float32[4, 33] input init=normal(0, 1)\n" + "".join(
        f".hbm y_{a} float32[4, 33] output\n" for a in algs) + "".join(
        f"    cc.all_reduce y_{a}, x, op=add, algorithm={a}\n" for a in algs)
    result = spmd(text, topology)
    x = np.stack([rank.tensors["x"] for rank in result.ranks]).astype(np.float64)
    assert not np.array_equal(x[0], x[1])  # normal() draws a stream per rank
    exact = x.sum(0)
    u = 2.0 ** -24
    gamma = (n - 1) * u / (1 - (n - 1) * u)
    bound = gamma * np.abs(x).sum(0)
    for a in algs:
        y = result.outputs[f"y_{a}"]
        assert y.dtype == np.float32
        err = np.abs(y.astype(np.float64) - exact)
        assert (err <= bound).all(), (a, float((err / bound).max()))
        # every rank ends with the same bits (one reduced value per element, then gathered)
        for r in range(1, n):
            assert bits_equal(y[r], y[0]), (a, r)


def ring_all_reduce_bf16(x: np.ndarray, ring: list[int]) -> np.ndarray:
    """The ring all-reduce of the per-rank bf16 arrays x[rank], simulated in ml_dtypes: the
    flattened data is cut into n chunks (linspace bounds); chunk c ends fully reduced on rank c.
    Its sum starts with the rank after c on the ring, and each following rank of the ring (up to
    c itself) adds its own chunk: bf16(float32(own) + float32(partial))."""
    n = len(ring)
    flat = x.reshape(n, -1)
    bounds = np.linspace(0, flat.shape[1], n + 1).astype(np.int64)
    out = np.empty(flat.shape[1], dtype=ml_dtypes.bfloat16)
    for c in range(n):
        part = slice(bounds[c], bounds[c + 1])
        j = ring.index(c)
        acc = flat[ring[(j + 1) % n], part]
        for s in range(2, n + 1):
            own = flat[ring[(j + s) % n], part]
            acc = (own.astype(np.float32) + acc.astype(np.float32)).astype(ml_dtypes.bfloat16)
        out[part] = acc
    return out.reshape(x.shape[1:])


def test_bf16_ring_all_reduce_follows_the_ring_order() -> None:
    topology = "trn2.48xlarge"
    ring = TOPOLOGIES[topology].ring()
    n = len(ring)
    assert ring != list(range(n))  # a snake walk: the ring order is not the rank order
    rng = np.random.default_rng(11)
    shape = (4, 37)  # 148 elements: chunks of 9 and 10
    x = (rng.standard_normal((n, *shape)) * np.exp(rng.uniform(-3, 3, (n, *shape))))
    x = x.astype(ml_dtypes.bfloat16)
    result = spmd(".hbm x bfloat16[4, 37] input\n.hbm y bfloat16[4, 37] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=ring\n", topology, {"x": x})
    expected = ring_all_reduce_bf16(x, ring)
    naive = x.astype(np.float64).sum(0).astype(ml_dtypes.bfloat16)
    assert not bits_equal(expected, naive)  # the test can tell orders apart
    y = result.outputs["y"]
    assert y.dtype == ml_dtypes.bfloat16
    for r in range(n):
        assert bits_equal(y[r], expected), r


def mesh_all_reduce(x: np.ndarray) -> np.ndarray:
    """The mesh all-reduce of the per-rank arrays x[rank] in x's dtype: chunk q (linspace bounds
    over the flattened data) is reduced on rank q as own + rank 0's + rank 1's + ... (rank
    order, q skipped), each sum computed in float32 and rounded to the dtype (ml_dtypes casts:
    overflow to inf, or NaN for float8_e4m3fn)."""
    n = x.shape[0]
    flat = x.reshape(n, -1)
    bounds = np.linspace(0, flat.shape[1], n + 1).astype(np.int64)
    out = np.empty(flat.shape[1], dtype=x.dtype)
    for q in range(n):
        part = slice(bounds[q], bounds[q + 1])
        acc = flat[q, part]
        for r in range(n):
            if r != q:
                with np.errstate(over="ignore", invalid="ignore"):
                    acc = (acc.astype(np.float32) + flat[r, part].astype(np.float32))
                    acc = acc.astype(x.dtype)
        out[part] = acc
    return out.reshape(x.shape[1:])


# the emulator lets numpy warn about the fp32 overflow it computes on purpose (see the report)
@pytest.mark.filterwarnings("ignore:overflow encountered in add:RuntimeWarning")
@pytest.mark.parametrize("dtype, scale", [
    ("float32", 1.0), ("float32", 1e38),
    ("bfloat16", 1.0), ("bfloat16", 1e38),
    ("float16", 100.0), ("float16", 10000.0),
    ("float8_e4m3fn", 4.0), ("float8_e4m3fn", 100.0),
    ("float8_e4m3", 4.0), ("float8_e5m2", 100.0), ("float8_e5m2", 10000.0),
    ("float8_e3m4", 0.5),
])
def test_mesh_all_reduce_adds_in_rank_order(dtype, scale) -> None:
    """Bit-exact against an ml_dtypes simulation of the mesh order, for every float dtype; the
    large scales overflow partial sums to inf (NaN for float8_e4m3fn), as docs/numerics.md
    says stores do."""
    n = 16
    np_dtype = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((n, 2, 40)) * scale).astype(np_dtype)
    result = spmd(f".hbm x {dtype}[2, 40] input\n.hbm y {dtype}[2, 40] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=mesh\n", "trn2.48xlarge", {"x": x})
    expected = mesh_all_reduce(x).astype(np.float64)
    if scale > 1000:
        assert not np.isfinite(expected).all()   # the overflow case does overflow
    y = result.outputs["y"]
    assert y.dtype == np_dtype
    for r in range(n):
        assert np.array_equal(y[r].astype(np.float64), expected, equal_nan=True), r


def test_bf16_max_and_min_are_exact() -> None:
    n = 16
    rng = np.random.default_rng(8)
    x = rng.standard_normal((n, 2, 24)).astype(ml_dtypes.bfloat16)
    result = spmd(".hbm x bfloat16[2, 24] input\n.hbm hi bfloat16[2, 24] output\n"
                  ".hbm lo bfloat16[2, 24] output\n"
                  "    cc.all_reduce hi, x, op=maximum, algorithm=rdh\n"
                  "    cc.all_reduce lo, x, op=minimum, algorithm=ring\n",
                  "trn2.48xlarge", {"x": x})
    wide = x.astype(np.float64)
    for r in range(n):
        assert np.array_equal(result.outputs["hi"][r].astype(np.float64), wide.max(0))
        assert np.array_equal(result.outputs["lo"][r].astype(np.float64), wide.min(0))


# ---------------------------------------------------------------------------------------------
# 3. modelled time of the ring all-reduce


@pytest.mark.parametrize("topology", ["trn1.32xlarge", "trn2.48xlarge", "trn2-ultraserver",
                                      "trn3-ultraserver-gen1"])
def test_ring_all_reduce_time_is_the_textbook_formula(topology) -> None:
    """2 (n - 1) steps of a chunk over the ring plus, in the n - 1 reduce-scatter steps, the
    receiver's addition of the chunk at the DMA reduce rate: half the per-core DMA bandwidth
    before v4, all of it on v4 (T3; 368 and 528 GB/s per core on trn2 and trn3, 272 on trn1)."""
    topo = TOPOLOGIES[topology]
    reduce_gb_s = {"trn1": 272 * 0.5, "trn2": 368 * 0.5, "trn3": 528 * 1.0}[topo.target]
    n = topo.chips
    times = []
    for k in (1, 4):
        free = 64 * k
        nbytes = 64 * free * 4
        assert nbytes % topo.chips == 0
        result = spmd(f".hbm x float32[64, {free}] input init=uniform(-1, 1)\n"
                      f".hbm y float32[64, {free}] output\n"
                      "    cc.all_reduce y, x, op=add, algorithm=ring\n", topology)
        network_only = topo.ring_allreduce_ns(nbytes)
        additions = (n - 1) * (nbytes / n) / reduce_gb_s
        if topology not in ("trn1.32xlarge", "trn2.48xlarge"):
            # rings whose steps differ (the ultraserver's 256 and 128 GB/s links, the switched
            # servers' one- and two-switch routes): a rank fed by a fast step adds while its own
            # message still takes a slow one, so some additions hide (an upper bound)
            assert network_only - 1e-6 <= result.time_ns <= network_only + additions + 1e-6
        else:
            assert result.time_ns == pytest.approx(network_only + additions, rel=1e-9)
        times.append(result.time_ns)
    assert times[1] > times[0]


def test_ring_all_reduce_traffic_on_the_torus() -> None:
    """2 (n - 1) steps, each rank sending 1/n of the data to its ring successor, which is a
    neighbour on the snake ring: every message crosses exactly one link."""
    topology = "trn2.48xlarge"
    topo = TOPOLOGIES[topology]
    n = topo.chips
    nbytes = 64 * 64 * 4
    result = spmd(".hbm x float32[64, 64] input init=ones\n.hbm y float32[64, 64] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=ring\n", topology)
    assert (result.outputs["y"] == n).all()
    net = result.network
    steps = 2 * (n - 1)
    assert net.messages == steps * n
    assert net.bytes == steps * nbytes
    assert net.link_bytes == steps * nbytes
    ring = topo.ring()
    expected_links = {f"chip{a}->chip{b}" for a, b in zip(ring, ring[1:] + ring[:1])}
    assert set(net.links) == expected_links
    for name, stats in net.links.items():
        a, b = (int(part.removeprefix("chip")) for part in name.split("->"))
        assert stats.messages == steps
        assert stats.bytes == steps * nbytes // n
        assert stats.busy_ns == pytest.approx(stats.bytes / topo.link(a, b).gb_s)


@pytest.mark.parametrize("topology", ["trn2.48xlarge", "trn2-ultraserver"])
def test_rdh_partners_are_torus_neighbours(topology) -> None:
    """Recursive halving/doubling on a torus of power-of-two sides: log2 n steps each way, each
    rank exchanging with one partner per step, and every partner one link away (Gray-code
    walk), so no message crosses two links. Each rank sends (n - 1) / n of its data each way."""
    n = world_of(topology)
    nbytes = 64 * 64 * 4
    result = spmd(".hbm x int32[64, 64] input init=ones\n.hbm y int32[64, 64] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=rdh\n", topology)
    assert (result.outputs["y"] == n).all()
    net = result.network
    assert net.messages == 2 * int(np.log2(n)) * n
    assert net.bytes == 2 * (n - 1) * nbytes
    assert net.link_bytes == net.bytes


def test_two_ranks_on_one_chip_exchange_through_dma() -> None:
    """trn1.2xlarge with both cores: a ring all-reduce of 2 ranks is 2 steps over the chip's DMA,
    each the target's fixed DMA cost plus half the data at the per-core DMA bandwidth, and the
    reduce-scatter step's addition of the half at half that bandwidth (T3: pre-v4 DMA reduce)."""
    program_text = ".hbm x float32[4, 64] input\n.hbm y float32[4, 64] output\n" \
                   "    cc.all_reduce y, x, op=add, algorithm=ring\n"
    rng = np.random.default_rng(2)
    x = rng.integers(-50, 50, (2, 4, 64)).astype(np.float32)
    result = spmd(program_text, "trn1.2xlarge", {"x": x}, ranks_per_chip=2)
    assert result.world == 2
    assert np.array_equal(result.outputs["y"], np.broadcast_to(x.sum(0), (2, 4, 64)))
    half = 4 * 64 * 4 // 2
    expected = 2 * (1300 + half / 272) + half / (272 * 0.5)
    assert result.time_ns == pytest.approx(expected, rel=1e-9)
    assert result.network.links == {}  # nothing crosses a chip-to-chip link


@pytest.mark.parametrize("topology, ranks_per_chip", [("trn2.48xlarge", 1),
                                                      ("trn2.48xlarge", 3)])
@pytest.mark.parametrize("dtype, op", [("float32", "add"), ("bfloat16", "add"),
                                       ("int32", "maximum")])
@pytest.mark.parametrize("sync", ["auto", "explicit"])
def test_mesh_all_reduce_as_arrays_is_the_message_path(monkeypatch, topology, ranks_per_chip,
                                                         dtype, op, sync) -> None:
    """A one-partition mesh all-reduce over every rank runs as arrays (Driver._mesh_all_reduce,
    C.mesh_step): 40 s -> 24 s at 1,152 ranks. Against the general path of Message objects and
    move_steps: the same output bits on every rank, the same modelled times, trace and link
    statistics, in both sync modes (the explicit replay re-times the collective from the
    array steps), on a power-of-two world and a 48-rank one."""
    import json

    from neuronemu.multichip import spmd as driver
    from neuronemu.timing.trace import chrome_trace_ranks

    n = world_of(topology, ranks_per_chip)
    np_dtype = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    x = (np.random.default_rng(11).standard_normal((n, 4, 50)) * 100).astype(np_dtype)
    text = (f".sync {sync}\n.hbm x {dtype}[4, 50] input\n.hbm y {dtype}[4, 50] output\n"
            f"    cc.all_reduce y, x, op={op}, algorithm=mesh\n")

    def run():
        result = spmd(text, topology, {"x": x}, ranks_per_chip=ranks_per_chip)
        return (result.outputs["y"], [r.timing.time_ns for r in result.ranks],
                json.dumps(chrome_trace_ranks(result)), repr(result.network))

    arrays = run()
    monkeypatch.setattr(driver, "MESH_AS_ARRAYS", False)
    messages = run()
    assert bits_equal(arrays[0], messages[0])
    assert arrays[1:] == messages[1:]
