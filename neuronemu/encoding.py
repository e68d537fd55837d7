"""Binary encoding of assembled programs (``.neo``) and disassembly back to source.

The layout is documented in docs/encoding.md. Everything is little-endian; an instruction is its
opcode followed by one field per argument of its ISA table entry, in table order, so the
encoding follows the table as the assembler does. Disassembly prints canonical source (every
argument explicit, labels ``L<index>``) that assembles to the same bytes.
"""

from __future__ import annotations

import re
import struct

from neuronemu.asm.expr import NUM_REGISTERS
from neuronemu.errors import AsmError, EncodingError
from neuronemu.program import Immediate, Program, Tile

MAGIC = b"NEO\x00"
VERSION = 4
# Arguments added to an instruction's table entry since a version: a file of an older version
# has no field for them, and they take their defaults (so older binaries keep loading).
_ADDED_IN = {2: {"dma.copy": ("oob",)}, 3: {"dma.gather": ("oob",), "dma.scatter": ("oob",)},
             4: {f"cc.{name}": ("group_size", "group_stride")
                 for name in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                              "all_to_all_v", "all_gather_v", "permute")}}

# argument field tags
_ABSENT, _TILE, _INT, _FLOAT, _REG, _LABEL, _IMMEDIATE, _INT_LIST = range(8)
_ROLES = ("input", "output", "scratch")
_COMPRESSED = 0x80  # role byte flag: the tensor is stored compressed (docs/dma.md)
_SPACES = ("sbuf", "psum")
_PLACED = 0x80   # allocation space byte flag: at=OFFSET (docs/language.md "Placement and aliases")
_ALIAS = 0x40    # allocation space byte flag: alias=BUFFER


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def pack(self, fmt: str, *values) -> None:
        self.parts.append(struct.pack("<" + fmt, *values))

    def text(self, value: str) -> None:
        data = value.encode()
        self.pack("H", len(data))
        self.parts.append(data)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    """Reads fields in order; every way the bytes can be wrong is an ``EncodingError`` naming
    the byte offset of the field, never an IndexError, KeyError or struct.error."""

    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.offset = 0
        self.name = name

    def fail(self, why: str, at: int | None = None) -> EncodingError:
        where = self.offset if at is None else at
        return EncodingError(f"{self.name}: not a valid .neo file: {why} at byte {where}")

    def unpack(self, fmt: str, what: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        left = len(self.data) - self.offset
        if size > left:
            raise self.fail(f"truncated .neo file: {what} needs {size} bytes, {left} left")
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += size
        return values

    def one(self, fmt: str, what: str):
        return self.unpack(fmt, what)[0]

    def text(self, what: str) -> str:
        n = self.one("H", f"the length of {what}")
        start = self.offset
        if n > len(self.data) - start:
            raise self.fail(f"truncated .neo file: {what} needs {n} bytes, "
                            f"{len(self.data) - start} left")
        self.offset += n
        try:
            return self.data[start: start + n].decode()
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not UTF-8 ({e.reason})", start + e.start) from None

    def name_field(self, what: str) -> str:
        """A name the disassembled source will use: it must be one the grammar accepts."""
        start = self.offset
        text = self.text(what)
        if not _NAME.fullmatch(text):
            raise self.fail(f"{what} {_short(text)} is not a valid name", start)
        return text

    def code(self, fmt: str, what: str, lookup, spell=str):
        """A code field mapped through ``lookup`` (a KeyError or IndexError means unknown)."""
        start = self.offset
        value = self.one(fmt, what)
        try:
            return lookup(value)
        except (KeyError, IndexError):
            raise self.fail(f"unknown {what} {spell(value)}", start) from None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


MAX_NAME_BYTES = 0xFFFF  # names are stored with a u16 length
_SYNC_EXPLICIT = 1       # header flags bit 0: the kernel is `.sync explicit` (0: auto)
_TOPOLOGY = 2            # bit 1: a `.topology` (name and u32 ranks per chip follow the target)
_FLAGS = _SYNC_EXPLICIT | _TOPOLOGY


def encode(program: Program) -> bytes:
    """The program's bytes: header, declarations, then one record per instruction.

    Raises ``AsmError`` at the declaration of a name too long for the format."""
    from neuronemu.isa import dtypes
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    tensors = list(program.tensors.values())
    allocations = list(program.allocations.values())
    _check_names(tensors + allocations)
    w = _Writer()
    w.parts.append(MAGIC)
    flags = (_SYNC_EXPLICIT if program.sync_mode == "explicit" else 0) | (
        _TOPOLOGY if program.topology is not None else 0)
    w.pack("HH", VERSION, flags)
    cores = getattr(program.target, "cores", 1)
    w.text(program.target.name + (f" cores={cores}" if cores > 1 else ""))
    if program.topology is not None:
        w.text(program.topology)
        w.pack("I", program.ranks_per_chip)
    w.pack("I", len(tensors))
    for t in tensors:
        w.text(t.name)
        role = _ROLES.index(t.role) | (_COMPRESSED if t.compressed else 0)
        w.pack("BBB", dtypes.get(t.dtype).code, role, len(t.shape))
        w.pack(f"{len(t.shape)}Q", *t.shape)
        w.text(t.init[0])
        w.pack("B", len(t.init) - 1)
        w.pack(f"{len(t.init) - 1}d", *t.init[1:])
    symbols = {t.name: i for i, t in enumerate(tensors)}
    symbols.update({a.name: len(tensors) + i for i, a in enumerate(allocations)})
    w.pack("I", len(allocations))
    for a in allocations:
        w.text(a.name)
        # the space byte's flags: at= (u64 offset) and alias= (u32 symbol) follow the shape
        space = _SPACES.index(a.space) | (_PLACED if a.placed else 0) | (
            _ALIAS if a.alias is not None else 0)
        w.pack("BBB", space, dtypes.get(a.dtype).code, len(a.shape))
        w.pack(f"{len(a.shape)}Q", *a.shape)
        if a.placed:
            w.pack("Q", a.offset)
        if a.alias is not None:
            w.pack("I", symbols[a.alias])
    w.pack("I", len(program.instructions))
    for ins in program.instructions:
        d = ins.definition
        w.pack("H", d.opcode)
        for arg in d.args:
            _encode_arg(w, arg, ins.args[arg.name], symbols, isa)
    return w.bytes()


def _check_names(declarations) -> None:
    for decl in declarations:
        size = len(decl.name.encode())
        if size > MAX_NAME_BYTES:
            raise AsmError(f"the name '{decl.name[:20]}...' is {size} characters long; the .neo "
                           f"format stores names of at most {MAX_NAME_BYTES}", decl.location)


def _encode_arg(w: _Writer, arg, value, symbols: dict[str, int], isa) -> None:
    if value is None:
        w.pack("B", _ABSENT)
    elif isinstance(value, Tile):
        w.pack("BIB", _TILE, symbols[value.symbol], len(value.spec))
        for item in value.spec:
            kind, start, regs = item[0], item[1], item[2]
            if kind == "ap":   # ap(NAME, pattern, offset, dtype): asm/apattern.py
                _encode_ap(w, item)
                continue
            w.pack("BqB", 0 if kind == "slice" else 1, start, len(regs))
            for r, c in regs:
                w.pack("Bq", r, c)
            if kind == "slice":
                w.pack("QQ", item[3], item[4])
    elif isinstance(value, Immediate):
        w.pack("Bd", _IMMEDIATE, value.value)
    elif arg.kind == "number":
        w.pack("Bd", _FLOAT, float(value))
    elif arg.kind == "int_list":
        w.pack("BH", _INT_LIST, len(value))
        for _, item in value:
            w.pack("q", item)
    elif isinstance(value, tuple):  # (kind, value) of reg / int / label arguments
        kind, v = value
        tag = {"reg": _REG, "int": _INT, "label": _LABEL}[kind]
        w.pack("Bq", tag, int(v))
    else:
        w.pack("Bq", _INT, int(value))


_NO_DTYPE = 0xFF   # an ap item without a dtype view


def _encode_ap(w: _Writer, item) -> None:
    """Tile item kind 2: an access pattern as written (docs/encoding.md)."""
    from neuronemu.isa import dtypes

    _, start, regs, pattern, dtype = item
    w.pack("BqB", 2, start, len(regs))
    for r, c in regs:
        w.pack("Bq", r, c)
    w.pack("B", len(pattern))
    for step, count in pattern:
        w.pack("QQ", step, count)
    w.pack("B", dtypes.get(dtype).code if dtype else _NO_DTYPE)


def _decode_ap(r: _Reader, symbol: str) -> str:
    from neuronemu.isa import dtypes

    start = r.one("q", "an access pattern offset")
    regs = [r.unpack("Bq", "a register term") for _ in range(r.one("B", "the register count"))]
    for reg, _ in regs:
        if reg >= NUM_REGISTERS:
            raise r.fail(f"register r{reg} does not exist (r0..r{NUM_REGISTERS - 1})",
                         r.offset - 9)
    at = r.offset
    pairs = r.one("B", "the number of access pattern pairs")
    if not 1 <= pairs <= _MAX_TILE_DIMS:
        raise r.fail(f"an access pattern of {pairs} pairs (must be 1 to {_MAX_TILE_DIMS})", at)
    pattern = [r.unpack("QQ", "an access pattern step and count") for _ in range(pairs)]
    dtype = r.code("B", "dtype code",
                   lambda v: "" if v == _NO_DTYPE else dtypes.by_code(v).name)
    text = f"{symbol}, [{', '.join(f'[{s}, {c}]' for s, c in pattern)}], {_affine_text(start, regs)}"
    return f"ap({text}{', ' + dtype if dtype else ''})"


def is_encoded(data: bytes) -> bool:
    return data[:4] == MAGIC


_MAX_TENSOR_DIMS = 16   # as the assembler allows (neuronemu.asm.assembler.MAX_HBM_DIMS)
_MAX_TILE_DIMS = 5      # partitions + neuronemu.machine.layout.MAX_FREE_DIMS free dims


def disassemble(data: bytes, name: str = "<bytes>") -> str:
    """Source text for the encoded program ``data``.

    Raises ``EncodingError`` ("not a valid .neo file: <why> at byte N") for bytes that do not
    decode; what decodes is checked again when the source is assembled."""
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    r = _Reader(data, name)
    if data[:4] != MAGIC:
        raise r.fail("not a neuronemu binary (no NEO magic)")
    r.offset = 4
    version, flags = r.unpack("HH", "the version")
    if not 1 <= version <= VERSION:
        raise r.fail(f"encoding version {version}; this neuronemu reads 1 to {VERSION}", 4)
    absent: dict[str, set[str]] = {}
    for since, entries in _ADDED_IN.items():
        if version < since:
            for mnemonic, added in entries.items():
                absent.setdefault(mnemonic, set()).update(added)
    if flags & ~_FLAGS:
        raise r.fail(f"unknown header flags {flags & ~_FLAGS:#x}", 6)
    at = r.offset
    target = r.text("the target name")
    name, _, cores = target.partition(" cores=")
    if name not in isa.targets or cores and not (cores.isdigit() and 1 <= int(cores) <= 8):
        raise r.fail(f"unknown target {_short(target)}", at)
    lines = [f"# disassembled by neuronemu (encoding v{version})", f".target {target}"]
    if flags & _TOPOLOGY:
        from neuronemu.isa.topologies import load_topologies

        at = r.offset
        topology = r.text("the topology name")
        if topology not in load_topologies():
            raise r.fail(f"unknown topology {_short(topology)}", at)
        ranks = r.one("I", "the ranks per chip")
        lines.append(f".topology {topology}" + (f" ranks_per_chip={ranks}" if ranks != 1 else ""))
    if flags & _SYNC_EXPLICIT:
        lines.append(".sync explicit")
    names: list[str] = []
    for _ in range(r.one("I", "the tensor count")):
        lines.append(_decode_tensor(r, names))
    for _ in range(r.one("I", "the allocation count")):
        lines.append(_decode_allocation(r, names))
    by_opcode = {d.opcode: d for d in isa.instructions.values()}
    body: list[str] = []
    targets: set[int] = set()
    count = r.one("I", "the instruction count")
    for _ in range(count):
        d = r.code("H", "opcode", lambda op: by_opcode[op], lambda op: f"{op:#06x}")
        positional, keywords = [], []
        missing = absent.get(d.name, ())
        for arg in d.args:
            if arg.name in missing:
                continue
            text = _decode_arg(r, arg, names, isa, targets)
            if text is None:
                continue
            if arg.keyword:
                keywords.append(f"{arg.name}={text}")
            else:
                positional.append(text)
        body.append(f"{d.name} {', '.join(positional + keywords)}".rstrip())
    if r.offset != len(data):
        raise r.fail(f"{len(data) - r.offset} trailing bytes after the last instruction")
    bad_labels = sorted(t for t in targets if t > count)
    if bad_labels:
        raise r.fail(f"a branch targets instruction {bad_labels[0]}, past the last of {count}")
    for pc, text in enumerate(body):
        if pc in targets:
            lines.append(f"L{pc}:")
        lines.append(f"    {text}")
    if count in targets:
        lines.append(f"L{count}:")
    return "\n".join(lines) + "\n"


def _decode_shape(r: _Reader, what: str, low: int, high: int) -> list[int]:
    at = r.offset
    ndim = r.one("B", f"the rank of {what}")
    if not low <= ndim <= high:
        raise r.fail(f"{what} has {ndim} dims (must be {low} to {high})", at)
    at = r.offset
    shape = list(r.unpack(f"{ndim}Q", f"the shape of {what}"))
    if 0 in shape:
        raise r.fail(f"{what} has a dimension of size 0", at)
    return shape


def _decode_tensor(r: _Reader, names: list[str]) -> str:
    from neuronemu.isa import dtypes

    tname = r.name_field("a tensor name")
    dtype = r.code("B", "dtype code", dtypes.by_code).name
    role = r.code("B", "tensor role", lambda v: (_ROLES[v & ~_COMPRESSED], v & _COMPRESSED))
    shape = _decode_shape(r, f"tensor '{tname}'", 1, _MAX_TENSOR_DIMS)
    init = r.name_field("an initialiser name")
    nparams = r.one("B", "the initialiser parameter count")
    params = r.unpack(f"{nparams}d", "the initialiser parameters")
    spec = f" init={init}({', '.join(map(repr, params))})" if params else f" init={init}"
    flag = " compressed" if role[1] else ""
    names.append(tname)
    return f".hbm {tname} {dtype}{shape} {role[0]}{flag}{spec}"


def _decode_allocation(r: _Reader, names: list[str]) -> str:
    from neuronemu.isa import dtypes

    aname = r.name_field("an allocation name")
    flags = r.code("B", "memory space code",
                   lambda v: (_SPACES[v & ~(_PLACED | _ALIAS)], v & (_PLACED | _ALIAS)))
    space, flags = flags
    dtype = r.code("B", "dtype code", dtypes.by_code).name
    shape = _decode_shape(r, f"allocation '{aname}'", 2, _MAX_TILE_DIMS)
    options = ""
    if flags & _PLACED:
        options += f" at={r.one('Q', 'an allocation offset')}"
    if flags & _ALIAS:
        options += f" alias={r.code('I', 'alias symbol index', lambda i: names[i])}"
    names.append(aname)
    return f".{space} {aname} {dtype}{shape}{options}"


def _affine_text(start: int, regs: list[tuple[int, int]]) -> str:
    terms = [f"r{reg}" if c == 1 else f"r{reg}*{c}" for reg, c in regs]
    if start or not terms:
        terms.append(str(start))
    return " + ".join(terms).replace("+ -", "- ")


def _decode_tile(r: _Reader, names: list[str]) -> str:
    symbol = r.code("I", "symbol index", lambda i: names[i])
    items = []
    for _ in range(r.one("B", "the number of tile indices")):
        kind = r.code("B", "tile index kind", lambda v: ("slice", "index", "ap")[v])
        if kind == "ap":   # the whole operand (an ap item is the tile's only item)
            return _decode_ap(r, symbol)
        start = r.one("q", "an index start")
        regs = [r.unpack("Bq", "a register term") for _ in range(r.one("B", "the register count"))]
        for reg, _ in regs:
            if reg >= NUM_REGISTERS:
                raise r.fail(f"register r{reg} does not exist (r0..r{NUM_REGISTERS - 1})",
                             r.offset - 9)
        if kind == "slice":
            count, step = r.unpack("QQ", "a slice count and step")
            if count == 0 or step == 0:
                raise r.fail("a slice with count or step 0", r.offset - 16)
            stop = f"{_affine_text(start + (count - 1) * step + 1, regs)}"
            text = f"{_affine_text(start, regs)}:{stop}"
            items.append(text + (f":{step}" if step != 1 else ""))
        else:
            items.append(_affine_text(start, regs))
    return symbol + (f"[{', '.join(items)}]" if items else "")



def _decode_arg(r: _Reader, arg, names, isa, targets: set[int]) -> str | None:
    at = r.offset
    tag = r.one("B", "an argument tag")
    if tag == _ABSENT:
        return None
    if tag == _TILE:
        return _decode_tile(r, names)
    if tag == _INT_LIST:
        count = r.one("H", "the list length")
        return "[" + ", ".join(str(v) for v in r.unpack(f"{count}q", "the list items")) + "]"
    if tag in (_FLOAT, _IMMEDIATE):
        return repr(r.one("d", "a number"))
    if tag not in (_INT, _REG, _LABEL):
        raise r.fail(f"unknown argument tag {tag} for '{arg.name}'", at)
    at = r.offset
    value = r.one("q", "an integer")
    if tag == _REG:
        if not 0 <= value < NUM_REGISTERS:
            raise r.fail(f"register r{value} does not exist (r0..r{NUM_REGISTERS - 1})", at)
        return f"r{value}"
    if tag == _LABEL:
        if value < 0:
            raise r.fail(f"negative branch target {value}", at)
        targets.add(value)
        return f"L{value}"
    if arg.kind == "enum":
        r.offset = at
        return r.code("q", f"{arg.enum} code", isa.enums[arg.enum].name_of)
    if arg.kind == "bool":
        return "true" if value else "false"
    return str(value)
