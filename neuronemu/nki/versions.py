"""The NKI names of each version: the NKI 0.6.0 ``nki.isa`` / ``nki.language`` /
``nki.collectives`` names, the names of other NKI versions with what to write instead, and
``describe_missing``, the message for a name this front end lacks. Pure data: imports nothing
of neuronemu."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ISA_06 = _words("""
engine reduce_cmd dge_mode oob_mode matmul_perf_mode nc_version dma_engine NkiInstruction
NkiValidationError VirtualRegister get_nc_sub_version get_nc_version dma_copy tensor_copy memset
tensor_copy_predicated nc_matmul nc_matmul_mx nc_transpose dma_transpose tensor_tensor
tensor_scalar tensor_reduce tensor_partition_reduce tensor_scalar_cumulative activation
activation_reduce activate2 iota affine_select local_gather nc_n_gather bn_stats bn_aggr
tensor_tensor_scan nc_stream_shuffle rng dropout set_rng_seed rand_set_state rand_get_state rand2
exponential reciprocal max8 sequence_bounds scalar_tensor_tensor tensor_scalar_reduce
core_barrier dma_compute quantize_mx range_select select_reduce sendrecv register_alloc
register_move register_load register_store nc_find_index8 nc_match_replace8 nonzero_with_count
topk tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine constants
""")
"""The ``nki.isa`` names of NKI 0.6.0 (Neuron SDK 2.32)."""

LANGUAGE_06 = _words("""
bool_ int8 int16 int32 uint8 uint16 uint32 float16 float32 bfloat16 tfloat32 float8_e4m3
float8_e4m3fn float8_e5m2 float8_e5m2_x4 float8_e4m3fn_x4 float8_e8m0fnu float4_e2m1fn_x4 sbuf
psum hbm private_hbm shared_hbm tile_size average prelu bypass MemoryRegion NKIObject NkiTensor
is_hbm is_on_chip is_psum is_sbuf add subtract multiply divide maximum minimum abs_max abs_min
abs square power equal not_equal less less_equal greater greater_equal bitwise_and bitwise_or
bitwise_xor invert left_shift right_shift logical_and logical_or logical_xor logical_not exp log
sqrt rsqrt tanh sigmoid relu gelu gelu_apprx_sigmoid gelu_apprx_tanh gelu_dx
gelu_apprx_sigmoid_dx silu silu_dx softplus mish erf erf_dx reciprocal copy sin cos tan arctan
ceil floor trunc negative sign fmod mod sum max min mean prod var all softmax rms_norm where
dropout ones full zeros_like empty_like random_seed expand_dims broadcast_to transpose matmul
no_reorder load_transpose2d gather_flattened ds affine_range sequential_range static_range
dynamic_range fori_loop while_loop ndarray zeros load store program_id num_programs program_ndim
shared_constant shared_identity_matrix device_print rand
""")
"""The ``nki.language`` names of NKI 0.6.0."""

COLLECTIVES_06 = _words("""
ReplicaGroup all_reduce all_gather all_gather_v reduce_scatter all_to_all all_to_all_v
collective_permute collective_permute_implicit collective_permute_implicit_reduce
collective_permute_implicit_current_processing_rank_id rank_id
""")

OTHER_VERSIONS = {
    "language": {
        "arange": "NKI 0.1 (neuronxcc.nki); index with slices and nl.ds(start, size) instead",
        "mgrid": "NKI 0.1 (neuronxcc.nki); index with slices and nl.ds(start, size) instead",
        "par_dim": "NKI 0.1 (neuronxcc.nki); the first dim of an on-chip tensor is its "
                   "partition dim: write nl.ndarray((P, ...), ...)",
        "loop_reduce": "NKI 0.1; accumulate with nisa.tensor_tensor(dst=acc, data1=acc, "
                       "data2=x, op=nl.add)",
        "spmd_dim": "NKI 0.1; launch with kernel[grid](...) and read nl.program_id(axis)",
        "nc": "NKI 0.1; launch with kernel[grid](...)",
        "static_cast": "NKI 0.1; copy with nisa.tensor_copy(dst=tile_of_new_dtype, src=x) or "
                       "reinterpret with t.view(dtype)",
    },
    "isa": {
        "tensor_copy_dynamic_src": "NKI 0.3 and earlier (removed in 0.4); read through "
                                   "t.ap(pattern, offset, scalar_offset=reg) instead",
        "tensor_copy_dynamic_dst": "NKI 0.3 and earlier (removed in 0.4); write through "
                                   "t.ap(pattern, offset, scalar_offset=reg) instead",
        "builtin": "NKI 0.1",
    },
    "nki": {
        "simulate_kernel": "NKI 0.1; write nki.simulate(kernel)(*args)",
        "baremetal": "NKI 0.1 (gone in 0.2+); call the kernel, or nki.simulate(kernel)(*args)",
        "benchmark": "NKI 0.1 (gone in 0.2+); the modelled time is kernel.last_run.time_ns",
        "profile": "NKI 0.1 (gone in 0.2+); kernel.last_run.chrome_trace() is the timeline",
    },
}

_SETS = {"isa": ISA_06, "language": LANGUAGE_06, "collectives": COLLECTIVES_06}


def describe_missing(namespace: str, name: str) -> str:
    """The message for ``nki.<namespace>.<name>`` that this front end does not have."""
    full = f"nki.{namespace}.{name}" if namespace != "nki" else f"nki.{name}"
    other = OTHER_VERSIONS.get(namespace, {}).get(name)
    if other:
        return f"{full} belongs to {other}"
    if name in _SETS.get(namespace, ()):
        return (f"{full} is an NKI 0.6 name that neuronemu does not implement (see "
                f"docs/nki.md for what is implemented)")
    return (f"{full} is not an NKI 0.6 name (neither here nor in NKI); check the spelling "
            f"against the NKI 0.6 API")
