"""Vector engine (and the Vector/GpSimd shared) elementwise, reduction and statistics ops."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa import codes as C
from neuronemu.isa import dtypes as D
from neuronemu.isa.args.elementwise import (
    BN_AGGR_DATA,
    BN_AGGR_DST,
    BN_STATS_DATA,
    BN_STATS_DST,
    MEMSET_DST,
    MEMSET_VALUE,
    RECIPROCAL_DATA,
    RECIPROCAL_DST,
    SCALAR_TENSOR_TENSOR_DATA,
    SCALAR_TENSOR_TENSOR_DST,
    SCALAR_TENSOR_TENSOR_OP0,
    SCALAR_TENSOR_TENSOR_OP1,
    SCALAR_TENSOR_TENSOR_OPERAND0,
    SCALAR_TENSOR_TENSOR_OPERAND1,
    SCALAR_TENSOR_TENSOR_REVERSE0,
    SCALAR_TENSOR_TENSOR_REVERSE1,
    TENSOR_COPY_DATA,
    TENSOR_COPY_DST,
    TENSOR_COPY_PREDICATED_DST,
    TENSOR_COPY_PREDICATED_PREDICATE,
    TENSOR_COPY_PREDICATED_REVERSE_PRED,
    TENSOR_COPY_PREDICATED_SRC,
    TENSOR_REDUCE_DATA,
    TENSOR_REDUCE_DST,
    TENSOR_REDUCE_NEGATE,
    TENSOR_REDUCE_OP,
    TENSOR_SCALAR_DATA,
    TENSOR_SCALAR_DST,
    TENSOR_SCALAR_OP0,
    TENSOR_SCALAR_OP1,
    TENSOR_SCALAR_OPERAND0,
    TENSOR_SCALAR_OPERAND1,
    TENSOR_SCALAR_REDUCE_DATA,
    TENSOR_SCALAR_REDUCE_DST,
    TENSOR_SCALAR_REDUCE_OP0,
    TENSOR_SCALAR_REDUCE_OPERAND0,
    TENSOR_SCALAR_REDUCE_REDUCE_OP,
    TENSOR_SCALAR_REDUCE_REDUCE_RES,
    TENSOR_SCALAR_REVERSE0,
    TENSOR_SCALAR_REVERSE1,
    TENSOR_TENSOR_DATA1,
    TENSOR_TENSOR_DATA2,
    TENSOR_TENSOR_DST,
    TENSOR_TENSOR_OP,
    TENSOR_TENSOR_SCAN_DATA0,
    TENSOR_TENSOR_SCAN_DATA1,
    TENSOR_TENSOR_SCAN_DST,
    TENSOR_TENSOR_SCAN_INITIAL,
    TENSOR_TENSOR_SCAN_OP0,
    TENSOR_TENSOR_SCAN_OP1,
    TENSOR_TENSOR_SCAN_REVERSE0,
    TENSOR_TENSOR_SCAN_REVERSE1,
    TRANSPOSE32_DATA,
    TRANSPOSE32_DST,
)
from neuronemu.machine import layout as L
from neuronemu.machine.abi import borrowed, keep_alive
from neuronemu.machine.memory import (
    arg_tag,
    arg_value,
    copy_bits,
    copy_tile,
    f32_column,
    f32_row,
    f32_window,
    in_place_safe,
    load_bits,
    load_f32,
    same_shape,
    scalar_column,
    store_bits,
    store_f32,
    word_window,
)
from neuronemu.semantics.alu import (
    apply_column,
    arith_rows,
    binary,
    binary_bits,
    binary_rows,
    binary_scalar,
    fold_rows,
    is_bitvec,
    reduce_rows,
    to_int,
)


@jit
def _int_operand(ins, slot, ops, imms, mems, regs, fmt, shape):
    """A tensor_scalar operand as integers broadcast to ``shape``: a column's integer values, or
    the immediate truncated toward zero."""
    out = np.empty(shape, dtype=np.int64)
    if arg_tag(ins, slot) == L.TAG_OPERAND:
        op = ops[arg_value(ins, slot)]
        column = to_int(load_bits(op, mems, regs), op[L.OP_DTYPE], fmt)
        for p in range(shape[0]):
            out[p, :] = column[p, 0]
    else:
        out[:, :] = np.int64(imms[arg_value(ins, slot)])
    return out


@jit(inline="always")  # one caller per unit: compiled inside it
def _tensor_scalar_bits(ins, ops, imms, mems, regs, fmt):
    dst = ops[arg_value(ins, TENSOR_SCALAR_DST)]
    data_op = ops[arg_value(ins, TENSOR_SCALAR_DATA)]
    data = to_int(load_bits(data_op, mems, regs), data_op[L.OP_DTYPE], fmt)
    width = 8 * dst[L.OP_ITEMSIZE]
    s0 = _int_operand(ins, TENSOR_SCALAR_OPERAND0, ops, imms, mems, regs, fmt, data.shape)
    if arg_value(ins, TENSOR_SCALAR_REVERSE0) != 0:
        x = binary_bits(arg_value(ins, TENSOR_SCALAR_OP0), s0, data, width)
    else:
        x = binary_bits(arg_value(ins, TENSOR_SCALAR_OP0), data, s0, width)
    op1 = arg_value(ins, TENSOR_SCALAR_OP1)
    if op1 != C.ALU_BYPASS:
        s1 = _int_operand(ins, TENSOR_SCALAR_OPERAND1, ops, imms, mems, regs, fmt, data.shape)
        if arg_value(ins, TENSOR_SCALAR_REVERSE1) != 0:
            x = binary_bits(op1, s1, x, width)
        else:
            x = binary_bits(op1, x, s1, width)
    store_bits(dst, mems, regs, x)


@jit
def tensor_tensor(ins, ops, imms, mems, regs, fmt, table):
    op = arg_value(ins, TENSOR_TENSOR_OP)
    if is_bitvec(op):
        d1 = ops[arg_value(ins, TENSOR_TENSOR_DATA1)]
        d2 = ops[arg_value(ins, TENSOR_TENSOR_DATA2)]
        dst = ops[arg_value(ins, TENSOR_TENSOR_DST)]
        if _bits_in_place(op, dst, d1, d2, mems, regs, fmt):
            return L.STATUS_OK
        a = to_int(load_bits(d1, mems, regs), d1[L.OP_DTYPE], fmt)
        b = to_int(load_bits(d2, mems, regs), d2[L.OP_DTYPE], fmt)
        store_bits(dst, mems, regs, binary_bits(op, a, b, 8 * dst[L.OP_ITEMSIZE]))
        return L.STATUS_OK
    _tensor_tensor_floats(ins, ops, mems, regs, fmt, table, binary_rows)
    return L.STATUS_OK


@jit(inline="always")  # one caller per unit: compiled inside it
def _tensor_tensor_floats(ins, ops, mems, regs, fmt, table, by_rows):
    """tensor_tensor of an operator on values (not bits) through fp32, computed by ``by_rows``
    (binary_rows, or arith_rows for add, subtract and multiply alone): in place where the tiles
    allow it, else decoded, computed and stored."""
    if _tensor_tensor_in_place(ins, ops, mems, regs, by_rows):
        return
    a = load_f32(ops[arg_value(ins, TENSOR_TENSOR_DATA1)], mems, regs, fmt, table)
    b = load_f32(ops[arg_value(ins, TENSOR_TENSOR_DATA2)], mems, regs, fmt, table)
    store_f32(ops[arg_value(ins, TENSOR_TENSOR_DST)], mems, regs, fmt,
              binary(arg_value(ins, TENSOR_TENSOR_OP), a, b, by_rows))


_ARITH = (C.ALU_ADD, C.ALU_SUBTRACT, C.ALU_MULTIPLY)


def tensor_tensor_arith_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: the operator is add, subtract or multiply (any dtypes)."""
    return np.isin(instrs[:, L.I_ARGS + 2 * TENSOR_TENSOR_OP + 1], _ARITH)


@jit(inline="always")
def _is_arith(op):
    """Whether ``op`` is one of ``_ARITH``, the operators arith_rows computes."""
    return op == C.ALU_ADD or op == C.ALU_SUBTRACT or op == C.ALU_MULTIPLY


@jit
def tensor_tensor_arith(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_tensor`` for add, subtract and multiply, of any dtypes (``arith_rows``): none of
    the other operators' loops, nor the bitvec paths; any other instruction is an emulator bug
    here."""
    if not _is_arith(arg_value(ins, TENSOR_TENSOR_OP)):
        return L.STATUS_KERNEL_ERROR
    _tensor_tensor_floats(ins, ops, mems, regs, fmt, table, arith_rows)
    return L.STATUS_OK


# tensor_tensor and tensor_scalar on fp32 windows only: a program whose instructions of the
# function all are fp32 windows compiles none of the decoding, rounding and integer paths; of
# tensor_tensor's, add, subtract and multiply alone (of fp32 windows, or of any dtypes) compile
# none of the other 15 operators' loops (neuronemu/exec/kernels.py, docs/engine.md "Narrow
# kernels")
NARROW = {"tensor_tensor": ("tensor_tensor_f32_arith", "tensor_tensor_f32", "tensor_tensor_arith"),
          "tensor_scalar": "tensor_scalar_f32",
          "tensor_reduce": "tensor_reduce_f32", "tensor_copy": "tensor_copy_same",
          "memset": "memset_f32"}


def tensor_tensor_f32_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: not bitwise, and the three tiles sure to be fp32 windows of one shape that
    dst may be written over in place (``_tensor_tensor_in_place``)."""
    from neuronemu.machine import static_windows as W

    bits = instrs[:, L.I_ARGS + 2 * TENSOR_TENSOR_OP + 1] >= C.ALU_BITWISE_AND
    return ~bits & W.f32_tiles([W.operand_rows(instrs, ops, slot) for slot in
                                (TENSOR_TENSOR_DST, TENSOR_TENSOR_DATA1, TENSOR_TENSOR_DATA2)])


@jit
def tensor_tensor_f32(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_tensor`` of fp32 windows, where they lie; any other instruction is an emulator
    bug here (the program was judged all covered)."""
    if _tensor_tensor_in_place(ins, ops, mems, regs, binary_rows):
        return L.STATUS_OK
    return L.STATUS_KERNEL_ERROR


def tensor_tensor_f32_arith_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """``tensor_tensor_f32_covers`` and ``tensor_tensor_arith_covers``."""
    return tensor_tensor_arith_covers(instrs, ops) & tensor_tensor_f32_covers(instrs, ops)


@jit
def tensor_tensor_f32_arith(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_tensor_f32`` for add, subtract and multiply (``arith_rows``)."""
    if _is_arith(arg_value(ins, TENSOR_TENSOR_OP)) \
            and _tensor_tensor_in_place(ins, ops, mems, regs, arith_rows):
        return L.STATUS_OK
    return L.STATUS_KERNEL_ERROR


_KIND_INT = D.KINDS["int"]


@jit(inline="always")  # one caller per unit: compiled inside it
def _bits_in_place(op, dst, a, b, mems, regs, fmt):
    """A bitvec tensor_tensor on 4-byte integer tiles of one shape, row by row on their uint32
    words (``binary_bits``' rules at width 32: a shift count is b's value, signed when b is
    int32), without the int64 tiles of the general path (five 512 KiB temporaries at
    [128, 512]: 15x numpy); False, having done nothing, for any other tiles."""
    dst_col, a_col, b_col = word_window(dst, regs, fmt), word_window(a, regs, fmt), \
        word_window(b, regs, fmt)
    if dst_col < 0 or a_col < 0 or b_col < 0 or not same_shape(dst, a) \
            or not same_shape(dst, b) or not in_place_safe(dst, dst_col, a, a_col) \
            or not in_place_safe(dst, dst_col, b, b_col):
        return False
    signed = fmt[b[L.OP_DTYPE], D.F_KIND] == _KIND_INT
    n = dst[L.OP_SIZE]
    row = np.empty(n, dtype=np.uint32)
    a_words = viewed(mems[a[L.OP_SPACE]], np.uint32)
    b_words = viewed(mems[b[L.OP_SPACE]], np.uint32)
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.uint32)
    for p in range(dst[L.OP_PCOUNT]):
        x = a_words[np.uintp(a[L.OP_PSTART] + p * a[L.OP_PROWSTEP]), a_col: a_col + n]
        y = b_words[np.uintp(b[L.OP_PSTART] + p * b[L.OP_PROWSTEP]), b_col: b_col + n]
        if op == C.ALU_BITWISE_AND:
            for i in range(n):
                row[i] = x[i] & y[i]
        elif op == C.ALU_BITWISE_OR:
            for i in range(n):
                row[i] = x[i] | y[i]
        elif op == C.ALU_BITWISE_XOR:
            for i in range(n):
                row[i] = x[i] ^ y[i]
        elif op == C.ALU_INVERT:
            for i in range(n):
                row[i] = ~x[i]
        else:
            left = op == C.ALU_LEFT_SHIFT
            for i in range(n):
                s = np.int64(np.int32(y[i])) if signed else np.int64(y[i])
                v = np.int64(x[i])
                r = (v << s if left else v >> s) if 0 <= s < 32 else np.int64(0)
                row[i] = np.uint32(r & 0xFFFFFFFF)
        o = dst_words[np.uintp(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP]), dst_col: dst_col + n]
        for i in range(n):
            o[i] = row[i]
    return True


@jit(inline="always")  # one caller per unit: compiled inside it
def _tensor_tensor_in_place(ins, ops, mems, regs, rows):
    """tensor_tensor on fp32 tiles of one shape straight from and into memory, partition by
    partition (the same fp32 operation per element as through load_f32 / store_f32, without
    the three tile temporaries), by ``rows`` (binary_rows, or arith_rows for add, subtract and
    multiply alone); False, having done nothing, when the tiles do not allow it."""
    dst, a, b = (ops[arg_value(ins, TENSOR_TENSOR_DST)], ops[arg_value(ins, TENSOR_TENSOR_DATA1)],
                 ops[arg_value(ins, TENSOR_TENSOR_DATA2)])
    dst_col, a_col, b_col = f32_window(dst, regs), f32_window(a, regs), f32_window(b, regs)
    if dst_col < 0 or a_col < 0 or b_col < 0 or not same_shape(dst, a) \
            or not same_shape(dst, b) or not in_place_safe(dst, dst_col, a, a_col) \
            or not in_place_safe(dst, dst_col, b, b_col):
        return False
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    a_words = viewed(mems[a[L.OP_SPACE]], np.float32)
    b_words = viewed(mems[b[L.OP_SPACE]], np.float32)
    rows(arg_value(ins, TENSOR_TENSOR_OP), a_words, a[L.OP_PSTART], a[L.OP_PROWSTEP], a_col,
         b_words, b[L.OP_PSTART], b[L.OP_PROWSTEP], b_col,
         dst_words, dst[L.OP_PSTART], dst[L.OP_PROWSTEP], dst_col,
         dst[L.OP_PCOUNT], dst[L.OP_SIZE])
    return True


@jit
def tensor_scalar(ins, ops, imms, mems, regs, fmt, table):
    """(data op0 operand0) op1 operand1; reverseK swaps the operands of stage K."""
    if is_bitvec(arg_value(ins, TENSOR_SCALAR_OP0)):
        _tensor_scalar_bits(ins, ops, imms, mems, regs, fmt)
        return L.STATUS_OK
    dst, data = ops[arg_value(ins, TENSOR_SCALAR_DST)], ops[arg_value(ins, TENSOR_SCALAR_DATA)]
    partitions = data[L.OP_PCOUNT]
    s0 = scalar_column(ins, TENSOR_SCALAR_OPERAND0, ops, imms, mems, regs, fmt, table,
                       partitions)
    s1 = scalar_column(ins, TENSOR_SCALAR_OPERAND1, ops, imms, mems, regs, fmt, table,
                       partitions)
    if _tensor_scalar_in_place(ins, ops, dst, data, mems, regs, s0, s1):
        return L.STATUS_OK
    # any other dtype or layout: the stages run in place on the decoded fp32 tile
    values = load_f32(data, mems, regs, fmt, table)
    _scalar_stages(ins, s0, s1, values, 0, 1, 0, values, 0, 1, 0, values.shape[0],
                   values.shape[1])
    store_f32(dst, mems, regs, fmt, values)
    return L.STATUS_OK


def tensor_scalar_f32_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: op0 not bitwise, dst and data sure to be fp32 windows of one shape that dst
    may be written over in place, each scalar an immediate or an fp32 column window."""
    from neuronemu.machine import static_windows as W

    bits = instrs[:, L.I_ARGS + 2 * TENSOR_SCALAR_OP0 + 1] >= C.ALU_BITWISE_AND
    tiles = W.f32_tiles([W.operand_rows(instrs, ops, slot)
                         for slot in (TENSOR_SCALAR_DST, TENSOR_SCALAR_DATA)])
    return ~bits & tiles & W.f32_scalars(instrs, ops,
                                         (TENSOR_SCALAR_OPERAND0, TENSOR_SCALAR_OPERAND1))


@jit
def tensor_scalar_f32(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_scalar`` of fp32 windows and scalars, where they lie (see tensor_tensor_f32)."""
    dst, data = ops[arg_value(ins, TENSOR_SCALAR_DST)], ops[arg_value(ins, TENSOR_SCALAR_DATA)]
    partitions = data[L.OP_PCOUNT]
    ok0, s0 = f32_column(ins, TENSOR_SCALAR_OPERAND0, ops, imms, mems, regs, partitions)
    ok1, s1 = f32_column(ins, TENSOR_SCALAR_OPERAND1, ops, imms, mems, regs, partitions)
    if ok0 and ok1 and _tensor_scalar_in_place(ins, ops, dst, data, mems, regs, s0, s1):
        return L.STATUS_OK
    return L.STATUS_KERNEL_ERROR


@jit(inline="always")  # one caller per unit: compiled inside it
def _tensor_scalar_in_place(ins, ops, dst, data, mems, regs, s0, s1):
    """tensor_scalar on fp32 tiles straight from and into memory (see _tensor_tensor_in_place):
    each stage writes its fp32 result into dst's partition, the next reads it from there;
    False, having done nothing, for other tiles."""
    dst_col, data_col = f32_window(dst, regs), f32_window(data, regs)
    if dst_col < 0 or data_col < 0 or not same_shape(dst, data) \
            or not in_place_safe(dst, dst_col, data, data_col):
        return False
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    data_words = viewed(mems[data[L.OP_SPACE]], np.float32)
    _scalar_stages(ins, s0, s1, data_words, data[L.OP_PSTART], data[L.OP_PROWSTEP], data_col,
                   dst_words, dst[L.OP_PSTART], dst[L.OP_PROWSTEP], dst_col, dst[L.OP_PCOUNT],
                   dst[L.OP_SIZE])
    return True


@jit
def _scalar_stages(ins, s0, s1, src, data_row, data_step, data_col, dst_words, row, step,
                   dst_col, partitions, n):
    """tensor_scalar's two stages, with the scalar columns ``s0`` and ``s1`` [P], from the fp32
    rows of ``src`` into those of ``dst_words`` (``binary_rows``' convention; they may be the
    same elements)."""
    # the scalars broadcast by * 1.0 (keeps -0.0, quiets NaN), into a [1, n] row that stays
    # in L1 instead of a [P, n] temporary: an immediate fills it once for every partition (row
    # step 0), a [P, 1] column once per partition. The row is borrowed (not reference
    # counted: one call per partition would cost two atomic updates)
    owner = np.empty((1, n), dtype=np.float32)
    operand = borrowed(owner)
    op0, op1 = arg_value(ins, TENSOR_SCALAR_OP0), arg_value(ins, TENSOR_SCALAR_OP1)
    reverse0 = arg_value(ins, TENSOR_SCALAR_REVERSE0) != 0
    reverse1 = arg_value(ins, TENSOR_SCALAR_REVERSE1) != 0
    # stage 1 reads what stage 0 wrote into the same element of dst; every partition is done
    # whole before the next, so the stages may run partition by partition
    blocks = 1 if arg_tag(ins, TENSOR_SCALAR_OPERAND0) != L.TAG_OPERAND \
        and arg_tag(ins, TENSOR_SCALAR_OPERAND1) != L.TAG_OPERAND else partitions
    rows = partitions // blocks
    for p in range(blocks):
        d, x = row + p * step, data_row + p * data_step
        operand[0, :] = s0[p] * np.float32(1.0)
        if reverse0:
            binary_rows(op0, operand, 0, 0, 0, src, x, data_step, data_col,
                        dst_words, d, step, dst_col, rows, n)
        else:
            binary_rows(op0, src, x, data_step, data_col, operand, 0, 0, 0,
                        dst_words, d, step, dst_col, rows, n)
        if op1 != C.ALU_BYPASS:
            operand[0, :] = s1[p] * np.float32(1.0)
            if reverse1:
                binary_rows(op1, operand, 0, 0, 0, dst_words, d, step, dst_col,
                            dst_words, d, step, dst_col, rows, n)
            else:
                binary_rows(op1, dst_words, d, step, dst_col, operand, 0, 0, 0,
                            dst_words, d, step, dst_col, rows, n)
    keep_alive(owner)


@jit
def tensor_reduce(ins, ops, imms, mems, regs, fmt, table):
    if _tensor_reduce_in_place(ins, ops, mems, regs):
        return L.STATUS_OK
    dst = ops[arg_value(ins, TENSOR_REDUCE_DST)]
    data = load_f32(ops[arg_value(ins, TENSOR_REDUCE_DATA)], mems, regs, fmt, table)
    out = reduce_rows(arg_value(ins, TENSOR_REDUCE_OP), data, dst[L.OP_SIZE])
    if arg_value(ins, TENSOR_REDUCE_NEGATE) != 0:
        out = -out
    store_f32(dst, mems, regs, fmt, out)
    return L.STATUS_OK


@jit(inline="always")  # one caller per unit: compiled inside it
def _tensor_reduce_in_place(ins, ops, mems, regs):
    """A reduction of each partition of an fp32 tile into an fp32 [P, 1] column, read and
    written where they lie (``fold_rows``: the same result, bit for bit, as ``reduce_rows`` on
    the loaded tile); False, having done nothing, for any other tile. Every partition is read
    before any result is written, so the column may lie inside the data."""
    dst, data = ops[arg_value(ins, TENSOR_REDUCE_DST)], ops[arg_value(ins, TENSOR_REDUCE_DATA)]
    dst_col, data_col = f32_window(dst, regs), f32_window(data, regs)
    if (dst_col < 0 or data_col < 0 or dst[L.OP_SIZE] != 1 or data[L.OP_SIZE] < 1
            or dst[L.OP_PCOUNT] != data[L.OP_PCOUNT]):
        return False
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    data_words = viewed(mems[data[L.OP_SPACE]], np.float32)
    partitions = data[L.OP_PCOUNT]
    values = np.empty((partitions, 1), dtype=np.float32)
    fold_rows(arg_value(ins, TENSOR_REDUCE_OP), data_words, data[L.OP_PSTART],
              data[L.OP_PROWSTEP], data_col, partitions, data[L.OP_SIZE], values, 0)
    negate = arg_value(ins, TENSOR_REDUCE_NEGATE) != 0
    for p in range(partitions):
        v = values[p, 0]
        dst_words[np.uintp(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP]), np.uintp(dst_col)] = (
            -v if negate else v)
    return True


@jit
def tensor_copy(ins, ops, imms, mems, regs, fmt, table):
    copy_tile(ops[arg_value(ins, TENSOR_COPY_DST)], ops[arg_value(ins, TENSOR_COPY_DATA)],
              mems, regs, fmt, table)
    return L.STATUS_OK


def tensor_copy_same_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: the dtypes are the same (static), whatever the layout or registers."""
    from neuronemu.machine import static_windows as W

    dst = W.operand_rows(instrs, ops, TENSOR_COPY_DST)[:, L.OP_DTYPE]
    return dst == W.operand_rows(instrs, ops, TENSOR_COPY_DATA)[:, L.OP_DTYPE]


@jit
def tensor_copy_same(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_copy`` of tiles of one dtype: its bits (``copy_tile``'s first case)."""
    copy_bits(ops[arg_value(ins, TENSOR_COPY_DST)], ops[arg_value(ins, TENSOR_COPY_DATA)],
              mems, regs)
    return L.STATUS_OK


def tensor_reduce_f32_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: data and the [P, 1] dst sure to be fp32 windows of as many partitions
    (``_tensor_reduce_in_place``)."""
    from neuronemu.machine import static_windows as W

    dst = W.operand_rows(instrs, ops, TENSOR_REDUCE_DST)
    data = W.operand_rows(instrs, ops, TENSOR_REDUCE_DATA)
    return ((W.f32_windows(dst) >= 0) & (W.f32_windows(data) >= 0) & (dst[:, L.OP_SIZE] == 1)
            & (data[:, L.OP_SIZE] >= 1) & (dst[:, L.OP_PCOUNT] == data[:, L.OP_PCOUNT]))


@jit
def tensor_reduce_f32(ins, ops, imms, mems, regs, fmt, table):
    """``tensor_reduce`` of fp32 windows, where they lie (see tensor_tensor_f32)."""
    if _tensor_reduce_in_place(ins, ops, mems, regs):
        return L.STATUS_OK
    return L.STATUS_KERNEL_ERROR


def memset_f32_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: dst sure to be an fp32 window."""
    from neuronemu.machine import static_windows as W

    return W.f32_windows(W.operand_rows(instrs, ops, MEMSET_DST)) >= 0


@jit
def memset_f32(ins, ops, imms, mems, regs, fmt, table):
    """``memset`` of an fp32 window, in place (see tensor_tensor_f32)."""
    dst = ops[arg_value(ins, MEMSET_DST)]
    column = f32_window(dst, regs)
    if column < 0:
        return L.STATUS_KERNEL_ERROR
    _fill_f32(dst, mems, column, np.float32(imms[arg_value(ins, MEMSET_VALUE)]))
    return L.STATUS_OK


@jit
def _fill_f32(dst, mems, column, value):
    words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    for p in range(dst[L.OP_PCOUNT]):
        f32_row(words, dst, column, p)[:] = value


@jit
def memset(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, MEMSET_DST)]
    value = np.float32(imms[arg_value(ins, MEMSET_VALUE)])
    column = f32_window(dst, regs)
    if column >= 0:  # fp32: fill the partitions in place
        _fill_f32(dst, mems, column, value)
        return L.STATUS_OK
    store_f32(dst, mems, regs, fmt, np.full((dst[L.OP_PCOUNT], dst[L.OP_SIZE]), value))
    return L.STATUS_OK


@jit
def reciprocal(ins, ops, imms, mems, regs, fmt, table):
    data = load_f32(ops[arg_value(ins, RECIPROCAL_DATA)], mems, regs, fmt, table)
    store_f32(ops[arg_value(ins, RECIPROCAL_DST)], mems, regs, fmt, np.float32(1.0) / data)
    return L.STATUS_OK


@jit
def bn_stats(ins, ops, imms, mems, regs, fmt, table):
    """(count, mean, variance*count) of the even-indexed elements, then of the odd-indexed ones.

    Two fp32 passes in index order: the mean, then the sum of squared deviations."""
    data = load_f32(ops[arg_value(ins, BN_STATS_DATA)], mems, regs, fmt, table)
    rows, n = data.shape
    out = np.zeros((rows, 6), dtype=np.float32)
    for p in range(rows):
        for parity in range(2):
            count = 0
            total = np.float32(0.0)
            for i in range(parity, n, 2):
                total += data[p, i]
                count += 1
            if count == 0:
                continue
            mean = total / np.float32(count)
            m2 = np.float32(0.0)
            for i in range(parity, n, 2):
                d = data[p, i] - mean
                m2 += d * d
            out[p, 3 * parity] = np.float32(count)
            out[p, 3 * parity + 1] = mean
            out[p, 3 * parity + 2] = m2
    store_f32(ops[arg_value(ins, BN_STATS_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def bn_aggr(ins, ops, imms, mems, regs, fmt, table):
    """Merge (count, mean, M2) triples (Chan et al.) into (mean, population variance), fp32."""
    data = load_f32(ops[arg_value(ins, BN_AGGR_DATA)], mems, regs, fmt, table)
    rows, n = data.shape
    out = np.zeros((rows, 2), dtype=np.float32)
    for p in range(rows):
        count = np.float32(0.0)
        mean = np.float32(0.0)
        m2 = np.float32(0.0)
        for g in range(n // 3):
            c = data[p, 3 * g]
            if c == 0:
                continue
            mu = data[p, 3 * g + 1]
            total = count + c
            delta = mu - mean
            mean = mean + delta * (c / total)
            m2 = m2 + data[p, 3 * g + 2] + delta * delta * (count * c / total)
            count = total
        out[p, 0] = mean
        out[p, 1] = m2 / count if count > 0 else np.float32(0.0)
    store_f32(ops[arg_value(ins, BN_AGGR_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def transpose32(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, TRANSPOSE32_DST)]
    store_bits(dst, mems, regs,
               load_bits(ops[arg_value(ins, TRANSPOSE32_DATA)], mems, regs).T.copy())
    return L.STATUS_OK


@jit
def scalar_tensor_tensor(ins, ops, imms, mems, regs, fmt, table):
    """(data op0 operand0) op1 operand1; each stage rounds to fp32."""
    data = load_f32(ops[arg_value(ins, SCALAR_TENSOR_TENSOR_DATA)], mems, regs, fmt, table)
    column = scalar_column(ins, SCALAR_TENSOR_TENSOR_OPERAND0, ops, imms, mems, regs, fmt, table,
                           data.shape[0])
    other = load_f32(ops[arg_value(ins, SCALAR_TENSOR_TENSOR_OPERAND1)], mems, regs, fmt, table)
    apply_column(arg_value(ins, SCALAR_TENSOR_TENSOR_OP0),
                  arg_value(ins, SCALAR_TENSOR_TENSOR_REVERSE0) != 0, data, column)
    # into data, which holds the first stage's results (operand1 has data's shape: checked)
    op1, rows, n = arg_value(ins, SCALAR_TENSOR_TENSOR_OP1), data.shape[0], data.shape[1]
    if arg_value(ins, SCALAR_TENSOR_TENSOR_REVERSE1) != 0:
        binary_rows(op1, other, 0, 1, 0, data, 0, 1, 0, data, 0, 1, 0, rows, n)
    else:
        binary_rows(op1, data, 0, 1, 0, other, 0, 1, 0, data, 0, 1, 0, rows, n)
    store_f32(ops[arg_value(ins, SCALAR_TENSOR_TENSOR_DST)], mems, regs, fmt, data)
    return L.STATUS_OK


@jit
def tensor_tensor_scan(ins, ops, imms, mems, regs, fmt, table):
    """dst[i] = (data0[i] op0 dst[i-1]) op1 data1[i], dst[-1] = initial, in fp32, in order."""
    data0 = load_f32(ops[arg_value(ins, TENSOR_TENSOR_SCAN_DATA0)], mems, regs, fmt, table)
    data1 = load_f32(ops[arg_value(ins, TENSOR_TENSOR_SCAN_DATA1)], mems, regs, fmt, table)
    initial = scalar_column(ins, TENSOR_TENSOR_SCAN_INITIAL, ops, imms, mems, regs, fmt, table,
                            data0.shape[0])
    op0 = arg_value(ins, TENSOR_TENSOR_SCAN_OP0)
    op1 = arg_value(ins, TENSOR_TENSOR_SCAN_OP1)
    reverse0 = arg_value(ins, TENSOR_TENSOR_SCAN_REVERSE0) != 0
    reverse1 = arg_value(ins, TENSOR_TENSOR_SCAN_REVERSE1) != 0
    out = np.empty_like(data0)
    for p in range(data0.shape[0]):
        previous = initial[p]
        for i in range(data0.shape[1]):
            if reverse0:
                t = binary_scalar(op0, previous, data0[p, i])
            else:
                t = binary_scalar(op0, data0[p, i], previous)
            if reverse1:
                previous = binary_scalar(op1, data1[p, i], t)
            else:
                previous = binary_scalar(op1, t, data1[p, i])
            out[p, i] = previous
    store_f32(ops[arg_value(ins, TENSOR_TENSOR_SCAN_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def tensor_scalar_reduce(ins, ops, imms, mems, regs, fmt, table):
    """dst = data op0 operand0; reduce_res = reduction of the fp32 results (before dst's
    rounding), left to right."""
    data = load_f32(ops[arg_value(ins, TENSOR_SCALAR_REDUCE_DATA)], mems, regs, fmt, table)
    column = scalar_column(ins, TENSOR_SCALAR_REDUCE_OPERAND0, ops, imms, mems, regs, fmt, table,
                           data.shape[0])
    apply_column(arg_value(ins, TENSOR_SCALAR_REDUCE_OP0), False, data, column)
    store_f32(ops[arg_value(ins, TENSOR_SCALAR_REDUCE_DST)], mems, regs, fmt, data)
    store_f32(ops[arg_value(ins, TENSOR_SCALAR_REDUCE_REDUCE_RES)], mems, regs, fmt,
              reduce_rows(arg_value(ins, TENSOR_SCALAR_REDUCE_REDUCE_OP), data, 1))
    return L.STATUS_OK


@jit
def tensor_copy_predicated(ins, ops, imms, mems, regs, fmt, table):
    """Bits of src where the predicate holds; dst keeps its bits elsewhere."""
    dst = ops[arg_value(ins, TENSOR_COPY_PREDICATED_DST)]
    bits = load_bits(dst, mems, regs)
    src = load_bits(ops[arg_value(ins, TENSOR_COPY_PREDICATED_SRC)], mems, regs)
    predicate = load_bits(ops[arg_value(ins, TENSOR_COPY_PREDICATED_PREDICATE)], mems, regs)
    reverse = arg_value(ins, TENSOR_COPY_PREDICATED_REVERSE_PRED) != 0
    for p in range(bits.shape[0]):
        for i in range(bits.shape[1]):
            if (predicate[p, i] != 0) != reverse:
                bits[p, i] = src[p, i]
    store_bits(dst, mems, regs, bits)
    return L.STATUS_OK
