# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Instruction kernels: one wrapper per semantics function, compiled on first use into
its own C-callable unit by neuronemu.exec.kernels (which explains why). The wrappers of
``neuronemu/semantics/<module>.py`` are in ``neuronemu.exec.wrappers.<module>``, imported
only when a program uses one of them (``neuronemu.exec.kernels.wrapper``)."""

# opcode -> kernel wrapper (<module>__<function>)
ENTRIES = {
    0x0101: 'tensor__matmul',  # tensor.matmul
    0x0102: 'tensor__transpose',  # tensor.transpose
    0x0103: 'mx__matmul_mx',  # tensor.matmul_mx
    0x0201: 'scalar__activation',  # scalar.activation
    0x0202: 'scalar__activate2',  # scalar.activate2
    0x0203: 'scalar__activation_reduce',  # scalar.activation_reduce
    0x0204: 'elementwise__tensor_scalar',  # scalar.tensor_scalar
    0x0301: 'gpsimd__iota',  # gpsimd.iota
    0x0302: 'gpsimd__affine_select',  # gpsimd.affine_select
    0x0303: 'elementwise__memset',  # gpsimd.memset
    0x0304: 'elementwise__tensor_copy',  # gpsimd.tensor_copy
    0x0305: 'gpsimd__partition_reduce',  # gpsimd.partition_reduce
    0x0306: 'gpsimd__sequence_bounds',  # gpsimd.sequence_bounds
    0x0307: 'gpsimd__nonzero_with_count',  # gpsimd.nonzero_with_count
    0x0308: 'gpsimd__n_gather',  # gpsimd.n_gather
    0x0309: 'random__rng',  # gpsimd.rng
    0x030a: 'gpsimd__local_gather',  # gpsimd.local_gather
    0x030b: 'gpsimd__topk',  # gpsimd.topk
    0x030c: 'random__rand_get_state',  # gpsimd.rand_get_state
    0x030d: 'random__rand_set_state',  # gpsimd.rand_set_state
    0x030e: 'elementwise__tensor_copy',  # gpsimd.tensor_copy_dynamic_src
    0x030f: 'elementwise__tensor_copy',  # gpsimd.tensor_copy_dynamic_dst
    0x0310: 'elementwise__tensor_tensor',  # gpsimd.tensor_tensor
    0x0311: 'elementwise__tensor_scalar',  # gpsimd.tensor_scalar
    0x0401: 'dma__copy',  # dma.copy
    0x0402: 'dma__compress',  # dma.compress
    0x0403: 'dma__decompress',  # dma.decompress
    0x0404: 'dma__transpose',  # dma.transpose
    0x0405: 'dma__compute',  # dma.compute
    0x0406: 'dma__accumulate',  # dma.accumulate
    0x0407: 'dma__gather',  # dma.gather
    0x0408: 'dma__scatter',  # dma.scatter
    0x0501: 'elementwise__tensor_tensor',  # vector.tensor_tensor
    0x0502: 'elementwise__tensor_scalar',  # vector.tensor_scalar
    0x0503: 'elementwise__tensor_reduce',  # vector.tensor_reduce
    0x0504: 'elementwise__tensor_copy',  # vector.tensor_copy
    0x0505: 'elementwise__memset',  # vector.memset
    0x0506: 'elementwise__reciprocal',  # vector.reciprocal
    0x0507: 'elementwise__bn_stats',  # vector.bn_stats
    0x0508: 'elementwise__bn_aggr',  # vector.bn_aggr
    0x0509: 'elementwise__transpose32',  # vector.transpose
    0x050a: 'elementwise__scalar_tensor_tensor',  # vector.scalar_tensor_tensor
    0x050b: 'elementwise__tensor_tensor_scan',  # vector.tensor_tensor_scan
    0x050c: 'elementwise__tensor_scalar_reduce',  # vector.tensor_scalar_reduce
    0x050d: 'elementwise__tensor_copy_predicated',  # vector.tensor_copy_predicated
    0x050e: 'search__max8',  # vector.max8
    0x050f: 'search__find_index8',  # vector.find_index8
    0x0510: 'search__select_reduce',  # vector.select_reduce
    0x0511: 'search__match_replace8',  # vector.match_replace8
    0x0512: 'cumulative__tensor_scalar_cumulative',  # vector.tensor_scalar_cumulative
    0x0513: 'cumulative__exponential',  # vector.exponential
    0x0514: 'cumulative__range_select',  # vector.range_select
    0x0515: 'random__rng',  # vector.rng
    0x0516: 'random__set_rng_seed',  # vector.set_rng_seed
    0x0517: 'random__rand2',  # vector.rand2
    0x0518: 'random__dropout',  # vector.dropout
    0x0519: 'mx__quantize_mx',  # vector.quantize_mx
    0x051a: 'search__stream_shuffle',  # vector.stream_shuffle
    0x051b: 'random__rand_get_state',  # vector.rand_get_state
    0x051c: 'random__rand_set_state',  # vector.rand_set_state
    0x051d: 'elementwise__tensor_copy',  # vector.tensor_copy_dynamic_src
    0x051e: 'elementwise__tensor_copy',  # vector.tensor_copy_dynamic_dst
    0x051f: 'indirection__indirect_gather',  # vector.indirect_gather
    0x0520: 'indirection__indirect_scatter',  # vector.indirect_scatter
    0x0601: 'sync__signal',  # sync.signal
    0x0602: 'sync__wait',  # sync.wait
    0x0603: 'sync__barrier',  # sync.barrier
    0x0701: 'ctrl__mov',  # ctrl.mov
    0x0702: 'ctrl__add',  # ctrl.add
    0x0703: 'ctrl__sub',  # ctrl.sub
    0x0704: 'ctrl__mul',  # ctrl.mul
    0x0705: 'ctrl__blt',  # ctrl.blt
    0x0706: 'ctrl__bge',  # ctrl.bge
    0x0707: 'ctrl__bne',  # ctrl.bne
    0x0708: 'ctrl__beq',  # ctrl.beq
    0x0709: 'ctrl__jmp',  # ctrl.jmp
    0x070a: 'ctrl__div',  # ctrl.div
    0x070b: 'ctrl__rem',  # ctrl.rem
    0x070c: 'ctrl__rank',  # ctrl.rank
    0x070d: 'ctrl__world',  # ctrl.world
    0x070e: 'ctrl__load',  # ctrl.load
    0x070f: 'ctrl__store',  # ctrl.store
    0x0801: 'cc__send',  # cc.send
    0x0802: 'cc__recv',  # cc.recv
    0x0803: 'cc__all_reduce',  # cc.all_reduce
    0x0804: 'cc__reduce_scatter',  # cc.reduce_scatter
    0x0805: 'cc__all_gather',  # cc.all_gather
    0x0806: 'cc__all_to_all',  # cc.all_to_all
    0x0807: 'cc__permute',  # cc.permute
    0x0808: 'cc__barrier',  # cc.barrier
    0x0809: 'cc__sendrecv',  # cc.sendrecv
    0x080a: 'cc__all_to_all_v',  # cc.all_to_all_v
    0x080b: 'cc__all_gather_v',  # cc.all_gather_v
}
