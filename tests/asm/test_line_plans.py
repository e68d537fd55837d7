"""Lines that share a template (the same text but for their numbers) are read as values
(neuronemu/asm/lines.py) and lowered from the plan their values share (neuronemu/asm/direct.py;
issue 17 item 7, issue 27's one resolver). The program must be exactly the one the ordinary
path gives (assembler.PLANS = False): the same instructions (every Tile, Immediate and
Location), the same lowered arrays, and the same error, at the same place, for a bad line."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from neuronemu.api import assemble
from neuronemu.asm import assembler, direct
from neuronemu.asm import parser as asm_parser
from neuronemu.errors import AsmError
from neuronemu.programs import bundled_programs

ROOT = Path(__file__).resolve().parents[2]


def _asm_speed():
    from tools import asm_speed

    return asm_speed


def _assemble(text: str, fast: bool, monkeypatch, reuse: bool = True):
    monkeypatch.setattr(assembler, "PLANS", fast)
    monkeypatch.setattr(assembler, "REUSE", reuse)
    try:
        return assemble(text, "k.s")
    except AsmError as e:
        return e.render() if hasattr(e, "render") else str(e)
    finally:
        monkeypatch.setattr(assembler, "PLANS", True)
        monkeypatch.setattr(assembler, "REUSE", True)


def _same(text: str, monkeypatch, reuse: bool = True):
    """Assemble ``text`` both ways; the fast program (or error text)."""
    fast = _assemble(text, True, monkeypatch, reuse)
    slow = _assemble(text, False, monkeypatch, reuse)
    assert type(fast) is type(slow)
    if isinstance(fast, str):
        assert fast == slow
        return fast
    assert [w.render() for w in fast.warnings] == [w.render() for w in slow.warnings]
    assert len(fast.instructions) == len(slow.instructions)
    for a, b in zip(fast.instructions, slow.instructions, strict=True):
        assert a == b   # dataclass equality: every Tile and Immediate with its Location
    for field in ("instrs", "ops", "imms"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field))
    return fast


@pytest.mark.parametrize("name", sorted(bundled_programs()))
def test_bundled_programs_equal_the_ordinary_path(name, monkeypatch):
    _same(bundled_programs()[name].read_text(), monkeypatch)


@pytest.mark.parametrize("kind", ["distinct", "repeated", "comments"])
def test_speed_kernels_equal_the_ordinary_path(kind, tmp_path, monkeypatch):
    paths = _asm_speed().generate(tmp_path, 1500)
    program = _same(paths[kind].read_text(), monkeypatch)
    assert not isinstance(program, str)


def test_distinct_lines_take_the_fast_path(tmp_path, monkeypatch):
    """The plans really answer the distinct-line kernel (not the fallback): the ordinary path
    resolves the first line of each key only (the first of each template, and of each
    partition count of its tensor_tensor line: 1 + k % 128 partitions on repetition k)."""
    text = _asm_speed().generate(tmp_path, 400)["distinct"].read_text()
    tree = asm_parser.parse_text(text, templates=True)
    lines = [n for n in tree.children if type(n) is asm_parser.TemplateLine]
    assert len(lines) == 394 and sum(n._children is None for n in lines) == 394 - 7
    calls = []
    ordinary = assembler.Assembler._instruction
    monkeypatch.setattr(assembler.Assembler, "_instruction",
                        lambda self, node: calls.append(node) or ordinary(self, node))
    assemble(text, "k.s")
    tensor_tensor = [n.line for n in lines if "tensor_tensor" in n.text]
    assert [n.line for n in calls] == sorted({n.line for n in lines[:7]} | set(tensor_tensor))


HEADER = """\
.const W = 64
.const F = 1.5
.hbm a bfloat16[128, 4096] input
.hbm b float32[4, 8, 256] input
.hbm c bfloat16[128, 4096] output
.sbuf at bfloat16[128, 2048]
.sbuf bt bfloat16[128, 2048]
.sbuf ct float32[128, 4, 64]
.psum pt float32[128, 512]
"""
# one template per line; {n} is filled with numbers, some of them out of range
TEMPLATES = [
    "    dma.copy at[:, {a}:{a} + 64], a[:, 64*{b}:64*{b}+64], queue={q}",
    "    dma.copy at[{p}:{p}+1, {a}:{a}+W], a[{p}:{p}+1, {a}:{a} + W]",
    "    vector.tensor_tensor at[0:{p}, {a}:{a}+8], at[0:{p}, 0:8], bt[0:{p}, {a}:{a}+8], op=add",
    "    scalar.activation at[:, {a}:{a}+128], bt[:, 0:128], func=exp, scale={f}",
    "    scalar.activation at[:, {a}:{a}+128], bt[:, 0:128], func=exp, scale=-{f}",
    "    vector.tensor_scalar at[0:{p}, {a}:{a}+{w}], bt[0:{p}, 0:{w}], op0=multiply, operand0={f}",
    "    ctrl.mov r1, {n}",
    "    ctrl.mov r{r}, {n}",
    "    dma.copy ct[0:4, {i}, 0:{w}:{s}], b[:, {j}, 0:{w}:{s}]",
    "    dma.copy ct[{p}, :, {i}], b[{i}, 0:1, {j}:{j} + 4]",
    "    vector.tensor_copy at[:, {a}:{a} - {w} + {w}*2:{s}], bt[:, 0:{w}:{s}]",
    "    vector.tensor_copy pt[:, {a}:{a}+{w}], at[:, {a}: {a} + {w}]   # comment {n}",
    "    vector.tensor_copy at[:, r1*64 + {a}:r1*64+{a}+{w}], bt[:, 0:{w}]",
    "    vector.tensor_copy at[:, {a}:{a}+{w}], bt[:, 1*{a}:{a}*1+{w}]",
    "    vector.memset at[0:{p}, {a}:{a}+{w}], value={f}",
    "    vector.tensor_copy at[:, {x}:{x}+4], bt[:, 0:4]",
    "    gpsimd.iota at[:, {a}:{a}+{w}], base={n}, channel_multiplier={q}",
    "    dma.copy at[0:{p}, {a}:{a}+64], a[{i}:{i}+1, {a}:{a}+64]   # partition broadcast",
    "    dma.copy at[0:{p}, 0:{w}], a[{i}, {a}:{a}+{w}]",
    "    sync.barrier   # no arguments, no numbers in the code: {n}",
    "    sync.barrier track={i}",
    "    scalar.activation at[:, {a}:{a}+128], bt[:, 0:128], func=exp, scale={f}, bias=F",
    "    scalar.activation at[:, {a}:{a}+128], bt[:, 0:128], func=exp, bias={f}, scale=F",
]


def _numbers(rng: random.Random) -> dict[str, str]:
    def pick(*choices):
        return str(rng.choice(choices))
    return {
        "a": pick(0, 1, 7, 64, 1000, 1984, 2040, 2047, 2048, 3000, rng.randrange(2100)),
        "b": pick(0, 5, 63, 64, 65, rng.randrange(70)),
        "q": pick(0, 3, 15, 16, 99),
        "p": pick(0, 1, 2, 64, 127, 128, 129, rng.randrange(1, 129)),
        "f": pick("0.5", "2", "0", "0.0", "1e3", "3.5e38", "3.4e38", "1e999", "0x10",
                  "12.", ".25", "1.5e-3"),
        "n": pick(0, 1, 42, 2 ** 63 - 1, 2 ** 63, 2 ** 64, "0x7f", "0b101", 10 ** 40, "1.0",
                  "007"),
        "r": pick(0, 1, 63, 64),
        "w": pick(1, 2, 8, 63, 64, 65, 0),
        "i": pick(0, 1, 3, 4, 7, 8),
        "j": pick(0, 1, 7, 8, 255, 256),
        "s": pick(1, 2, 3, 0, 64),
        "x": pick("00000000000000000000000000000000000000000001", "0x10", "0b1", "1.0",
                  "99999999999999999999", "2.5", 5),
    }


@pytest.mark.parametrize("seed", range(4))
def test_generated_distinct_lines_equal_the_ordinary_path(seed, monkeypatch):
    """Many lines per template with random numbers, some out of bounds or out of range: the
    good ones together give the same program both ways (identical-line reuse on and off), and
    each bad one after a few good ones the same error."""
    rng = random.Random(seed)
    good = bad = 0
    resolvers = []
    made = direct.Direct.__init__

    def recording(self, *args):
        made(self, *args)
        resolvers.append(self)
    monkeypatch.setattr(direct.Direct, "__init__", recording)
    for template in TEMPLATES:
        lines = [template.format(**_numbers(rng)) for _ in range(20)]
        ok = [line for line in lines
              if not isinstance(_assemble(HEADER + line + "\n", False, monkeypatch), str)]
        if ok:
            resolvers.clear()
            program = _same(HEADER + "\n".join(ok) + "\n", monkeypatch, reuse=bool(seed % 2))
            assert len(program.instructions) == len(ok)
            # a key with two distinct lines had its plan made, or refused (None: a partition
            # broadcast); registers in an index are refused before (no key)
            plans = [p for r in resolvers for p in r.plans.values()]
            assert "r1*64" in template or len(set(ok)) < 2 \
                or len(plans) == len(set(ok)) \
                or any(p is None or isinstance(p, direct._Plan) for p in plans), template
        for line in [line for line in lines if line not in ok][:6]:
            error = _same(HEADER + "\n".join(ok[:3] + [line]) + "\n", monkeypatch)
            assert isinstance(error, str) and "error" in error
            bad += 1
        good += len(ok)
    assert good > 100 and bad > 20


def test_locations_follow_the_numbers_of_each_line():
    """Hand-checked columns of a line whose numbers are longer than its template's."""
    second_line = "    dma.copy at[:, 1000:1000+64], a[:, 64*20:64*20+64], queue=12"
    text = HEADER + "    dma.copy at[:, 0:0+64], a[:, 64*1:64*1+64], queue=1\n" + second_line + "\n"
    tree = asm_parser.parse_text(text, templates=True)
    assert tree.children[-1]._children is None   # not parsed: resolved from the plan
    program = assemble(text, "k.s")
    second = program.instructions[1]
    dst, src = second.args["dst"], second.args["src"]
    assert (second.location.line, second.location.column, second.location.end_column) == \
        (11, 5, 65)
    assert (dst.location.line, dst.location.column, dst.location.end_column) == (11, 14, 33)
    assert (src.location.column, src.location.end_column) == (35, 55)
    assert second_line[13:32] == "at[:, 1000:1000+64]" and second_line[34:54].startswith("a[")
    assert dst.base == program.allocations["at"].offset + 1000 * 2 and src.base == 20 * 64 * 2
    assert dst.free_dims == ((2, 64),) and dst.spec[1] == ("slice", 1000, (), 64, 1)
    assert second.args["queue"] == 12


def _same_tree(a, b, path="") -> None:
    """Equal parse trees: kinds, texts and every position (a TemplateLine parses its
    children when they are asked for)."""
    if isinstance(a, asm_parser.Token) or isinstance(b, asm_parser.Token):
        assert (str(a), a.type, a.line, a.column, a.end_column) == \
            (str(b), b.type, b.line, b.column, b.end_column), path
        return
    if a is None or b is None:
        assert a is b, path
        return
    assert (a.data, a.line, a.column, a.end_column) == (b.data, b.line, b.column, b.end_column), \
        path
    assert len(a.children) == len(b.children), path
    for i, (x, y) in enumerate(zip(a.children, b.children, strict=True)):
        _same_tree(x, y, f"{path}/{a.data}[{i}]")


@pytest.mark.parametrize("seed", range(3))
def test_template_lines_parse_like_every_other_line(seed, tmp_path):
    """parse_text with templates: the lines it does not parse give, when asked, the tree
    parsing them gives (tests/fuzz/test_parser.py checks that one against lark)."""
    rng = random.Random(seed)
    texts = [_asm_speed().generate(tmp_path, 300)["distinct"].read_text()]
    texts += [p.read_text() for p in bundled_programs().values()]
    for template in TEMPLATES:
        texts.append(HEADER + "".join(f"{template.format(**_numbers(rng))}   # {k}\n"
                                      for k in range(8)))
    unparsed = 0
    for text in texts:
        plain = asm_parser.parse_text(text, share=False)
        templated = asm_parser.parse_text(text, share=False, templates=True)
        assert (plain is None) == (templated is None)
        if plain is None:
            continue
        unparsed += sum(type(n) is asm_parser.TemplateLine and n._children is None
                        for n in templated.children)
        _same_tree(templated, plain)
    assert unparsed > 300


def test_shape_checks_remembered_per_shape(monkeypatch):
    """A shape that passed the checks passes again without them; one that failed fails again,
    at its own line, with the ordinary path's message."""
    lines = [f"    vector.tensor_copy at[0:{p}, {7 * k}:{7 * k}+{w}], bt[0:{p}, 0:{w + k % 2}]"
             for k, (p, w) in enumerate([(128, 8), (64, 8), (128, 8), (128, 9), (64, 8)] * 3)]
    good = [line for k, line in enumerate(lines) if k % 2 == 0]
    program = _same(HEADER + "\n".join(good) + "\n", monkeypatch)
    assert [i.args["dst"].shape for i in program.instructions] == \
        [(128, 8), (128, 8), (64, 8), (64, 8), (128, 9), (128, 8), (128, 8), (64, 8)]
    for k in (1, 3, 5, 7):
        error = _same(HEADER + "\n".join(good[:4] + [lines[k]]) + "\n", monkeypatch)
        assert "shape mismatch" in error and "k.s:14:" in error


def test_rept_and_macro_expansions(monkeypatch):
    """.rept bodies with \\+ and macro uses with numbers make template lines in the expanded
    text; their locations go back to the file (asm/macros.py) the same either way."""
    text = HEADER + """\
.macro move dst, src, col, q=0
    dma.copy \\dst[:, \\col:\\col+64], \\src[:, \\col*2:\\col*2+64], queue=\\q
.endm
.rept 16
    vector.tensor_scalar at[0:64, \\+*8:\\+*8+8], bt[0:64, 0:8], op0=multiply, operand0=\\+.5
    move at, a, \\+*3, q=\\+
.endr
    move bt, a, 7
    move bt, a, 700, q=2
"""
    calls = []
    ordinary = assembler.Assembler.line_instruction
    monkeypatch.setattr(assembler.Assembler, "line_instruction",
                        lambda self, node: calls.append(node) or ordinary(self, node))
    _assemble(text, True, monkeypatch)
    # resolved the ordinary way while assembling: the first line of each template (the
    # Instructions of the others are built afterwards, to move their locations to the file)
    assert len(calls) <= 4
    program = _same(text, monkeypatch)
    assert len(program.instructions) == 34
    third = program.instructions[3]   # repetition 1 of the macro's line (file line 11)
    assert (third.location.line, third.location.expansion is not None) == (11, True)
    assert third.args["dst"].spec[1] == ("slice", 3, (), 64, 1) and third.args["queue"] == 1


def test_warnings_of_every_line(monkeypatch):
    """An integer division in a float argument warns at every line (a template whose plan
    would warn once is left to the ordinary path)."""
    lines = "".join(f"    scalar.activation at[:, {8 * k}:{8 * k}+8], bt[:, 0:8], func=exp, "
                    f"scale=ONE/W\n" for k in range(6))   # no number in the argument
    program = _same(HEADER + ".const ONE = 1\n" + lines, monkeypatch)
    divisions = [w for w in program.warnings if "integer division" in w.message
                 or "divides the integers" in w.message]
    assert len(divisions) == 6
    assert [w.location.line for w in divisions] == list(range(11, 17))


def test_every_error_of_template_lines(monkeypatch):
    """Bad lines among good lines of the same templates: every error, in order, the same."""
    lines = []
    for k in range(30):
        start = 2040 + k if k % 7 == 3 else 8 * k   # out of bounds now and then
        lines.append(f"    vector.tensor_copy at[:, {start}:{start}+16], bt[:, 0:{16 + (k % 11 == 5)}]")
        lines.append(f"    dma.copy at[:, {8 * k}:{8 * k}+64], a[:, 64*{k}:64*{k}+64], "
                     f"queue={k if k != 20 else 16}")
    error = _same(HEADER + "\n".join(lines) + "\n", monkeypatch)
    assert error.count("error:") >= 7 and "out of bounds" in error and "shape mismatch" in error


def test_lines_stay_records_until_the_instructions_are_read(tmp_path, monkeypatch):
    """Lines a plan answers are compact records (``direct.Made``: lowered rows only)
    until ``program.instructions`` is read; the arrays are lowered from the records, and the
    Instructions built later are those of the ordinary path."""
    text = _asm_speed().generate(tmp_path, 700)["distinct"].read_text()
    fast = _assemble(text, True, monkeypatch)
    slow = _assemble(text, False, monkeypatch)
    pending = fast.__dict__["_pending"]
    assert fast.static_counts() == slow.static_counts()   # (builds nothing)
    records = [ins for ins in pending if type(ins) is direct.Made]
    assert "instructions" not in fast.__dict__ and len(records) > 500
    for field in ("instrs", "ops", "imms"):   # before any Instruction is built
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field))
    before = fast.instrs.copy(), fast.ops.copy(), fast.imms.copy()
    instructions = fast.instructions
    assert "_pending" not in fast.__dict__ and fast.instructions is instructions
    assert not any(type(ins) is direct.Made for ins in instructions)
    assert instructions == slow.instructions
    for array, kept in zip((fast.instrs, fast.ops, fast.imms), before, strict=True):
        np.testing.assert_array_equal(array, kept)
    assert fast.static_counts() == slow.static_counts()


def test_identical_line_of_a_record(monkeypatch):
    """A line identical to one a plan left as a record reuses it (the record is built first):
    the same program both ways, the copy at its own line."""
    line = "    dma.copy at[:, {0}:{0}+64], a[:, {0}:{0}+64]"
    lines = [line.format(k) for k in (0, 64, 128, 192)] + [line.format(192)] * 2
    program = _same(HEADER + "\n".join(lines) + "\n", monkeypatch)
    first = len(HEADER.splitlines()) + 1
    assert [ins.location.line for ins in program.instructions] == \
        list(range(first, first + 6))
    assert list(program.instrs[:, 2]) == list(range(first, first + 6))   # I_LINE


def test_attributes_of_a_program_with_records(tmp_path, monkeypatch):
    """Only ``instructions`` is made on demand: other missing attributes are errors."""
    program = _assemble(_asm_speed().generate(tmp_path, 100)["distinct"].read_text(), True,
                        monkeypatch)
    with pytest.raises(AttributeError):
        program.no_such_attribute   # noqa: B018
    assert len(program.raw_instructions()) == len(program.instructions)


def test_check_builds_no_instruction(tmp_path, monkeypatch):
    """`neuronemu check` counts instructions from the records: none is built, and the counts
    are those of the ordinary path."""
    from click.testing import CliRunner

    from neuronemu.cli import main

    path = _asm_speed().generate(tmp_path, 300)["distinct"]

    def check(*options):
        return CliRunner().invoke(main, ["check", str(path), *options]).output

    monkeypatch.setattr(assembler, "PLANS", False)
    slow = [check(), check("--json")]
    monkeypatch.setattr(assembler, "PLANS", True)

    def refuse(self):
        raise AssertionError("an Instruction was built")
    monkeypatch.setattr(direct.Made, "build", refuse)
    assert [check(), check("--json")] == slow
    assert "294 instructions" in slow[0]


def test_identical_lines_stay_records_and_one_can_be_built_alone(monkeypatch):
    """A line identical to an earlier one is a record too (``assembler.Repeat``) until asked
    for; ``program.instruction(pc)`` builds that one alone (a progress line names the
    instruction a long run is at: building all 100,000 of a traced kernel took seconds), and
    every instruction is the ordinary path's, at its own line."""
    line = "    dma.copy at[:, {0}:{0}+64], a[:, {0}:{0}+64]"
    lines = [line.format(k) for k in (0, 64, 128, 192)] + [line.format(64)] * 3
    text = HEADER + "\n".join(lines) + "\n"
    fast = _assemble(text, True, monkeypatch)
    slow = _assemble(text, False, monkeypatch)
    pending = fast.__dict__["_pending"]
    assert [type(ins).__name__ for ins in pending[4:]] == ["Repeat"] * 3
    assert fast.static_counts() == slow.static_counts()
    np.testing.assert_array_equal(fast.instrs, slow.instrs)
    assert fast.instruction(5) == slow.instructions[5]
    assert type(pending[6]) is assembler.Repeat and "_pending" in fast.__dict__
    assert fast.instruction(7) is None and fast.instruction(-1) is None
    assert fast.instructions == slow.instructions
    first = len(HEADER.splitlines()) + 1
    assert [ins.location.line for ins in fast.instructions] == list(range(first, first + 7))
