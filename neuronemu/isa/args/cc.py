# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Argument slots of the semantics functions of neuronemu/semantics/cc.py, by name:
``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the instruction (its position in the
entries' ``args``, which every entry sharing a function declares alike)."""

# cc.all_gather: isa/cc.toml: [all_gather]
ALL_GATHER_DST = 0
ALL_GATHER_SRC = 1
ALL_GATHER_DIM = 2
ALL_GATHER_ALGORITHM = 3
ALL_GATHER_QUEUE = 4
ALL_GATHER_GROUP_SIZE = 5
ALL_GATHER_GROUP_STRIDE = 6

# cc.all_gather_v: isa/cc.toml: [all_gather_v]
ALL_GATHER_V_DST = 0
ALL_GATHER_V_SRC = 1
ALL_GATHER_V_META = 2
ALL_GATHER_V_RECV_COUNTS_KNOWN = 3
ALL_GATHER_V_HAS_RDISPLS = 4
ALL_GATHER_V_QUEUE = 5
ALL_GATHER_V_GROUP_SIZE = 6
ALL_GATHER_V_GROUP_STRIDE = 7

# cc.all_reduce: isa/cc.toml: [all_reduce]
ALL_REDUCE_DST = 0
ALL_REDUCE_SRC = 1
ALL_REDUCE_OP = 2
ALL_REDUCE_ALGORITHM = 3
ALL_REDUCE_QUEUE = 4
ALL_REDUCE_GROUP_SIZE = 5
ALL_REDUCE_GROUP_STRIDE = 6

# cc.all_to_all: isa/cc.toml: [all_to_all]
ALL_TO_ALL_DST = 0
ALL_TO_ALL_SRC = 1
ALL_TO_ALL_DIM = 2
ALL_TO_ALL_QUEUE = 3
ALL_TO_ALL_GROUP_SIZE = 4
ALL_TO_ALL_GROUP_STRIDE = 5

# cc.all_to_all_v: isa/cc.toml: [all_to_all_v]
ALL_TO_ALL_V_DST = 0
ALL_TO_ALL_V_SRC = 1
ALL_TO_ALL_V_META = 2
ALL_TO_ALL_V_RECV_COUNTS_KNOWN = 3
ALL_TO_ALL_V_HAS_RDISPLS = 4
ALL_TO_ALL_V_QUEUE = 5
ALL_TO_ALL_V_GROUP_SIZE = 6
ALL_TO_ALL_V_GROUP_STRIDE = 7

# cc.barrier: isa/cc.toml: [barrier]
BARRIER_QUEUE = 0

# cc.permute: isa/cc.toml: [permute]
PERMUTE_DST = 0
PERMUTE_SRC = 1
PERMUTE_SHIFT = 2
PERMUTE_QUEUE = 3
PERMUTE_GROUP_SIZE = 4
PERMUTE_GROUP_STRIDE = 5

# cc.recv: isa/cc.toml: [recv]
RECV_DST = 0
RECV_PEER = 1
RECV_QUEUE = 2

# cc.reduce_scatter: isa/cc.toml: [reduce_scatter]
REDUCE_SCATTER_DST = 0
REDUCE_SCATTER_SRC = 1
REDUCE_SCATTER_OP = 2
REDUCE_SCATTER_DIM = 3
REDUCE_SCATTER_ALGORITHM = 4
REDUCE_SCATTER_QUEUE = 5
REDUCE_SCATTER_GROUP_SIZE = 6
REDUCE_SCATTER_GROUP_STRIDE = 7

# cc.send: isa/cc.toml: [send]
SEND_SRC = 0
SEND_PEER = 1
SEND_QUEUE = 2

# cc.sendrecv: isa/cc.toml: [sendrecv]
SENDRECV_DST = 0
SENDRECV_SRC = 1
SENDRECV_SEND_TO = 2
SENDRECV_RECV_FROM = 3
SENDRECV_QUEUE = 4
