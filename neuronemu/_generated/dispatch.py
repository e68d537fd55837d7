# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Opcode dispatch: one branch per table entry, calling its semantics function."""

from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.semantics import cc, ctrl, cumulative, dma, elementwise, gpsimd, mx, random, scalar, search, sync, tensor


@jit
def execute(opcode, ins, ops, imms, mems, regs, fmt, table):
    if opcode == 0x0101:  # tensor.matmul
        return tensor.matmul(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0102:  # tensor.transpose
        return tensor.transpose(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0103:  # tensor.matmul_mx
        return mx.matmul_mx(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0201:  # scalar.activation
        return scalar.activation(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0202:  # scalar.activate2
        return scalar.activate2(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0203:  # scalar.activation_reduce
        return scalar.activation_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0301:  # gpsimd.iota
        return gpsimd.iota(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0302:  # gpsimd.affine_select
        return gpsimd.affine_select(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0303:  # gpsimd.memset
        return elementwise.memset(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0304:  # gpsimd.tensor_copy
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0305:  # gpsimd.partition_reduce
        return gpsimd.partition_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0306:  # gpsimd.sequence_bounds
        return gpsimd.sequence_bounds(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0307:  # gpsimd.nonzero_with_count
        return gpsimd.nonzero_with_count(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0308:  # gpsimd.n_gather
        return gpsimd.n_gather(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0309:  # gpsimd.rng
        return random.rng(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030a:  # gpsimd.local_gather
        return gpsimd.local_gather(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030b:  # gpsimd.topk
        return gpsimd.topk(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030c:  # gpsimd.rand_get_state
        return random.rand_get_state(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030d:  # gpsimd.rand_set_state
        return random.rand_set_state(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030e:  # gpsimd.tensor_copy_dynamic_src
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x030f:  # gpsimd.tensor_copy_dynamic_dst
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0401:  # dma.copy
        return dma.copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0402:  # dma.compress
        return dma.compress(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0403:  # dma.decompress
        return dma.decompress(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0404:  # dma.transpose
        return dma.transpose(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0405:  # dma.compute
        return dma.compute(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0406:  # dma.accumulate
        return dma.accumulate(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0407:  # dma.gather
        return dma.gather(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0408:  # dma.scatter
        return dma.scatter(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0501:  # vector.tensor_tensor
        return elementwise.tensor_tensor(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0502:  # vector.tensor_scalar
        return elementwise.tensor_scalar(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0503:  # vector.tensor_reduce
        return elementwise.tensor_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0504:  # vector.tensor_copy
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0505:  # vector.memset
        return elementwise.memset(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0506:  # vector.reciprocal
        return elementwise.reciprocal(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0507:  # vector.bn_stats
        return elementwise.bn_stats(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0508:  # vector.bn_aggr
        return elementwise.bn_aggr(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0509:  # vector.transpose
        return elementwise.transpose32(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050a:  # vector.scalar_tensor_tensor
        return elementwise.scalar_tensor_tensor(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050b:  # vector.tensor_tensor_scan
        return elementwise.tensor_tensor_scan(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050c:  # vector.tensor_scalar_reduce
        return elementwise.tensor_scalar_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050d:  # vector.tensor_copy_predicated
        return elementwise.tensor_copy_predicated(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050e:  # vector.max8
        return search.max8(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x050f:  # vector.find_index8
        return search.find_index8(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0510:  # vector.select_reduce
        return search.select_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0511:  # vector.match_replace8
        return search.match_replace8(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0512:  # vector.tensor_scalar_cumulative
        return cumulative.tensor_scalar_cumulative(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0513:  # vector.exponential
        return cumulative.exponential(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0514:  # vector.range_select
        return cumulative.range_select(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0515:  # vector.rng
        return random.rng(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0516:  # vector.set_rng_seed
        return random.set_rng_seed(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0517:  # vector.rand2
        return random.rand2(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0518:  # vector.dropout
        return random.dropout(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0519:  # vector.quantize_mx
        return mx.quantize_mx(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x051a:  # vector.stream_shuffle
        return search.stream_shuffle(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x051b:  # vector.rand_get_state
        return random.rand_get_state(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x051c:  # vector.rand_set_state
        return random.rand_set_state(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x051d:  # vector.tensor_copy_dynamic_src
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x051e:  # vector.tensor_copy_dynamic_dst
        return elementwise.tensor_copy(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0601:  # sync.signal
        return sync.signal(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0602:  # sync.wait
        return sync.wait(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0603:  # sync.barrier
        return sync.barrier(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0701:  # ctrl.mov
        return ctrl.mov(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0702:  # ctrl.add
        return ctrl.add(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0703:  # ctrl.sub
        return ctrl.sub(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0704:  # ctrl.mul
        return ctrl.mul(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0705:  # ctrl.blt
        return ctrl.blt(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0706:  # ctrl.bge
        return ctrl.bge(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0707:  # ctrl.bne
        return ctrl.bne(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0708:  # ctrl.beq
        return ctrl.beq(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0709:  # ctrl.jmp
        return ctrl.jmp(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070a:  # ctrl.div
        return ctrl.div(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070b:  # ctrl.rem
        return ctrl.rem(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070c:  # ctrl.rank
        return ctrl.rank(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070d:  # ctrl.world
        return ctrl.world(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070e:  # ctrl.load
        return ctrl.load(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x070f:  # ctrl.store
        return ctrl.store(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0801:  # cc.send
        return cc.send(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0802:  # cc.recv
        return cc.recv(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0803:  # cc.all_reduce
        return cc.all_reduce(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0804:  # cc.reduce_scatter
        return cc.reduce_scatter(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0805:  # cc.all_gather
        return cc.all_gather(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0806:  # cc.all_to_all
        return cc.all_to_all(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0807:  # cc.permute
        return cc.permute(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0808:  # cc.barrier
        return cc.barrier(ins, ops, imms, mems, regs, fmt, table)
    if opcode == 0x0809:  # cc.sendrecv
        return cc.sendrecv(ins, ops, imms, mems, regs, fmt, table)
    return L.STATUS_BAD_OPCODE
