"""Hypothesis strategies of the fuzz suite (issue 17): each draws a *case*, a plain picklable dict
that ``fuzzrun.execute`` runs (in a worker process) and classifies.

Modes:
    asm  kernel source bytes, assembled (and usually run with a small instruction limit):
         generated from the ISA tables (``kernels``), the tables' runnable examples with other
         legal keyword values and dtypes (``examples``), or bundled programs mutated
         (``mutants``)
    neo  a bundled program's ``.neo`` encoding with byte-level corruptions, through the CLI
    api  ``neuronemu.run`` on a small kernel with odd input arrays and keyword values
    cli  ``neuronemu ...`` argument vectors with odd options and odd ``.npy`` files

The generated kernels are mostly *valid-looking* (declared buffers of the right spaces, one
common tile shape so that shape checks often pass, legal enums and ranges) so that the fuzz
reaches the checks and the interpreter, not only the parser; a small share is deliberately
illegal.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from hypothesis import strategies as st

from neuronemu.isa.table import ISA, ArgDef, InstrDef, load_isa

TARGETS = ("trn2", "trn2", "trn1", "trn3")
MAX_INSTRUCTIONS = 500          # generated loops end quickly (a located RuntimeFault)
INTERESTING_INTS = (0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 129, 255, 256, 511,
                    512, 513, 1024, 4096, 65535, 65536, -1, -2, -128, 2**31 - 1, 2**31, 2**32,
                    2**63 - 1, 2**63, 2**64, -(2**63))
INTERESTING_FLOATS = ("0.0", "-0.0", "1.0", "-1.0", "0.5", "1.5", "2.25", "-3.75", "1e-5",
                      "1e-38", "1e-45", "65504.0", "3.0e38", "3.5e38", "1e39", "nan", "inf",
                      "-inf", "0x10", "1e308", "-1e308", "0.1", "100.0")
SPECIAL_TEXT = ("", " ", "\t", ",", ":", "[", "]", "(", ")", "=", "#", ".", "-", "*", "/", "%",
                "\r", "\r\n", "\n", "\x00", "\x0b", "\x0c", "\u00e9", "\u200b", "\ufeff", "\ud7ff",
                "r", "r64", "nan", "inf", "0x", "1e", "_", "\"", "\"x\"", "9" * 30)


# ---------------------------------------------------------------------------------------------
# generated kernels
# ---------------------------------------------------------------------------------------------

@functools.cache
def isa() -> ISA:
    return load_isa()


class _Kernel:
    """Declarations made so far, so that operands name buffers of the right space and shape."""

    def __init__(self, target: str, partitions: int, free: int):
        self.target = target
        self.partitions = partitions
        self.free = free
        self.decls: list[tuple[str, str, str, tuple[int, ...], bool]] = []  # name space dt shape C
        self.lines: list[str] = []
        self.labels = ["top", "end"]
        self.wild = False               # this kernel may hold deliberately illegal text

    def odd(self, draw, percent: int) -> bool:
        """True with ``percent`` % probability in a wild kernel, never in a tame one."""
        return self.wild and draw(st.integers(0, 99)) < percent

    def of_space(self, spaces, compressed: bool | None = None):
        return [d for d in self.decls if d[1] in spaces
                and (compressed is None or d[4] == compressed)]


def _dtype(draw, target: str, common=("float32", "bfloat16", "float32", "float16"),
           wild: bool = False) -> str:
    names = isa().targets[target].dtypes
    if draw(st.integers(0, 99)) < 60:
        return draw(st.sampled_from(common))
    if wild and draw(st.integers(0, 99)) < 10:
        return draw(st.sampled_from(["float64", "int64", "fp32", "bool", "float8"]))  # illegal
    return draw(st.sampled_from(names))


def _shape(draw, k: _Kernel, space: str) -> tuple[int, ...]:
    p, f = k.partitions, k.free
    roll = draw(st.integers(0, 99))
    if roll < 50:
        shape = (p, f)
    elif roll < 62:
        shape = (p, 1)
    elif roll < 70:
        shape = (p, draw(st.sampled_from([2, 4, 8, 16])), max(1, f // 4))
    elif roll < 78:
        shape = (draw(st.sampled_from([1, 16, 32, 64, 128])), draw(st.sampled_from([1, 8, 64, 128, 512])))
    elif roll < 84:
        shape = (f, p) if space != "psum" else (p, f)
    elif roll < 90 and space == "hbm":
        shape = (draw(st.sampled_from([1, 2, 4])), p, f) if draw(st.booleans()) else (p * f,)
    elif roll < 97 or not k.wild:
        shape = (p, draw(st.sampled_from([8, 32, 512, 1024, 2048, 4096])))
    elif draw(st.booleans()):  # deliberately odd sizes: zero, huge, many dims
        shape = tuple(draw(st.lists(st.sampled_from([0, 1, 3, 129, 65536, 2**20, 2**31, 2**33]),
                                    min_size=1, max_size=6)))
    else:  # products that wrap in int64 (family A)
        shape = (p, *draw(st.sampled_from([(2**32, 2**32), (3, 6148914691236517200),
                                           (2**62,), (2**31, 2**31, 4), (2**64,)])))
    return shape


def _declare(draw, k: _Kernel, space: str, index: int) -> None:
    name = f"{space[0]}{index}"
    if space == "psum":
        dtype = "float32" if draw(st.integers(0, 9)) < 8 else _dtype(draw, k.target, wild=k.wild)
    else:
        dtype = _dtype(draw, k.target, wild=k.wild)
    shape = _shape(draw, k, space)
    if space == "psum" and len(shape) == 2 and draw(st.integers(0, 9)) < 8:
        shape = (shape[0], min(shape[1], 512))
    dims = ", ".join(str(d) for d in shape)
    compressed = False
    if space == "hbm":
        role = draw(st.sampled_from(["input", "input", "output", "scratch"]))
        extra = ""
        if len(shape) == 2 and draw(st.integers(0, 9)) < 2:
            compressed, extra = True, " compressed"
        if draw(st.integers(0, 9)) < 3:
            inits = ["zeros", "ones", "arange", "nan", "full(2.5)", "full(-1)", "normal(0, 1)",
                     "normal(1, 0.5)", "uniform(-1, 1)", "uniform(0, 10)"]
            if len(shape) == 2 and shape[0] == shape[1]:
                inits.append("identity")
            if k.wild:
                inits += ["identity", "normal(0, -1)", "uniform(1, 0)", "full(inf)", "nan(1)",
                          "bogus"]
            extra += " init=" + draw(st.sampled_from(inits))
        k.lines.append(f".hbm {name} {dtype}[{dims}] {role}{extra}")
    else:
        k.lines.append(f".{space} {name} {dtype}[{dims}]")
    k.decls.append((name, space, dtype, shape, compressed))


def _index_expr(draw, k: _Kernel, limit: int) -> str:
    roll = draw(st.integers(0, 99))
    if roll < 85 or not k.wild:
        return str(draw(st.integers(0, max(0, limit - 1))))
    if roll < 93:
        return str(draw(st.sampled_from(INTERESTING_INTS)))
    return draw(st.sampled_from(["nan", "inf", "-1", "1.5", "r1", "r0*2", "(1+1)", "0x7f"]))


def _dim_slice(draw, k: _Kernel, size: int, partition: bool) -> str:
    roll = draw(st.integers(0, 99))
    if roll < 30:
        return ":"
    if roll < 70 or size <= 1:
        start = draw(st.integers(0, max(0, size - 1)))
        stop = draw(st.integers(start + 1, max(start + 1, size)))
        text = f"{start}:{stop}"
        if not partition and draw(st.integers(0, 9)) < 2:
            text += f":{draw(st.sampled_from([1, 2, 3, 4] + ([0, -1] if k.wild else [])))}"
        return text
    if roll < 80 and not partition:
        return _index_expr(draw, k, size)
    if (roll < 95 or not k.wild) and not partition:
        reg = draw(st.sampled_from(["r1", "r2", "r1*2"]))
        width = draw(st.integers(1, max(1, size // 2)))
        return f"{reg} : {reg} + {width}"
    if not k.wild:
        return ":"
    # out of range or odd endpoints
    a = draw(st.sampled_from(["", "0", "-1", str(size), str(size + 1), "nan", "1e309", "r3"]))
    b = draw(st.sampled_from(["", "0", str(size), str(size + 1), str(2**63), "inf", "r3 + 1"]))
    return f"{a}:{b}"


def _check_words(definition: InstrDef, rule: str, arg: str) -> list[tuple[str, ...]]:
    return [c.args[1:] for c in definition.checks if c.rule == rule and c.args[:1] == (arg,)]


def _param(k: _Kernel, word: str):
    return getattr(isa().targets[k.target], word[1:]) if word.startswith("@") else word


def _fitted(draw, k: _Kernel, definition: InstrDef, arg: ArgDef) -> str:
    """Declare a buffer that meets the instruction's checks on ``arg`` (space, dtype, column,
    partitions, free size) and name it: this is what lets generated kernels reach the run."""
    spaces = [s for s in (arg.spaces or ("sbuf",)) if s != "hbm"] or ["hbm"]
    space = "sbuf" if "sbuf" in spaces and draw(st.integers(0, 3)) else draw(st.sampled_from(spaces))
    names = set(isa().targets[k.target].dtypes)
    allowed = []
    for words in _check_words(definition, "dtype", arg.name):
        for w in words:
            value = _param(k, w)
            allowed += value if isinstance(value, list) else [value]
    allowed = [d for d in allowed if d in names]
    if allowed:
        dtype = draw(st.sampled_from(allowed))
    elif space == "psum":
        dtype = "float32"
    else:
        dtype = draw(st.sampled_from(["float32", "float32", "bfloat16", "float16"]))
    partitions, free = k.partitions, k.free
    if space == "psum":
        free = min(free, 512)
    if _check_words(definition, "column", arg.name) or _check_words(definition, "index_column",
                                                                      arg.name):
        free = 1
    for (n,) in _check_words(definition, "partitions_eq", arg.name):
        partitions = int(_param(k, n))
    for (n,) in _check_words(definition, "free_eq", arg.name):
        free = int(_param(k, n))
    for (n,) in _check_words(definition, "max_free", arg.name):
        free = min(free, int(_param(k, n)))
    name = f"f{len(k.decls)}"
    if space == "hbm":
        c = arg.compressed == "yes"
        k.lines.append(f".hbm {name} {dtype}[{partitions}, {free}] scratch"
                       f"{' compressed' if c else ''} init=zeros")
    else:
        c = False
        k.lines.append(f".{space} {name} {dtype}[{partitions}, {free}]")
    k.decls.append((name, space, dtype, (partitions, free), c))
    return name


def _tile(draw, k: _Kernel, arg: ArgDef, definition: InstrDef | None = None) -> str:
    if definition is not None and draw(st.integers(0, 99)) < 50:
        return _fitted(draw, k, definition, arg)
    spaces = arg.spaces or ("sbuf", "psum")
    if k.odd(draw, 20):
        spaces = ("hbm", "sbuf", "psum")  # sometimes the wrong memory
    want_c = None
    if "hbm" in spaces and draw(st.integers(0, 9)) < 9:
        want_c = arg.compressed == "yes"
    choices = k.of_space(spaces, want_c) if want_c is not None else k.of_space(spaces)
    if want_c and not choices:
        choices = k.of_space(spaces)
    if not choices:
        choices = k.decls
    if not choices or k.odd(draw, 3):
        return draw(st.sampled_from(["undeclared", "r1", "t", "top"]))
    name, space, _, shape, _ = draw(st.sampled_from(choices))
    if draw(st.integers(0, 99)) < 70:
        return name
    ndims = len(shape)
    if k.odd(draw, 10):
        ndims = draw(st.integers(0, ndims + 2))  # too few or too many dims
    parts = []
    for i in range(ndims):
        size = shape[i] if i < len(shape) else 1
        parts.append(_dim_slice(draw, k, size, partition=(i == 0 and space != "hbm")))
    return f"{name}[{', '.join(parts)}]"


def _scalar(draw, k: _Kernel, arg: ArgDef, definition: InstrDef | None = None) -> str:
    if draw(st.integers(0, 9)) < 6:
        return draw(st.sampled_from(INTERESTING_FLOATS[:12] + ("nan", "inf", "1e39")
                                    if k.wild else INTERESTING_FLOATS[:12]))
    columns = [d for d in k.of_space(arg.spaces or ("sbuf", "psum"))
               if len(d[3]) >= 2 and d[3][-1] == 1]
    if columns:
        name, _, _, shape, _ = draw(st.sampled_from(columns))
        return name if draw(st.booleans()) else f"{name}[0:{shape[0]}, 0:1]"
    return _tile(draw, k, arg, definition)


def _int(draw, k: _Kernel, arg: ArgDef) -> str:
    if arg.range and (draw(st.integers(0, 9)) < 8 or not k.wild):
        lo, hi = arg.range
        return str(draw(st.integers(lo, min(hi, lo + 300))))
    if draw(st.integers(0, 9)) < 8 or not k.wild:
        return str(draw(st.integers(-4, 64)))
    return str(draw(st.sampled_from(INTERESTING_INTS)))


def _value(draw, k: _Kernel, arg: ArgDef, definition: InstrDef | None = None) -> str:
    """An operand for one argument of the table, usually legal."""
    kind = arg.kind
    if k.odd(draw, 10):  # any other kind of value
        kind = draw(st.sampled_from(["tile", "number", "int", "bool", "enum", "reg", "label",
                                     "int_list"]))
    if kind == "tile":
        return _tile(draw, k, arg, definition)
    if kind == "scalar":
        return _scalar(draw, k, arg, definition)
    if kind == "number":
        return draw(st.sampled_from(INTERESTING_FLOATS if k.wild else INTERESTING_FLOATS[:16]))
    if kind == "int":
        return _int(draw, k, arg)
    if kind == "bool":
        return draw(st.sampled_from(["true", "false", "1", "yes"] if k.wild else
                                    ["true", "false"]))
    if kind == "enum":
        enum = isa().enums.get(arg.enum or "alu_op") or isa().enums["alu_op"]
        if k.odd(draw, 10):
            other = draw(st.sampled_from(sorted(isa().enums)))
            return draw(st.sampled_from(sorted(isa().enums[other].values)))
        return draw(st.sampled_from(sorted(enum.values)))
    if kind == "reg":
        return draw(st.sampled_from(["r0", "r1", "r2", "r3", "r7", "r63", "r64", "r1x"]
                                    if k.odd(draw, 20) else ["r0", "r1", "r2", "r3"]))
    if kind == "reg_or_int":
        if draw(st.booleans()):
            return draw(st.sampled_from(["r0", "r1", "r2", "r3"]))
        return _int(draw, k, arg)
    if kind == "label":
        return draw(st.sampled_from(k.labels + (["nowhere"] if k.odd(draw, 10) else [])))
    if kind == "int_list":
        length = arg.length or 2
        if k.odd(draw, 10):
            length = draw(st.integers(0, length + 2))
        lo, hi = arg.range or (0, 128)
        items = draw(st.lists(st.integers(lo, hi), min_size=length, max_size=length))
        return "[" + ", ".join(str(i) for i in items) + "]"
    return "0"


def _instruction(draw, k: _Kernel) -> str:
    table = isa().instructions
    names = sorted(n for n, d in table.items() if not d.targets or k.target in d.targets)
    if k.odd(draw, 10):
        names = sorted(table)                   # sometimes one the target lacks
    definition: InstrDef = table[draw(st.sampled_from(names))]
    positional, keywords = [], []
    for arg in definition.args:
        if not arg.required and draw(st.integers(0, 9)) < 6:
            continue
        if arg.required and k.odd(draw, 3):
            continue                            # a missing operand
        text = _value(draw, k, arg, definition)
        if arg.keyword:
            keywords.append(f"{arg.name}={text}")
        else:
            positional.append(text)
    if k.odd(draw, 5):
        keywords.append(draw(st.sampled_from(["bogus=1", "op=add", "queue=3", "dst=x"])))
    if k.odd(draw, 5):
        keywords.reverse()
        positional.extend(keywords)
        keywords = []
    return f"    {definition.name} " + ", ".join(positional + keywords)


@st.composite
def kernel_text(draw) -> str:
    """A kernel from the ISA tables: declarations, then a few instructions, perhaps in a loop."""
    target = draw(st.sampled_from(TARGETS))
    k = _Kernel(target, draw(st.sampled_from([128, 128, 64, 32, 16, 1])),
                draw(st.sampled_from([1, 8, 32, 64, 128, 512])))
    k.wild = draw(st.integers(0, 99)) < 15
    # without a .target line the kernel is for trn2 (the default)
    head = [f".target {target}"] if target != "trn2" or draw(st.integers(0, 9)) < 7 else []
    if draw(st.integers(0, 9)) == 0:
        head.append(".sync explicit")
    if k.odd(draw, 20):
        head.append(f".const N = {draw(st.sampled_from(['4', '2 * 3', '1.5', 'nan', '1 / 0']))}")
    for space, lo, hi in (("hbm", 1, 3), ("sbuf", 1, 5), ("psum", 0, 2)):
        for i in range(draw(st.integers(lo, hi))):
            _declare(draw, k, space, i)
    body = [_instruction(draw, k) for _ in range(draw(st.integers(1, 4)))]
    loop = draw(st.integers(0, 9)) < 3
    if loop:
        body = ["    ctrl.mov r1, 0", "top:", *body, "    ctrl.add r1, r1, 1",
                f"    ctrl.blt r1, {draw(st.sampled_from([2, 4, 1000]))}, top"]
    else:
        body = ["top:", *body]
    return "\n".join(head + k.lines + body + ["end:"]) + "\n"


@st.composite
def kernels(draw) -> dict:
    """Mode asm with a generated kernel, run (max_instructions small) most of the time."""
    source = draw(kernel_text())
    return {"mode": "asm", "source": source.encode(), "run": draw(st.integers(0, 9)) < 8,
            "max_instructions": MAX_INSTRUCTIONS, "origin": "generated"}


_DECL = re.compile(r"^\.(hbm|sbuf|psum)\s+(\w+)\s+(\w+)\[([^\]]*)\](.*)$")
_KEYWORD_VALUE = r"\b{}=(\[[^\]]*\]|[^,\s]+)"


def _vary_declaration(draw, k: _Kernel, line: str) -> str:
    """Record a setup declaration in ``k``, sometimes with another dtype or a halved free dim."""
    m = _DECL.match(line.strip())
    if m is None:
        return line
    space, name, dtype, dims, rest = m.groups()
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        return line
    if draw(st.integers(0, 9)) == 0:
        dtype = _dtype(draw, k.target, common=("float32", "bfloat16", "int32", "uint32"))
    if len(shape) > 1 and shape[-1] > 1 and draw(st.integers(0, 19)) == 0:
        shape = (*shape[:-1], shape[-1] // 2)
    k.decls.append((name, space, dtype, shape, "compressed" in rest))
    return f".{space} {name} {dtype}[{', '.join(map(str, shape))}]{rest}"


@st.composite
def example_text(draw) -> str:
    """An instruction's runnable table example (``setup``, example, ``teardown``) with other legal
    keyword values and dtypes, and perhaps a few generated instructions on its buffers."""
    table = isa().instructions
    definition = table[draw(st.sampled_from(sorted(table)))]
    target = draw(st.sampled_from(definition.targets or TARGETS))
    k = _Kernel(target, 128, 512)
    k.wild = draw(st.integers(0, 99)) < 15     # then keyword values may be out of range
    setup = [_vary_declaration(draw, k, line) for line in definition.setup.splitlines()]
    example = definition.example
    for arg in definition.args:
        if not arg.keyword or arg.kind not in ("enum", "int", "bool", "number", "reg_or_int"):
            continue
        if draw(st.integers(0, 9)) < 7:
            continue
        value = _value(draw, k, arg, definition)
        pattern = _KEYWORD_VALUE.format(arg.name)
        if re.search(pattern, example):
            replacement = f"{arg.name}={value}"
            example = re.sub(pattern, lambda _, r=replacement: r, example, count=1)
        else:
            example += f", {arg.name}={value}"
    extra = [_instruction(draw, k) for _ in range(draw(st.integers(0, 2)))] if k.decls else []
    head = [] if ".target" in definition.setup else [f".target {target}"]
    parts = head + setup + [example, definition.teardown, *extra, "end:"]
    return "\n".join(p for p in parts if p) + "\n"


@st.composite
def examples(draw) -> dict:
    """Mode asm with a varied table example: reaches the semantics of every instruction."""
    return {"mode": "asm", "source": draw(example_text()).encode(), "run": True,
            "max_instructions": MAX_INSTRUCTIONS, "origin": "isa example"}


# ---------------------------------------------------------------------------------------------
# mutated bundled programs
# ---------------------------------------------------------------------------------------------

@functools.cache
def bundled_sources() -> dict[str, bytes]:
    from neuronemu.programs import bundled_programs

    return {name: Path(path).read_bytes() for name, path in sorted(bundled_programs().items())}


_NUMBER = re.compile(rb"(?<![A-Za-z0-9_.])(0x[0-9A-Fa-f]+|\d+\.?\d*(?:[eE][-+]?\d+)?)")
_SLICE = re.compile(rb"\[([^\[\]\n]*)\]")
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _pick_match(draw, pattern: re.Pattern, text: bytes):
    matches = list(pattern.finditer(text))
    return draw(st.sampled_from(matches)) if matches else None


def _replace(text: bytes, start: int, end: int, new: bytes) -> bytes:
    return text[:start] + new + text[end:]


def _mutate_number(draw, text: bytes) -> bytes:
    m = _pick_match(draw, _NUMBER, text)
    if m is None:
        return text
    new = draw(st.one_of(st.sampled_from([str(i) for i in INTERESTING_INTS] + list(INTERESTING_FLOATS)),
                         st.integers(-10, 600).map(str),
                         st.sampled_from(["9" * 400, "1" + "0" * 5000, "0x" + "f" * 40, "1e99999",
                                          ".5", "0b101", "00", "1_000"])))
    return _replace(text, m.start(1), m.end(1), new.encode())


def _mutate_slice(draw, text: bytes) -> bytes:
    m = _pick_match(draw, _SLICE, text)
    if m is None:
        return text
    items = m.group(1).split(b",")
    i = draw(st.integers(0, len(items) - 1))
    new = draw(st.sampled_from([":", "0:0", "1:0", "0:1", "0:129", "-1:", ":-1", "::2", "0:8:0",
                                "0:8:-1", "nan", "inf", "0:inf", "r1:r1+1", "r1:r2", "r1*r2:1",
                                "3", "-1", "", "0:1:2:3", "0.5:1", "2**3", "r1 % 2 : 1",
                                "r63*1000000000000:r63*1000000000000+1", "4294967296"]))
    op = draw(st.integers(0, 3))
    if op == 0:
        items[i] = new.encode()
    elif op == 1:
        items.insert(i, new.encode())
    elif op == 2 and len(items) > 1:
        del items[i]
    else:
        items.append(new.encode())
    return _replace(text, m.start(1), m.end(1), b",".join(items))


def _mutate_name(draw, text: bytes) -> bytes:
    m = _pick_match(draw, _NAME, text)
    if m is None:
        return text
    others = sorted({n.group(0) for n in _NAME.finditer(text)})
    table = isa()
    vocabulary = ([n.split(".")[1] for n in table.instructions] + list(table.targets)
                  + [v for e in table.enums.values() for v in e.values]
                  + list(table.targets["trn3"].dtypes) + ["hbm", "sbuf", "psum", "const", "sync",
                                                          "target", "compressed", "init", "r64",
                                                          "explicit", "x" * 300])
    new = draw(st.one_of(st.sampled_from([o.decode() for o in others]), st.sampled_from(vocabulary),
                         st.text("abcxyz_0129", min_size=1, max_size=6)))
    return _replace(text, m.start(), m.end(), new.encode())


def _mutate_bytes(draw, text: bytes) -> bytes:
    pos = draw(st.integers(0, len(text)))
    op = draw(st.integers(0, 2))
    new = draw(st.one_of(st.sampled_from(SPECIAL_TEXT).map(lambda s: s.encode()),
                         st.binary(min_size=1, max_size=4)))
    if op == 0:
        return text[:pos] + new + text[pos:]
    if op == 1:
        return text[:pos] + text[pos + draw(st.integers(1, 8)):]
    return text[:pos] + new + text[pos + len(new):]


def _mutate_lines(draw, text: bytes) -> bytes:
    lines = text.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    op = draw(st.integers(0, 7))
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[j])
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3 and i + 1 < len(lines):
        lines[i:i + 2] = [lines[i] + b" " + lines[i + 1]]
    elif op == 4:
        cut = draw(st.integers(0, len(lines[i])))
        lines[i:i + 1] = [lines[i][:cut], lines[i][cut:]]
    elif op == 5:
        return b"\r".join(lines)                    # CR-only line endings (family I)
    elif op == 6:
        return b"\r\n".join(lines)
    else:
        lines = lines[:i] + lines[i:j + 1] * draw(st.integers(2, 5)) + lines[j + 1:]
    return b"\n".join(lines)


MUTATORS = {"number": _mutate_number, "slice": _mutate_slice, "name": _mutate_name,
            "bytes": _mutate_bytes, "lines": _mutate_lines}


@st.composite
def mutants(draw) -> dict:
    """Mode asm with a bundled program after one to three mutations, usually run."""
    name = draw(st.sampled_from(sorted(bundled_sources())))
    text = bundled_sources()[name]
    applied = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(sorted(MUTATORS)))
        text = MUTATORS[kind](draw, text)
        applied.append(kind)
    return {"mode": "asm", "source": text, "run": draw(st.integers(0, 9)) < 7,
            "max_instructions": 2000, "origin": f"mutant of {name} ({', '.join(applied)})"}


# ---------------------------------------------------------------------------------------------
# corrupt .neo files
# ---------------------------------------------------------------------------------------------

@functools.cache
def encoded_programs() -> dict[str, bytes]:
    """The ``.neo`` bytes of every bundled program (assembling needs no numba compile)."""
    import neuronemu
    from neuronemu import encoding
    from neuronemu.programs import bundled_programs

    return {name: encoding.encode(neuronemu.assemble_file(path))
            for name, path in sorted(bundled_programs().items())}


def apply_corruptions(data: bytes, corruptions: list[tuple]) -> bytes:
    """Apply (op, position fraction or offset, value) edits in order; pure, for reproducers."""
    buf = bytearray(data)
    for op, where, value in corruptions:
        pos = min(len(buf), where)
        if op == "set":
            buf[pos:pos + len(value)] = value
        elif op == "insert":
            buf[pos:pos] = value
        elif op == "delete":
            del buf[pos:pos + value]
        elif op == "truncate":
            del buf[pos:]
        elif op == "flip" and pos < len(buf):
            buf[pos] ^= 1 << value
    return bytes(buf)


_FIELD_VALUES = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x01\x00", b"\xff\xff", b"\x00\x00",
                 b"\xff\xff\xff\xff", b"\x00\x00\x00\x80", b"\xff" * 8, b"\x00" * 8,
                 b"\x00\x00\x00\x00\x00\x00\xf0\x7f", b"\x00\x00\x00\x00\x00\x00\xf8\x7f",
                 b"\x00\x00\xc0\x7f", b"\xc3\x28", b"\x10", b"\x05", b"\x08", b"\x40"]


@st.composite
def corruption(draw, size: int) -> tuple:
    op = draw(st.sampled_from(["set", "set", "set", "flip", "flip", "insert", "delete", "truncate"]))
    # the 4-byte magic is checked first; edits there are mostly wasted
    low = 0 if draw(st.integers(0, 19)) == 0 else min(4, size)
    where = draw(st.integers(low, max(low, size)))
    if op in ("set", "insert"):
        value = draw(st.one_of(st.sampled_from(_FIELD_VALUES), st.binary(min_size=1, max_size=8)))
    elif op == "flip":
        value = draw(st.integers(0, 7))
    elif op == "delete":
        value = draw(st.integers(1, 16))
    else:
        value = 0
    return (op, where, value)


@st.composite
def neo_files(draw) -> dict:
    """Mode neo: a bundled program's encoding with one to four corruptions (disasm, then run)."""
    name = draw(st.sampled_from(sorted(encoded_programs())))
    base = encoded_programs()[name]
    # most edits land in the header and declarations, where the decoder makes most decisions
    edits = draw(st.lists(corruption(min(len(base), draw(st.sampled_from([64, 256, len(base)])))),
                          min_size=1, max_size=4))
    return {"mode": "neo", "base": name, "corruptions": edits,
            "data": apply_corruptions(base, edits), "run": draw(st.integers(0, 9)) < 5,
            "max_instructions": 2000, "origin": f"corrupt {name}.neo"}


# ---------------------------------------------------------------------------------------------
# odd API inputs
# ---------------------------------------------------------------------------------------------

ARRAY_DTYPES = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                "int8", "int32", "int64", "uint8", "uint64", "bool", "complex64", "object", "<U3",
                "S2", ">f4", ">i8", "V4", "struct", "datetime64[s]", "timedelta64[ns]")
FILLS = ("zeros", "ones", "normal", "nan", "inf", "-inf", "huge", "max", "tiny", "300", "-1",
         "half", "mixed")
LAYOUTS = ("c", "fortran", "strided", "readonly", "list", "scalar", "none", "str", "dict",
           "matrix_subclass", "memoryview")


@st.composite
def array_recipe(draw, shape: tuple[int, ...]) -> tuple:
    """How to build one input value (``fuzzrun.make_array``): (shape, dtype, fill, layout)."""
    roll = draw(st.integers(0, 9))
    if roll < 5:
        s = shape
    elif roll == 5:
        s = ()
    elif roll == 6:
        s = tuple(reversed(shape))
    elif roll == 7:
        s = (*shape[:-1], shape[-1] + draw(st.sampled_from([-1, 1])))
    elif roll == 8:
        s = (1, *shape)
    else:
        s = draw(st.sampled_from([(0,), (*shape[:-1], 0), (int(__import__("math").prod(shape)),)]))
    return (s, draw(st.sampled_from(ARRAY_DTYPES)), draw(st.sampled_from(FILLS)),
            draw(st.sampled_from(LAYOUTS)) if draw(st.integers(0, 9)) < 3 else "c")


@st.composite
def api_calls(draw) -> dict:
    """Mode api: a small copy kernel of a random dtype, run with odd inputs and arguments."""
    target = draw(st.sampled_from(TARGETS))
    dtype = _dtype(draw, target, common=("float32", "bfloat16", "int32", "float8_e4m3"))
    shape = (draw(st.sampled_from([1, 4, 128])), draw(st.sampled_from([1, 3, 64])))
    if draw(st.integers(0, 9)) == 0:
        shape = (shape[0], 2, shape[1])
    dims = ", ".join(map(str, shape))
    free = ", ".join(map(str, shape[1:]))
    source = (f".target {target}\n.hbm x {dtype}[{dims}] input\n.hbm y {dtype}[{dims}] output\n"
              f".sbuf t {dtype}[{shape[0]}, {free}]\n    dma.copy t, x\n    dma.copy y, t\n")
    inputs = {"x": draw(array_recipe(shape))}
    if draw(st.integers(0, 9)) < 2:
        inputs[draw(st.sampled_from(["y", "t", "z", ""]))] = draw(array_recipe(shape))
    if draw(st.integers(0, 19)) == 0:
        inputs = draw(st.sampled_from([{}, None, {"x": None}]))
    kwargs = {}
    if draw(st.integers(0, 9)) < 3:
        kwargs["seed"] = draw(st.sampled_from([0, 1, -1, 2**32, 2**63, 2**64, 1.5, None]))
    if draw(st.integers(0, 9)) < 2:
        kwargs["max_instructions"] = draw(st.sampled_from([1, 2, 0, -1, 2**63, 10**30]))
    if draw(st.integers(0, 9)) < 2:
        kwargs["stochastic_rounding"] = True
        kwargs["rounding_seed"] = draw(st.sampled_from([None, 0, -5, 2**64]))
    return {"mode": "api", "source": source, "inputs": inputs, "kwargs": kwargs,
            "origin": f"api {dtype}{list(shape)}"}


# ---------------------------------------------------------------------------------------------
# command lines
# ---------------------------------------------------------------------------------------------

NPY_FILES = ("good", "wrong_shape", "wrong_dtype", "truncated", "empty", "not_npy",
             "huge_header", "pickled", "fortran", "bf16_as_v2", "nan", "int_overflow", "0d")
SMALL_KERNEL = (".hbm x float32[4, 8] input\n.hbm y float32[4, 8] output\n.sbuf t float32[4, 8]\n"
                "    dma.copy t, x\n    vector.tensor_scalar t, t, op0=multiply, operand0=2.0\n"
                "    dma.copy y, t\n")


@st.composite
def cli_calls(draw) -> dict:
    """Mode cli: argv for ``neuronemu`` with odd options; files are created in a scratch dir."""
    files: dict[str, object] = {"k.s": SMALL_KERNEL.encode()}
    command = draw(st.sampled_from(["run", "run", "run", "check", "asm", "disasm", "isa",
                                    "topology"]))
    argv = [command]
    if command in ("run", "check", "asm"):
        argv.append(draw(st.sampled_from(["k.s", "k.s", "vector_add", "missing.s", ".", "k.neo"])))
    elif command == "disasm":
        argv.append(draw(st.sampled_from(["k.neo", "k.s", "missing.neo"])))
    elif command == "isa":
        argv += draw(st.sampled_from([[], ["vector.memset"], ["memset"], ["nope"], ["--json"]]))
    else:
        argv += draw(st.sampled_from([[], ["trn2.48xlarge"], ["nope"], ["--json"]]))
    if command == "run":
        options = [
            ["--seed", draw(st.sampled_from(["0", "-1", str(2**63), str(2**64), "x"]))],
            ["--max-instructions", draw(st.sampled_from(["1", "0", "3", str(2**63)]))],
            ["--input", draw(st.sampled_from(["x=in.npy", "y=in.npy", "q=in.npy", "x=",
                                              "x=missing.npy", "x=dir"]))],
            ["--output", draw(st.sampled_from(["y=out.npy", "y=dir", "y=nodir/o.npy", "x=o.npy",
                                               "y=k.s", "y="]))],
            ["--output-dir", draw(st.sampled_from(["outs", "k.s", "dir"]))],
            ["--trace", draw(st.sampled_from(["t.json", "dir", "nodir/t.json", "out.npy"]))],
            ["--target", draw(st.sampled_from(["trn1", "trn3", "trn9"]))],
            ["--stochastic-rounding"], ["--rounding-seed", draw(st.sampled_from(["1", "-1"]))],
            ["--json"],
            ["--topology", draw(st.sampled_from(["trn1.2xlarge", "trn2.48xlarge", "nope"]))],
            ["--ranks-per-chip", draw(st.sampled_from(["1", "2", "0"]))],
        ]
        groups = draw(st.lists(st.sampled_from(options), max_size=5))
        files["in.npy"] = draw(st.sampled_from(NPY_FILES))
    elif command in ("check", "asm") and draw(st.booleans()):
        groups = [draw(st.sampled_from([["--json"], ["-o", "dir"], ["-o", "k.neo"],
                                        ["--target", "trn1"]]))]
    else:
        groups = []
    # option groups are kept apart so that a reducer can drop whole options
    return {"mode": "cli", "head": argv, "groups": groups,
            "argv": argv + [word for group in groups for word in group], "files": files,
            "origin": f"cli {command}"}


def any_case() -> st.SearchStrategy[dict]:
    return st.one_of(kernels(), examples(), mutants(), neo_files(), api_calls(), cli_calls())


MODES = {"generated": kernels, "example": examples, "mutant": mutants, "neo": neo_files,
         "api": api_calls, "cli": cli_calls}
