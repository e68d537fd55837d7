"""Shape, dtype and memory rules named by the ``checks`` lists of the instruction tables.

A check line is ``rule arg arg ...`` (numbers, dtype names or ``@target_field`` as parameters).
Each rule gets the resolved argument values by name and raises ``AsmError`` at the offending
operand. A missing optional argument or an immediate where a rule expects a tile passes.
"""

from __future__ import annotations

from collections.abc import Callable

from neuronemu.errors import AsmError
from neuronemu.isa import dtypes
from neuronemu.program import Tile, pe_tile

RULES: dict[str, Callable] = {}


def rule(fn: Callable | None = None, *, placeless: bool = False, tiles_only: bool = False):
    """Register a check rule (``@rule`` or ``@rule(...)``). What a rule reads decides how the
    plans of asm/direct.py may use it: ``placeless``, it looks at no tile's place (first byte,
    first partition, registers), only at shapes, dtypes, written dims and the values of the
    arguments it names, so every op of a plan passes it as the plan's first op did (a plan is
    made only for entries whose rules all are; psum_banks, which looks at the first byte, is
    then checked by the plan itself); ``tiles_only``, it reads the arguments it names only
    where they are tiles (``_tiles``), so a number given there may differ between the ops of
    a plan."""
    def register(fn: Callable) -> Callable:
        RULES[fn.__name__] = fn
        if placeless:
            PLACELESS.add(fn.__name__)
        if tiles_only:
            TILES_ONLY.add(fn.__name__)
        return fn
    return register if fn is None else register(fn)


PLACELESS: set[str] = set()    # rules registered with placeless=True
TILES_ONLY: set[str] = set()   # rules registered with tiles_only=True


_VALIDATED: set[int] = set()


def require_known_rules(isa) -> None:
    """Every check of every instruction names a rule of this module (once per loaded ISA)."""
    from neuronemu.isa.table import TableError

    if id(isa) in _VALIDATED:
        return
    for definition in isa.instructions.values():
        for i, check in enumerate(definition.checks):
            if check.rule not in RULES:
                raise TableError(f"{definition.origin}.checks[{i}]: unknown rule in "
                                 f"{check.text!r}; known rules: {sorted(RULES)}")
    _VALIDATED.add(id(isa))


def _shape(t: Tile) -> str:
    return "[" + ", ".join(str(d) for d in (t.partitions, t.free_size)) + "]"


def _tiles(ctx, names) -> list[tuple[str, Tile]]:
    return [(n, ctx.args[n]) for n in names if isinstance(ctx.args.get(n), Tile)]


def _param(ctx, word: str) -> int:
    if word.startswith("@"):
        return int(getattr(ctx.target, word[1:]))
    return int(word)


def _core_psum(ctx) -> int:
    """PSUM bytes per partition of one core (of a logical core's several: .target cores=N)."""
    return getattr(ctx.target, "core_psum_partition_bytes", ctx.target.psum_partition_bytes)


def _fail(tile_or_ctx, message: str, notes=()):
    location = getattr(tile_or_ctx, "location", None)
    raise AsmError(message, location, notes)


class _Located:
    def __init__(self, location):
        self.location = location


class CheckContext:
    """What a rule sees: instruction definition, argument values by name, target, location."""

    def __init__(self, definition, args, target, location, arg_locations=None,
                 declarations=()):
        self.definition = definition
        self.args = args
        self.target = target
        self.location = location
        self.arg_locations = arg_locations or {}
        self.declarations = declarations   # {name: Allocation or HbmTensor} dicts

    def written_shape(self, tile: Tile) -> tuple[int, ...]:
        """The tile's [partitions, free dims...] as the kernel wrote them (the lowered Tile
        merges contiguous dims)."""
        for table in self.declarations:
            if tile.symbol in table:
                return (tile.partitions,
                        *tile.free_dims_as_written(table[tile.symbol].shape))
        return tile.shape

    def at(self, name):
        """Something to fail at: the argument as written, else the instruction."""
        location = self.arg_locations.get(name)
        return _Located(location) if location is not None else self


@rule(placeless=True, tiles_only=True)
def same_shape(ctx, *names):
    """The tiles named have the same partitions and free size (the first is the reference)."""
    tiles = _tiles(ctx, names)
    for name, tile in tiles[1:]:
        first_name, first = tiles[0]
        if (tile.partitions, tile.free_size) != (first.partitions, first.free_size):
            _fail(tile, f"shape mismatch: {name} is {_shape(tile)} but {first_name} is "
                        f"{_shape(first)}; {ctx.definition.name} needs the same partitions and "
                        f"free size", _broadcast_notes(ctx, name, tile, first_name, first))


def _broadcast_notes(ctx, name, tile, dst_name, dst) -> tuple[str, ...]:
    """Why a source of a broadcasting DMA argument was not broadcast, when it nearly was."""
    arg = next((a for a in ctx.definition.args if a.name == name), None)
    if arg is None or not arg.broadcast or dst.partitions <= 1:
        return ()
    rule = (f"a source of one partition ([1, ...]) whose free size equals {dst_name}'s is "
            f"broadcast to all {dst.partitions} partitions of {dst_name}")
    if tile.partitions == 1:
        note = (f"{rule}; {name} has {tile.free_size} elements per partition, not "
                f"{dst.free_size}")
        return (note,)
    if tile.free_size == dst.free_size and tile.partitions < dst.partitions:
        note = (f"{rule}; {name} spans {tile.partitions} partitions (only exactly one row "
                f"broadcasts: copy it row by row, or slice one row, e.g. "
                f"{tile.symbol}[0:1, ...])")
        return (note,)
    return ()


@rule(placeless=True, tiles_only=True)
def same_partitions(ctx, *names):
    """The tiles named span the same number of partitions."""
    tiles = _tiles(ctx, names)
    for name, tile in tiles[1:]:
        first_name, first = tiles[0]
        if tile.partitions != first.partitions:
            _fail(tile, f"partition mismatch: {name} spans {tile.partitions} partitions but "
                        f"{first_name} spans {first.partitions}")


@rule(placeless=True, tiles_only=True)
def same_free(ctx, *names):
    """The tiles named have the same number of elements per partition."""
    tiles = _tiles(ctx, names)
    for name, tile in tiles[1:]:
        first_name, first = tiles[0]
        if tile.free_size != first.free_size:
            _fail(tile, f"free size mismatch: {name} has {tile.free_size} elements per "
                        f"partition but {first_name} has {first.free_size}")


@rule(placeless=True, tiles_only=True)
def max_partitions(ctx, name, limit):
    """``name`` spans at most ``limit`` partitions (a number or ``@target_field``)."""
    for _, tile in _tiles(ctx, [name]):
        if tile.partitions > _param(ctx, limit):
            _fail(tile, f"{name} spans {tile.partitions} partitions; {ctx.definition.name} "
                        f"allows at most {_param(ctx, limit)}")


@rule(placeless=True, tiles_only=True)
def partitions_eq(ctx, name, value):
    """``name`` spans exactly ``value`` partitions."""
    for _, tile in _tiles(ctx, [name]):
        if tile.partitions != _param(ctx, value):
            _fail(tile, f"{name} must span exactly {_param(ctx, value)} partition(s), "
                        f"not {tile.partitions}")


@rule(placeless=True, tiles_only=True)
def max_free(ctx, name, limit):
    """``name`` has at most ``limit`` elements per partition (a number or ``@target_field``)."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size > _param(ctx, limit):
            where = f" on {ctx.target.name}" if limit.startswith("@") else ""
            _fail(tile, f"{name} has {tile.free_size} elements per partition; "
                        f"{ctx.definition.name} allows at most {_param(ctx, limit)}{where}")


@rule(placeless=True, tiles_only=True)
def free_eq(ctx, name, value):
    """``name`` has exactly ``value`` elements per partition."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size != _param(ctx, value):
            _fail(tile, f"{name} must have exactly {_param(ctx, value)} elements per partition, "
                        f"not {tile.free_size}")


@rule(placeless=True, tiles_only=True)
def min_free(ctx, name, limit):
    """``name`` has at least ``limit`` elements per partition."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size < _param(ctx, limit):
            _fail(tile, f"{name} has {tile.free_size} elements per partition; "
                        f"{ctx.definition.name} needs at least {_param(ctx, limit)}")


@rule(placeless=True, tiles_only=True)
def free_multiple(ctx, name, value):
    """``name``'s elements per partition are a multiple of ``value``."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size % _param(ctx, value):
            _fail(tile, f"{name} must have a multiple of {_param(ctx, value)} elements per "
                        f"partition, not {tile.free_size}")


@rule(placeless=True, tiles_only=True)
def divides(ctx, small, big):
    """``small``'s elements per partition divide ``big``'s."""
    tiles = dict(_tiles(ctx, [small, big]))
    if len(tiles) == 2 and tiles[big].free_size % tiles[small].free_size:
        _fail(tiles[small], f"{small} has {tiles[small].free_size} elements per partition, "
                            f"which does not divide {big}'s {tiles[big].free_size}")


@rule(placeless=True, tiles_only=True)
def column(ctx, name):
    """``name`` is an immediate or a [P, 1] column tile."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size != 1:
            _fail(tile, f"{name} must be an immediate or a [P, 1] column tile, not "
                        f"{_shape(tile)}")


@rule(placeless=True, tiles_only=True)
def not_both_psum(ctx, a, b):
    """At most one of the inputs ``a`` and ``b`` is in PSUM."""
    tiles = _tiles(ctx, [a, b])
    if len(tiles) == 2 and all(t.space == "psum" for _, t in tiles):
        _fail(tiles[1][1], f"{a} and {b} are both in PSUM; {ctx.definition.name} can read at "
                           f"most one input from PSUM")


@rule(placeless=True, tiles_only=True)
def dtype(ctx, name, *allowed):
    """``allowed`` holds dtype names or ``@field``: a list of dtypes in the target's table."""
    names: list[str] = []
    for word in allowed:
        names.extend(getattr(ctx.target, word[1:]) if word.startswith("@") else [word])
    for _, tile in _tiles(ctx, [name]):
        if tile.dtype not in names:
            on = f" on {ctx.target.name}" if any(w.startswith("@") for w in allowed) else ""
            _fail(tile, f"{name} has dtype {tile.dtype}; {ctx.definition.name} accepts "
                        f"{', '.join(names)}{on}")


@rule(placeless=True, tiles_only=True)
def same_dtype(ctx, a, b):
    """``a`` and ``b`` have the same dtype."""
    tiles = _tiles(ctx, [a, b])
    if len(tiles) == 2 and tiles[0][1].dtype != tiles[1][1].dtype:
        _fail(tiles[0][1], f"{a} has dtype {tiles[0][1].dtype} but {b} has "
                           f"{tiles[1][1].dtype}; they must match")


@rule(placeless=True, tiles_only=True)
def same_dtype_or_fp32(ctx, dst, src):
    """``dst`` has ``src``'s dtype or float32."""
    tiles = dict(_tiles(ctx, [dst, src]))
    if len(tiles) == 2 and tiles[dst].dtype not in (tiles[src].dtype, "float32"):
        _fail(tiles[dst], f"{dst} has dtype {tiles[dst].dtype}; it must be float32 or "
                          f"{src}'s dtype {tiles[src].dtype}")


@rule(placeless=True, tiles_only=True)
def pe_transpose_dtypes(ctx, dst, data):
    """tensor.transpose's dtypes. NeuronCore-v3+ (transpose mode): dst in data's dtype (the bits
    move) or float32. NeuronCore-v2 has no transpose mode: the PE array multiplies data by an
    identity, so data must be a matmul input dtype and dst is what every trn1 matmul writes."""
    if ctx.target.pe_transpose_mode:
        same_dtype_or_fp32(ctx, dst, data)
        return
    tiles = dict(_tiles(ctx, [dst, data]))
    name = ctx.definition.name
    if data in tiles and tiles[data].dtype not in ctx.target.matmul_input_dtypes:
        accepted = ", ".join(ctx.target.matmul_input_dtypes)
        _fail(tiles[data], f"{data} has dtype {tiles[data].dtype}; {name} is a matmul with an "
                           f"identity on trn1 and accepts {accepted}")
    if dst in tiles and tiles[dst].dtype not in ctx.target.matmul_psum_dtypes:
        _fail(tiles[dst], f"{name} is a matmul with an identity on trn1 and writes "
                          f"{' or '.join(ctx.target.matmul_psum_dtypes)} into PSUM, like "
                          f"tensor.matmul; {dst} is {tiles[dst].dtype}")


_FP32_FAMILY = ("float32", "tfloat32")


@rule(placeless=True, tiles_only=True)
def matmul_operands(ctx, a, b):
    """Either both matmul operands are float32/tfloat32 or neither is."""
    tiles = dict(_tiles(ctx, [a, b]))
    if len(tiles) < 2:
        return
    wide = [tiles[n].dtype in _FP32_FAMILY for n in (a, b)]
    if wide[0] != wide[1]:
        _fail(tiles[b], f"{a} is {tiles[a].dtype} and {b} is {tiles[b].dtype}: if one matmul "
                        f"operand is float32/tfloat32 the other must be too")


@rule(placeless=True)
def matmul_shape(ctx, dst, stationary, moving, mode, transpose, accumulate):
    """dst is [M, N] for stationary [K, M] and moving [K, N]; with perf_mode=double_row the
    operands are [K, 2, M] / [K, 2, N] (the flattened free axis is two halves); K <= 128, M <= the
    stationary limit, N <= what PSUM holds in dst's dtype (one bank of fp32 on v2/v3, all eight
    banks on v4)."""
    tiles = dict(_tiles(ctx, [dst, stationary, moving]))
    if len(tiles) < 3:
        return
    d, s, m = tiles[dst], tiles[stationary], tiles[moving]
    if s.partitions > 128:
        _fail(s, f"{stationary} spans {s.partitions} partitions; the PE array has 128 rows")
    double = ctx.args.get(mode) == 1
    is_transpose = bool(ctx.args.get(transpose)) and ctx.target.pe_transpose_mode
    if is_transpose and double:
        _fail(ctx.at(mode), f"{mode}=double_row cannot be combined with {transpose}=true")
    m_size, n_size = s.free_size, m.free_size
    if double:
        for name, tile in ((stationary, s), (moving, m)):
            written = ctx.written_shape(tile)
            if tile.free_size % 2 or (len(written) > 2 and written[1] != 2):
                shape = "[" + ", ".join(map(str, written)) + "]"
                _fail(tile, f"{mode}=double_row contracts over [K, 2, F] operands: {name} is "
                            f"{shape} ({tile.free_size} elements per partition), not [K, 2, F]")
        m_size, n_size = m_size // 2, n_size // 2
    what = " per half" if double else ""
    if m_size > ctx.target.matmul_stationary_fmax:
        _fail(s, f"{stationary} has {m_size} elements per partition{what}; {ctx.definition.name} "
                 f"allows at most {ctx.target.matmul_stationary_fmax} (the PE array's columns)")
    allowed = list(ctx.target.matmul_psum_dtypes)
    if is_transpose and s.dtype not in allowed:
        allowed.append(s.dtype)
    if d.dtype not in allowed:
        mode_note = " in transpose mode" if is_transpose else ""
        _fail(d, f"matmul writes {' or '.join(allowed)} into PSUM on {ctx.target.name}"
                 f"{mode_note}; {dst} is {d.dtype}")
    n_max = ctx.target.matmul_moving_fmax
    if n_max > 512:  # v4: the whole PSUM partition, in dst's element size (fp8 lands as 16 bits)
        n_max = _core_psum(ctx) // max(dtypes.get(d.dtype).itemsize, 2)
    if n_size > n_max:
        _fail(m, f"{moving} has {n_size} elements per partition{what}; {ctx.definition.name} "
                 f"allows at most {n_max} with a {d.dtype} dst on {ctx.target.name}")
    if (d.partitions, d.free_size) != (m_size, n_size):
        shape = f"[{s.partitions}, 2, {m_size}] x [{m.partitions}, 2, {n_size}]" if double else \
            f"{stationary} free size x {moving} free size"
        _fail(d, f"matmul output must be [M, N] = [{m_size}, {n_size}] ({shape}), but {dst} is "
                 f"{_shape(d)}")
    # trn1's flag only labels an ordinary matmul, which may accumulate
    if is_transpose and ctx.args.get(accumulate):
        _fail(ctx.at(accumulate), f"{transpose}=true writes a transposed tile; it cannot "
                                  f"{accumulate}")


_PE_TILE_SIZES = {"trn1": (128, 64)}


@rule(placeless=True)
def pe_tiling(ctx, position, size, stationary, mode=None):
    """nc_matmul tiling mode: tile_size [row_size, column_size] with sizes 128 / 64 (v2+) / 32
    (v3+), tile_position a multiple of it inside the 128 x 128 array; the stationary tile fits
    the PE tile; double_row cannot use column tiling; nc_matmul_mx tiles rows only."""
    given = [name for name in (position, size) if ctx.args.get(name) is not None]
    if len(given) == 1:
        missing = size if given[0] == position else position
        _fail(ctx.at(given[0]), f"{given[0]} needs {missing} too: both set tiling mode "
                                f"(neither: the whole 128 x 128 array)")
    tile = pe_tile(ctx.args)
    if tile is None:
        return
    start_row, start_col, rows, cols = tile
    legal = _PE_TILE_SIZES.get(ctx.target.name, (128, 64, 32))
    row_only = mode is None  # nc_matmul_mx
    for what, value in (("row_size", rows), ("column_size", cols)):
        if row_only and what == "column_size":
            if value != 128:
                _fail(ctx.at(size), f"{ctx.definition.name} tiles rows only: column_size must be "
                                    f"128, not {value}")
        elif value not in legal:
            _fail(ctx.at(size), f"{size} {what} = {value}; {ctx.target.name} allows "
                                f"{', '.join(map(str, legal))}")
    if row_only and start_col != 0:
        _fail(ctx.at(position), f"{ctx.definition.name} tiles rows only: start_column must be 0, "
                                f"not {start_col}")
    for what, start, extent in (("start_row", start_row, rows), ("start_column", start_col, cols)):
        if start % extent or start + extent > 128:
            _fail(ctx.at(position), f"{position} {what} = {start} must be a multiple of {extent} "
                                    f"(the tile_size) below 128: "
                                    f"{', '.join(str(v) for v in range(0, 128, extent))}")
    if mode is not None and ctx.args.get(mode) == 1 and cols != 128:
        _fail(ctx.at(size), f"perf_mode=double_row cannot be combined with column tiling "
                            f"(column_size {cols}, not 128)")
    for _, tile in _tiles(ctx, [stationary]):
        m_size = tile.free_size // (2 if mode is not None and ctx.args.get(mode) == 1 else 1)
        if tile.partitions > rows:
            _fail(tile, f"{stationary} spans {tile.partitions} partitions but the PE tile has "
                        f"{rows} rows (tile_size {rows} x {cols})")
        if m_size > cols:
            _fail(tile, f"{stationary} has {m_size} columns but the PE tile has {cols} "
                        f"(tile_size {rows} x {cols})")


@rule(tiles_only=True)
def dynamic_offset(ctx, name):
    """The *_dynamic_src / *_dynamic_dst copies address their tile at a run-time offset."""
    for _, tile in _tiles(ctx, [name]):
        if not tile.regs:
            plain = ctx.definition.name.split("_dynamic")[0]
            _fail(tile, f"{name} of {ctx.definition.name} needs a register offset in a free "
                        f"dim (e.g. {tile.symbol}[:, r1*64 : r1*64 + 64]); for a static slice "
                        f"use {plain}")


@rule(placeless=True, tiles_only=True)
def even_free(ctx, name):
    """``name`` has an even number of elements per partition."""
    for _, tile in _tiles(ctx, [name]):
        if tile.free_size % 2:
            _fail(tile, f"{name} must have an even number of elements per partition, not "
                        f"{tile.free_size}")


@rule(placeless=True, tiles_only=True)
def psum_banks(ctx, name):
    """``name``'s bytes in each partition stay in one PSUM bank, on targets whose largest matmul
    fits one bank."""
    for _, tile in _tiles(ctx, [name]):
        bank = ctx.target.psum_bank_bytes
        first = tile.base
        last = tile.base + tile.extent - 1
        multi_bank = ctx.target.matmul_moving_fmax * 4 > bank
        if not multi_bank and first // bank != last // bank:
            _fail(tile, f"{name} bytes {first}..{last} of each partition cross a PSUM bank "
                        f"boundary (banks are {bank} bytes: 512 fp32) on {ctx.target.name}",
                  (f"this slice of {tile.symbol} starts {first % bank} bytes into bank "
                   + str(first // bank),))


@rule(placeless=True, tiles_only=True)
def transposed(ctx, dst, src):
    """``dst``'s shape is ``src``'s transposed: [src free, src partitions]."""
    tiles = dict(_tiles(ctx, [dst, src]))
    if len(tiles) == 2:
        d, s = tiles[dst], tiles[src]
        if (d.partitions, d.free_size) != (s.free_size, s.partitions):
            _fail(d, f"{dst} must be [{s.free_size}, {s.partitions}] (the transpose of {src} "
                     f"{_shape(s)}), not {_shape(d)}")


@rule(placeless=True)
def hw_dge(ctx, name):
    """dge=hw needs a target with a hardware descriptor generator."""
    if ctx.args.get(name) == 1 and not ctx.target.dma_hwdge_fixed_ns:
        _fail(ctx.at(name), f"{name}=hw needs the hardware descriptor generator, which {ctx.target.name} "
                   f"does not have (trn2 and later); use {name}=static")


@rule(placeless=True, tiles_only=True)
def index_column(ctx, index):
    """An index tile holds one row number per partition."""
    tiles = dict(_tiles(ctx, [index]))
    if index in tiles and tiles[index].free_size != 1:
        _fail(tiles[index], f"{index} must be a column [P, 1] (one row number per partition), not "
                            f"{_shape(tiles[index])}")


@rule(placeless=True, tiles_only=True)
def free_ratio(ctx, big, small, factor):
    """``big`` has ``factor`` elements per partition for each of ``small``'s."""
    tiles = dict(_tiles(ctx, [big, small]))
    if len(tiles) == 2 and tiles[big].free_size != int(factor) * tiles[small].free_size:
        _fail(tiles[big], f"{big} must have {factor} x {tiles[small].free_size} = "
                          f"{int(factor) * tiles[small].free_size} elements per partition "
                          f"({factor} per element of {small}), not {tiles[big].free_size}")


@rule(placeless=True, tiles_only=True)
def free_plus(ctx, big, small, extra):
    """``big`` has ``small``'s elements per partition plus ``extra``."""
    tiles = dict(_tiles(ctx, [big, small]))
    if len(tiles) == 2 and tiles[big].free_size != tiles[small].free_size + int(extra):
        _fail(tiles[big], f"{big} must have {tiles[small].free_size} + {extra} = "
                          f"{tiles[small].free_size + int(extra)} elements per partition "
                          f"(one per element of {small}, then the count), not "
                          f"{tiles[big].free_size}")


def _enum_in(ctx, name, allowed, what):
    from neuronemu.isa.table import load_isa

    values = load_isa().enums["alu_op"].values
    code = ctx.args.get(name)
    if code is not None and code not in [values[a] for a in allowed]:
        _fail(ctx.at(name), f"{name} must be {what}: {', '.join(allowed)}")


@rule(placeless=True)
def scan_op(ctx, name):
    """``name`` is a scan operator: add, subtract, multiply, maximum or minimum."""
    _enum_in(ctx, name, ("add", "subtract", "multiply", "maximum", "minimum"),
             "a scan operator")


@rule(placeless=True)
def activation_reduce_op(ctx, name):
    """nki.isa.activation_reduce: NeuronCore-v2 folds with add only; later targets take the
    operators activate2 documents (add, maximum, minimum)."""
    from neuronemu.isa.table import load_isa

    allowed = ("add",) if ctx.target.name == "trn1" else ("add", "maximum", "minimum")
    values = load_isa().enums["reduce_op"].values
    if ctx.args.get(name) not in [values[a] for a in allowed]:
        _fail(ctx.at(name), f"{name} must be {' or '.join(allowed)} on {ctx.target.name}")


@rule(placeless=True)
def collective_op(ctx, name):
    """``name`` is a collective's reduction: add, maximum or minimum."""
    _enum_in(ctx, name, ("add", "maximum", "minimum"), "a collective reduction")


# ALU operators each engine runs (NKI "Supported Math Operators" table: add and multiply on
# GpSimd and Scalar, the rest on Vector only; tensor_tensor's page: power runs on GpSimd; the
# tensor_scalar page: the Scalar engine runs the pairs below)
_GPSIMD_ALU = {"tensor_tensor": ("add", "multiply", "power"), "tensor_scalar": ("add", "multiply")}
_SCALAR_PAIRS = (("multiply", "add"), ("multiply", "bypass"), ("add", "bypass"))


@rule(placeless=True)
def engine_alu_ops(ctx, *names):
    """The operators of a tensor_tensor / tensor_scalar that runs on GpSimd or Scalar rather
    than Vector (nki engine=...): GpSimd takes add, multiply (tensor_tensor: power too), op1 may
    be bypass; Scalar takes the pairs (multiply, add), (multiply, bypass), (add, bypass)."""
    from neuronemu.isa.table import load_isa

    alu = load_isa().enums["alu_op"]
    engine, _, base = ctx.definition.name.partition(".")
    used = [(n, alu.name_of(ctx.args[n])) for n in names if ctx.args.get(n) is not None]
    if engine == "scalar":
        pair = tuple(op for _, op in used)
        if pair not in _SCALAR_PAIRS:
            shown = ", ".join(f"{n}={op}" for n, op in used)
            bad = used[0][0] if used[0][1] not in ("multiply", "add") else used[-1][0]
            _fail(ctx.at(bad),
                  f"{ctx.definition.name} runs the operator pairs the Scalar engine has: "
                  + ", ".join(f"({a}, {b})" for a, b in _SCALAR_PAIRS)
                  + f"; got {shown} (vector.tensor_scalar takes any)")
        return
    allowed = _GPSIMD_ALU[base]
    for i, (name, op) in enumerate(used):
        if op in allowed or (i > 0 and op == "bypass"):
            continue
        _fail(ctx.at(name), f"{name}={op}: {ctx.definition.name} runs {', '.join(allowed)}"
                            f"{' (op1 also bypass)' if base == 'tensor_scalar' else ''} on the "
                            f"GpSimd engine; vector.{base} takes any operator")


@rule(placeless=True)
def compare_op(ctx, name):
    """``name`` is a comparison: equal, not_equal, greater, greater_equal, less, less_equal."""
    _enum_in(ctx, name, ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"),
             "a comparison")


BITVEC_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift")


def bitvec_codes() -> set[int]:
    from neuronemu.isa.table import load_isa

    values = load_isa().enums["alu_op"].values
    return {values[name] for name in BITVEC_OPS}


@rule(placeless=True, tiles_only=True)   # (the operators it reads are enums: never variables)
def bitvec_operands(ctx, *names):
    """Bitvec operators work on integer bits: every tile must have an integer dtype, and the
    two stages of a tensor_scalar are both bitvec or both arithmetic (bypass goes with both)."""
    from neuronemu.isa.table import load_isa

    values = load_isa().enums["alu_op"].values
    codes = bitvec_codes()
    ops = [(a.name, ctx.args.get(a.name)) for a in ctx.definition.args
           if a.kind == "enum" and a.enum == "alu_op"]
    used = [(n, c) for n, c in ops if c is not None and c != values["bypass"]]
    if not any(c in codes for _, c in used):
        return
    if not all(c in codes for _, c in used):
        kinds = ", ".join(f"{n}={load_isa().enums['alu_op'].name_of(c)}" for n, c in used)
        _fail(ctx.at(used[-1][0]), f"{ctx.definition.name} mixes bitvec and arithmetic "
                                   f"operators ({kinds}); "
                   f"both stages must be bitvec or both arithmetic")
    for name, tile in _tiles(ctx, names):
        if dtypes.get(tile.dtype).kind == "float":
            _fail(tile, f"{name} has dtype {tile.dtype}, but bitvec operators ("
                        f"{', '.join(BITVEC_OPS)}) need integer tiles")


@rule(placeless=True)
def activate2_ops(ctx, op0, op1, reduce_op):
    """The six (op0, op1) pairs of nki.isa.activate2, and a reduce_op it can fold with."""
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    alu = isa.enums["alu_op"]
    pair = (alu.name_of(ctx.args[op0]), alu.name_of(ctx.args[op1]))
    allowed = [("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"),
               ("add", "bypass"), ("subtract", "bypass"), ("bypass", "bypass")]
    if pair not in allowed:
        _fail(ctx.at(op1), f"({op0}, {op1}) = ({pair[0]}, {pair[1]}) is not one of activate2's pairs: "
                   + ", ".join(f"({a}, {b})" for a, b in allowed))
    name = isa.enums["reduce_op"].name_of(ctx.args[reduce_op])
    if name not in ("add", "maximum", "minimum"):
        _fail(ctx.at(reduce_op), f"{reduce_op}={name}: activate2 folds with add, maximum or minimum")


def _mx_scale_rows_ok(data: Tile, scale: Tile) -> bool:
    # scales of partitions p sit at row 32 (p // 32) + (p % 32) // 8 of the scale tile: a [P, .]
    # tile, [P/8, .] when the data fits in one quadrant, or a tile starting 0, 4, 8 or 12
    # partitions into a quadrant that reaches the last of those rows (quantize_mx and
    # matmul_mx read and write scales at those offsets, so that one tile packs up to four
    # tensors' scales: the Trainium3 architecture guide's MX scale packing)
    if scale.partitions == data.partitions or (data.partitions <= 32
                                               and scale.partitions == data.partitions // 8):
        return True
    return (scale.partitions > _mx_last_scale_row(data)
            and scale.partition_start % 32 in (0, 4, 8, 12))


def _mx_last_scale_row(data: Tile) -> int:
    last = data.partitions - 1
    return 32 * (last // 32) + (last % 32) // 8


def _mx_scale_shapes(data: Tile, columns: int) -> str:
    rows = f"{data.partitions}" + (f" or {data.partitions // 8}" if data.partitions <= 32 else "")
    return (f"[{rows}, {columns}], or [at least {_mx_last_scale_row(data) + 1}, {columns}] "
            f"starting 0, 4, 8 or 12 partitions into a quadrant")


@rule(tiles_only=True)
def mx_layout(ctx, src, dst, scale):
    """MX quantisation's layout: ``src`` spans a multiple of 32 partitions (at most 128) and a
    multiple of 4 elements; ``dst`` holds one x4 element per four values; ``scale`` one scale
    per 8 partitions."""
    tiles = dict(_tiles(ctx, [src, dst, scale]))
    if len(tiles) != 3:
        return
    s, d, sc = tiles[src], tiles[dst], tiles[scale]
    if s.partitions % 32 or s.partitions > 128:
        _fail(s, f"{src} must span a multiple of 32 partitions (at most 128), not {s.partitions}")
    if s.free_size % 4:
        _fail(s, f"{src} must have a multiple of 4 elements per partition, not {s.free_size}")
    if (d.partitions, d.free_size) != (s.partitions, s.free_size // 4):
        _fail(d, f"{dst} must be [{s.partitions}, {s.free_size // 4}] (four values per x4 "
                 f"element), not {_shape(d)}")
    if sc.free_size != s.free_size // 4 or not _mx_scale_rows_ok(s, sc):
        _fail(sc, f"{scale} must be {_mx_scale_shapes(s, s.free_size // 4)} (one scale per 8 "
                  f"partitions x 4 values, at row 32q + g), not {_shape(sc)} at partition "
                  f"{sc.partition_start}")


@rule(tiles_only=True)
def mx_scales(ctx, data, scale):
    """An MX operand ``data`` spans a multiple of 32 partitions and ``scale`` holds one scale per 8
    of them, per element."""
    tiles = dict(_tiles(ctx, [data, scale]))
    if len(tiles) != 2:
        return
    d, sc = tiles[data], tiles[scale]
    if d.partitions % 32:
        _fail(d, f"{data} must span a multiple of 32 partitions, not {d.partitions}")
    if sc.free_size != d.free_size or not _mx_scale_rows_ok(d, sc):
        _fail(sc, f"{scale} must be {_mx_scale_shapes(d, d.free_size)} (one scale per 8 "
                  f"partitions of {data}), not {_shape(sc)} at partition {sc.partition_start}")


@rule(placeless=True, tiles_only=True)
def mx_dst(ctx, dst, stationary, moving):
    """matmul_mx's ``dst`` is [stationary free, moving free], and moving's free size fits one
    partition of PSUM in dst's dtype."""
    tiles = dict(_tiles(ctx, [dst, stationary, moving]))
    if len(tiles) == 3:
        d, s, m = tiles[dst], tiles[stationary], tiles[moving]
        n_max = _core_psum(ctx) // dtypes.get(d.dtype).itemsize
        if m.free_size > n_max:
            _fail(m, f"{moving} has {m.free_size} elements per partition; "
                     f"{ctx.definition.name} allows at most {n_max} with a {d.dtype} dst")
        if (d.partitions, d.free_size) != (s.free_size, m.free_size):
            _fail(d, f"{dst} must be [{s.free_size}, {m.free_size}] ({stationary} free x "
                     f"{moving} free), not {_shape(d)}")


@rule(placeless=True)
def double_row(ctx, mode, stationary, moving):
    """The fp8 double-row mode exists from NeuronCore-v3 on and takes fp8 operands only."""
    if ctx.args.get(mode) != 1:
        return
    if ctx.target.name == "trn1":
        _fail(ctx.at(mode), f"{mode}=double_row needs trn2 or trn3 (NeuronCore-v2 has no TensorE "
                   f"performance modes)")
    for name, tile in _tiles(ctx, [stationary, moving]):
        if not tile.dtype.startswith("float8"):
            _fail(tile, f"{mode}=double_row packs fp8 pairs: {name} must be an fp8 tile, not "
                        f"{tile.dtype}")


@rule(placeless=True)
def shuffle_mask(ctx, mask, src, dst):
    """Mask entries used by a dst partition name a partition of src's quadrant (< 32, and < P
    when src is smaller), or 255; each tile spans whole quadrants unless it fits in one, and
    dst quadrant k reads src quadrant k (the same mask is used in each)."""
    tiles = dict(_tiles(ctx, [src, dst]))
    if src not in tiles or dst not in tiles:
        return
    for name in (src, dst):
        p = tiles[name].partitions
        if p > 32 and p % 32:
            _fail(tiles[name], f"{name} spans {p} partitions: a shuffle works on whole "
                               f"32-partition quadrants (a multiple of 32, or at most 32)")
    p, q = tiles[src].partitions, tiles[dst].partitions
    if q > 32 and p < q:
        _fail(tiles[src], f"{src} spans {p} partitions but {dst} {q}: dst quadrant k reads src "
                          f"quadrant k (the mask applies to each), so src spans at least dst's "
                          f"quadrants")
    limit = min(p, 32)
    for i, (_, value) in enumerate(ctx.args[mask]):
        if i < min(q, 32) and value != 255 and value >= limit:
            _fail(ctx.at(mask), f"{mask}[{i}] = {value}: entries name a source partition below {limit} "
                       f"(the quadrant's partitions in {src}) or are 255 (keep)")


def _span(t: Tile) -> str:
    return f"{t.partition_start}..{t.partition_start + t.partitions - 1}"


def _whole_gpsimd_cores(ctx, lead_name: str, lead: Tile, others, why: str) -> None:
    """Each GpSimd core owns 16 partitions: ``lead`` spans whole, aligned groups of 16 and the
    ``others`` ((name, tile), ...) span the same partitions."""
    if lead.partitions % 16 or lead.partition_start % 16:
        _fail(lead, f"{lead_name} spans partitions {_span(lead)}; {ctx.definition.name} works on "
                    f"whole GpSimd cores of 16 partitions (a multiple of 16, starting on a "
                    f"multiple of 16)")
    for name, tile in others:
        if (tile.partition_start, tile.partitions) != (lead.partition_start, lead.partitions):
            _fail(tile, f"{name} spans partitions {_span(tile)} but {lead_name} spans "
                        f"{_span(lead)}; {why}")


@rule
def local_gather_layout(ctx, dst, data, indices, num_elem_per_idx, num_valid_indices):
    """nki.isa.local_gather: each GpSimd core owns 16 partitions, so data, indices and dst cover
    the same whole groups of 16 (starting on a multiple of 16); num_elem_per_idx is a power of
    two up to 32; a core uses at most 16 x indices' free size and at most 4096 indices; dst gets
    num_valid_indices x num_elem_per_idx elements per partition."""
    tiles = dict(_tiles(ctx, [dst, data, indices]))
    if len(tiles) != 3:
        return
    d, src, idx = tiles[dst], tiles[data], tiles[indices]
    _whole_gpsimd_cores(ctx, data, src, ((indices, idx), (dst, d)),
                        "each GpSimd core reads and writes only its own 16 partitions")
    width = ctx.args.get(num_elem_per_idx)
    if width not in (1, 2, 4, 8, 16, 32):
        _fail(ctx.at(num_elem_per_idx), f"{num_elem_per_idx} must be 1, 2, 4, 8, 16 or 32, "
                                        f"not {width}")
    available = 16 * idx.free_size
    valid = ctx.args.get(num_valid_indices) or available
    if valid > available:
        _fail(ctx.at(num_valid_indices), f"{num_valid_indices}={valid} exceeds the {available} "
                                         f"indices of each core (16 partitions x {idx.free_size} "
                                         f"elements of {indices})")
    if valid > 4096:
        _fail(idx, f"{indices} gives each core 16 x {idx.free_size} = {valid} indices; "
                   f"{ctx.definition.name} uses at most 4096 per core (set {num_valid_indices})")
    if src.free_size < width:
        _fail(src, f"{data} has {src.free_size} elements per partition, fewer than "
                   f"{num_elem_per_idx}={width}")
    if d.free_size != valid * width:
        _fail(d, f"{dst} must have {valid} x {width} = {valid * width} elements per partition "
                 f"({num_valid_indices} x {num_elem_per_idx}), not {d.free_size}")


@rule
def indirection_layout(ctx, column, table, indices, group, count):
    """Tensor indirection (vector.indirect_gather / indirect_scatter): ``group`` is 16 or 32
    partitions; ``column`` (the [P, count] side), ``table`` (the side read or written at the
    offsets) and ``indices`` span the same partitions, a whole number of groups, and indices
    start on a quadrant boundary (a multiple of 32) as NKI requires; a group uses at most
    ``group`` x indices' free size offsets; ``column`` has ``count`` elements per partition."""
    tiles = dict(_tiles(ctx, [column, table, indices]))
    if len(tiles) != 3:
        return
    col, tab, idx = tiles[column], tiles[table], tiles[indices]
    size = ctx.args.get(group)
    if size not in (16, 32):
        _fail(ctx.at(group), f"{group} must be 16 (Vector, Scalar and GpSimd operands) or 32 "
                             f"(Tensor engine operands), not {size}")
    if idx.partition_start % 32:
        _fail(idx, f"{indices} starts on partition {idx.partition_start}; an index tile starts "
                   f"on a quadrant boundary (a multiple of 32)")
    for name, tile in ((table, tab), (column, col)):
        if (tile.partition_start, tile.partitions) != (idx.partition_start, idx.partitions):
            _fail(tile, f"{name} spans partitions {_span(tile)} but {indices} spans "
                        f"{_span(idx)}; each partition reads its offsets from its own group "
                        f"of {indices}'s partitions")
    if idx.partitions % size:
        _fail(idx, f"{indices} spans {idx.partitions} partitions, not a whole number of groups "
                   f"of {size}")
    available = size * idx.free_size
    used = ctx.args.get(count) or available
    if used > available:
        _fail(ctx.at(count), f"{count}={used} exceeds the {available} offsets of a group "
                             f"({size} partitions x {idx.free_size} elements of {indices})")
    if col.free_size != used:
        _fail(col, f"{column} must have {used} elements per partition (one per offset), not "
                   f"{col.free_size}")


@rule
def topk_layout(ctx, val_dst, idx_dst, src, n):
    """nki.isa.topk: one top-k per GpSimd core, so src spans whole groups of 16 partitions
    (starting on a multiple of 16) and val_dst and idx_dst the same partitions; src holds the
    ceil(n / 16) columns of each core's snake; K (val_dst's free size) is at most n."""
    tiles = dict(_tiles(ctx, [val_dst, idx_dst, src]))
    if len(tiles) != 3:
        return
    vals, idx, s = tiles[val_dst], tiles[idx_dst], tiles[src]
    _whole_gpsimd_cores(ctx, src, s, ((val_dst, vals), (idx_dst, idx)),
                        "each GpSimd core writes its results to its own 16 partitions")
    count = ctx.args.get(n)
    if count is None:
        return
    columns = -(-count // 16)
    if s.free_size < columns:
        _fail(s, f"{src} has {s.free_size} elements per partition; {n}={count} needs "
                 f"ceil({count} / 16) = {columns} (the columns of each core's snake)")
    if vals.free_size > count:
        _fail(vals, f"{val_dst} asks for the {vals.free_size} largest (its elements per "
                    f"partition) of {n}={count} elements; K must be at most n")
