"""Binary encoding of assembled programs (``.neo``) and disassembly back to source.

The layout is documented in docs/encoding.md. Everything is little-endian; an instruction is its
opcode followed by one field per argument of its ISA table entry, in table order, so the
encoding follows the table as the assembler does. Disassembly prints canonical source (every
argument explicit, labels ``L<index>``) that assembles to the same bytes.
"""

from __future__ import annotations

import struct

from neuronemu.errors import InputError
from neuronemu.program import Immediate, Program, Tile

MAGIC = b"NEO\x00"
VERSION = 1

# argument field tags
_ABSENT, _TILE, _INT, _FLOAT, _REG, _LABEL, _IMMEDIATE, _INT_LIST = range(8)
_ROLES = ("input", "output", "scratch")
_COMPRESSED = 0x80  # role byte flag: the tensor is stored compressed (docs/dma.md)
_SPACES = ("sbuf", "psum")


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
    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.offset = 0
        self.name = name

    def unpack(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.offset + size > len(self.data):
            raise InputError(f"{self.name}: truncated .neo file (needed {size} bytes at offset "
                             f"{self.offset})")
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += size
        return values if len(values) > 1 else values[0]

    def text(self) -> str:
        n = self.unpack("H")
        raw = self.data[self.offset: self.offset + n]
        self.offset += n
        return raw.decode()


def encode(program: Program) -> bytes:
    """The program's bytes: header, declarations, then one record per instruction."""
    from neuronemu.isa.table import load_isa
    from neuronemu.numerics import dtypes

    isa = load_isa()
    w = _Writer()
    w.parts.append(MAGIC)
    w.pack("HH", VERSION, 0)
    w.text(program.target.name)
    tensors = list(program.tensors.values())
    w.pack("I", len(tensors))
    for t in tensors:
        w.text(t.name)
        role = _ROLES.index(t.role) | (_COMPRESSED if t.compressed else 0)
        w.pack("BBB", dtypes.get(t.dtype).code, role, len(t.shape))
        w.pack(f"{len(t.shape)}Q", *t.shape)
        w.text(t.init[0])
        w.pack("B", len(t.init) - 1)
        w.pack(f"{len(t.init) - 1}d", *t.init[1:])
    allocations = list(program.allocations.values())
    w.pack("I", len(allocations))
    for a in allocations:
        w.text(a.name)
        w.pack("BBB", _SPACES.index(a.space), dtypes.get(a.dtype).code, len(a.shape))
        w.pack(f"{len(a.shape)}Q", *a.shape)
    symbols = {t.name: i for i, t in enumerate(tensors)}
    symbols.update({a.name: len(tensors) + i for i, a in enumerate(allocations)})
    w.pack("I", len(program.instructions))
    for ins in program.instructions:
        d = ins.definition
        w.pack("H", d.opcode)
        for arg in d.args:
            _encode_arg(w, arg, ins.args[arg.name], symbols, isa)
    return w.bytes()


def _encode_arg(w: _Writer, arg, value, symbols: dict[str, int], isa) -> None:
    if value is None:
        w.pack("B", _ABSENT)
    elif isinstance(value, Tile):
        w.pack("BIB", _TILE, symbols[value.symbol], len(value.spec))
        for item in value.spec:
            kind, start, regs = item[0], item[1], item[2]
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


def is_encoded(data: bytes) -> bool:
    return data[:4] == MAGIC


def disassemble(data: bytes, name: str = "<bytes>") -> str:
    """Source text for the encoded program ``data``."""
    from neuronemu.isa.table import load_isa
    from neuronemu.numerics import dtypes

    isa = load_isa()
    r = _Reader(data, name)
    if data[:4] != MAGIC:
        raise InputError(f"{name}: not a neuronemu binary (no NEO magic)")
    r.offset = 4
    version, _ = r.unpack("HH")
    if version != VERSION:
        raise InputError(f"{name}: encoding version {version}; this neuronemu reads {VERSION}")
    target = r.text()
    lines = [f"# disassembled by neuronemu (encoding v{VERSION})", f".target {target}"]
    names = []
    for _ in range(r.unpack("I")):
        tname = r.text()
        code, role, ndim = r.unpack("BBB")
        shape = _as_tuple(r.unpack(f"{ndim}Q"))
        init = r.text()
        nparams = r.unpack("B")
        params = _as_tuple(r.unpack(f"{nparams}d")) if nparams else ()
        spec = f" init={init}({', '.join(map(repr, params))})" if params else f" init={init}"
        flag = " compressed" if role & _COMPRESSED else ""
        lines.append(f".hbm {tname} {dtypes.by_code(code).name}{list(shape)} "
                     f"{_ROLES[role & ~_COMPRESSED]}{flag}{spec}")
        names.append(tname)
    for _ in range(r.unpack("I")):
        aname = r.text()
        space, code, ndim = r.unpack("BBB")
        shape = _as_tuple(r.unpack(f"{ndim}Q"))
        lines.append(f".{_SPACES[space]} {aname} {dtypes.by_code(code).name}{list(shape)}")
        names.append(aname)
    by_opcode = {d.opcode: d for d in isa.instructions.values()}
    body: list[str] = []
    targets: set[int] = set()
    count = r.unpack("I")
    for _ in range(count):
        opcode = r.unpack("H")
        d = by_opcode.get(opcode)
        if d is None:
            raise InputError(f"{name}: unknown opcode {opcode:#06x} at byte {r.offset - 2}")
        positional, keywords = [], []
        for arg in d.args:
            text = _decode_arg(r, arg, names, isa, targets)
            if text is None:
                continue
            if arg.keyword:
                keywords.append(f"{arg.name}={text}")
            else:
                positional.append(text)
        body.append(f"{d.name} {', '.join(positional + keywords)}".rstrip())
    if r.offset != len(data):
        raise InputError(f"{name}: {len(data) - r.offset} trailing bytes after the last "
                         f"instruction")
    for pc, text in enumerate(body):
        if pc in targets:
            lines.append(f"L{pc}:")
        lines.append(f"    {text}")
    if count in targets:
        lines.append(f"L{count}:")
    return "\n".join(lines) + "\n"


def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _affine_text(start: int, regs: list[tuple[int, int]]) -> str:
    terms = [f"r{reg}" if c == 1 else f"r{reg}*{c}" for reg, c in regs]
    if start or not terms:
        terms.append(str(start))
    return " + ".join(terms).replace("+ -", "- ")


def _decode_arg(r: _Reader, arg, names, isa, targets: set[int]) -> str | None:
    tag = r.unpack("B")
    if tag == _ABSENT:
        return None
    if tag == _TILE:
        symbol, nitems = r.unpack("IB")
        items = []
        for _ in range(nitems):
            kind, start, nregs = r.unpack("BqB")
            regs = [r.unpack("Bq") for _ in range(nregs)]
            if kind == 0:
                count, step = r.unpack("QQ")
                stop = f"{_affine_text(start + (count - 1) * step + 1, regs)}"
                text = f"{_affine_text(start, regs)}:{stop}"
                items.append(text + (f":{step}" if step != 1 else ""))
            else:
                items.append(_affine_text(start, regs))
        return names[symbol] + (f"[{', '.join(items)}]" if items else "")
    if tag == _INT_LIST:
        count = r.unpack("H")
        return "[" + ", ".join(str(r.unpack("q")) for _ in range(count)) + "]"
    if tag in (_FLOAT, _IMMEDIATE):
        value = r.unpack("d")
        return repr(value)
    value = r.unpack("q")
    if tag == _REG:
        return f"r{value}"
    if tag == _LABEL:
        targets.add(value)
        return f"L{value}"
    if arg.kind == "enum":
        return isa.enums[arg.enum].name_of(value)
    if arg.kind == "bool":
        return "true" if value else "false"
    return str(value)
