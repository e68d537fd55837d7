"""Field layout of the lowered program arrays shared by the assembler and the jitted interpreter.

A program lowers to three arrays:
  instrs  int64 [n, INSTR_WIDTH]    one row per static instruction
  ops     int64 [m, OP_WIDTH]       one row per memory or scalar operand (access patterns)
  imms    float64 [k]               floating-point immediates

Instruction row: opcode, engine, source line, then (tag, value) pairs for the arguments in the
order the ISA table declares them. These numbers are part of the program format: append only.
"""

from neuronemu.isa.table import MAX_ARGS as ISA_MAX_ARGS

# instruction row
I_OPCODE = 0
I_ENGINE = 1
I_LINE = 2
I_NARGS = 3
I_ARGS = 4
MAX_ARGS = ISA_MAX_ARGS           # argument slots: as many as the ISA tables allow
I_COST = I_ARGS + 2 * MAX_ARGS   # cost class code (isa/costs.toml, sorted names)
I_TRACK = I_COST + 1             # timeline track: the engine code, or DMA_TRACK0 + queue
I_ACCESS = I_COST + 2            # 2 bits per argument: ACCESS_READ | ACCESS_WRITE
I_EXTRA_OUTPUTS = I_COST + 3     # optional output tiles given (e.g. activation reduce_res)
I_FLAGS = I_COST + 4             # modes the assembler resolved against the target (below)
INSTR_WIDTH = I_COST + 5

DMA_HWDGE = 1           # descriptors from the hardware DGE (shorter fixed cost)
MATMUL_DOUBLE_ROW = 2   # fp8 double-row performance mode (2x TensorE throughput, K = 2 x rows)
MATMUL_TRANSPOSE = 4    # v3+ transpose mode: bits move through the one-hot moving tile
MATMUL_FP32_HALF = 8    # fp32 matmul at half its cost (a 0/1 operand hint, or transpose mode)
PE_TRANSPOSE_MATMUL = 16  # v2 tensor.transpose: an fp32 matmul with an identity (NaN/Inf smear)
DMA_OOB_SKIP = 32       # dma.copy oob=skip: a register-offset tile wholly outside is not moved
ORDERED = 64            # kept in program order under .schedule compiler (an NKI no_reorder block)
COMPILER_ENGINE = 128   # vector.tensor_copy compiler_engine=true: ScalarE when it finishes first
PE_BLOCKS_SHIFT = 16    # bits 16..31: the 32 x 32 PE blocks a Tensor instruction occupies
                        # (bit r * 4 + c); 0 = the whole array

ACCESS_READ = 1
ACCESS_WRITE = 2

# timeline tracks: engine codes of isa/enums.toml (tensor 1, scalar 2, gpsimd 3, vector 5,
# sync 6, ctrl 7) and one track per DMA queue
DMA_TRACK0 = 8
NUM_DMA_QUEUES = 16
NUM_TRACKS = DMA_TRACK0 + NUM_DMA_QUEUES
TENSOR_TRACK = 1
SCALAR_TRACK = 2
VECTOR_TRACK = 5
# timing state: track_free holds each track's finish time, then the PE array's blocks and the
# Tensor engine's last issue time (tiled matmuls on disjoint blocks overlap; issue stays in order)
PE_FREE0 = NUM_TRACKS            # 16 slots: when each PE block is free
TENSOR_ISSUE = NUM_TRACKS + 16   # when the Tensor engine issued its last instruction
TIMING_SLOTS = NUM_TRACKS + 17
ALL_TRACKS = 0    # track of sync.barrier (engine code 0 is "unknown" in nki.isa.engine)

# argument tags
TAG_NONE = 0     # optional argument not given
TAG_OPERAND = 1  # value = row of ops (tile, or immediate scalar stored as an IMM operand)
TAG_INT = 2      # value = the integer (ints, bools, enum codes)
TAG_FLOAT = 3    # value = index into imms
TAG_REG = 4      # value = register number
TAG_LABEL = 5    # value = target instruction index

# operand row
OP_SPACE = 0      # SPACE_* below
OP_DTYPE = 1      # dtype code (isa/dtypes.toml)
OP_BASE = 2       # static byte offset (column of the memory array); IMM: index into imms
OP_PSTART = 3     # first row of the memory array (partition for SBUF/PSUM, 0 for HBM)
OP_PCOUNT = 4     # number of partitions (rows of the logical tile)
OP_PROWSTEP = 5   # memory rows advanced per logical partition (1 on-chip, 0 in HBM)
OP_PCOLSTEP = 6   # bytes advanced per logical partition (0 on-chip, row pitch in HBM)
OP_NDIM = 7       # free dims used (1..4), outer to inner, padded with count 1 on the outside
OP_STRIDE = 8     # 4 byte strides, outer to inner
OP_COUNT = 12     # 4 counts, outer to inner
OP_NREG = 16      # number of register terms in the byte offset (0..2)
OP_REG = 17       # register of term 0 / 1 at OP_REG, OP_REG + 2
OP_COEF = 18      # bytes per unit of that register
OP_LO = 21        # allowed column window [lo, hi) for register-offset tiles
OP_HI = 22
OP_EXTENT = 23    # bytes from the first to one past the last byte touched in a row
OP_SIZE = 24      # free elements per partition
OP_ITEMSIZE = 25
OP_DENSE = 26     # 1 if the free elements of a partition are one contiguous run in pattern order
OP_BLOCK = 27     # compressed HBM tensor: elements per block (0 = plain memory); docs/dma.md
OP_SLOT = 28      # compressed HBM tensor: bytes per block slot (mask + room for every element)
OP_WIDTH = 29
MAX_FREE_DIMS = 4
MAX_REG_TERMS = 2

SPACE_SBUF = 0
SPACE_PSUM = 1
SPACE_HBM = 2
SPACE_IMM = 3
SPACE_CODES = {"sbuf": SPACE_SBUF, "psum": SPACE_PSUM, "hbm": SPACE_HBM}

NUM_REGS = 64
REG_PC = 64        # next pc, written by branches
REG_FAULT_ARG = 65  # argument index of a faulting operand
REG_EVENTS = 66     # timeline events recorded so far
REG_UNWRITTEN_COUNT = 67  # dynamic instructions that read never-written memory
REG_UNWRITTEN_PC = 68     # the first of them, and its argument
REG_UNWRITTEN_ARG = 69
REG_SR_ON = 70      # stochastic rounding enabled (1) for fp32 -> narrower float stores
REG_SR_SEED = 71
REG_STEP = 72       # dynamic index of the executing instruction
REG_SR_STORE = 73   # stores so far within that instruction
REG_DMA_WIRE = 74   # bytes the executing DMA moved over the wire (-1: as the raw tiles say)
REG_FAULT_INFO = 75  # four values that describe a data-dependent fault (bad index, overlap)
REG_VACC = 79       # the Vector engine's accumulator register of each partition (fp32 bits), 128
REG_RNG_SEED = REG_VACC + 128   # seed of the rng / rand2 / dropout stream (set_rng_seed)
REG_RNG_DRAWS = REG_RNG_SEED + 1  # random instructions executed since the seed was set
REG_RANGE_COUNT = REG_RNG_DRAWS + 1  # activations given inputs outside the documented range
REG_RANGE_PC = REG_RANGE_COUNT + 1   # the first of them, and its first such input (fp32 bits)
REG_RANGE_BITS = REG_RANGE_COUNT + 2
REG_SACC = REG_RANGE_BITS + 1      # the Scalar engine's accumulator registers, 128 (activate2)
REG_RANK = REG_SACC + 128         # this core's rank and the number of ranks (ctrl.rank / world)
REG_WORLD = REG_RANK + 1
REG_EVENT_BASE = REG_WORLD + 1    # events already moved out of the buffer (timing/eventlog.py)
REG_COUNT = REG_EVENT_BASE + 1

# interpreter status codes
STATUS_OK = 0
STATUS_OUT_OF_BOUNDS = 1
STATUS_LIMIT = 2
STATUS_BAD_OPCODE = 3
STATUS_BAD_VALUE = 4
STATUS_BAD_INDEX = 5   # an index outside the indexed tensor (REG_FAULT_INFO: p, index, limit, j)
STATUS_OVERLAP = 6     # two partitions of one scatter write the same row (REG_FAULT_INFO: p, q, row)
STATUS_YIELD = 7       # a cc.* instruction at pc: the multi-chip driver executes it, then resumes
STATUS_DIV_ZERO = 8    # ctrl.div / ctrl.rem by zero
STATUS_MATMUL_VALUE = 9  # a matmul operand breaks its mode's promise (REG_FAULT_INFO: argument,
                         # p, j, fp32 bits of the value): not 0/1 under an onezero hint, or a
                         # moving column that is not one-hot in transpose mode
STATUS_KERNEL_ERROR = 10  # an instruction's kernel raised (an emulator bug, e.g. an index past an
                          # array under NEURONEMU_BOUNDSCHECK=1): a located fault, never ignored
