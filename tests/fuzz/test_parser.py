"""neuronemu's parser (neuronemu/asm/parser.py) against lark, the grammar's own parser (the
reference, tests/lark_reference.py): it accepts exactly what lark accepts, with an equal tree
(node kinds, children, token kinds and texts, and every line/column a diagnostic can use), and
where lark finds a syntax error it finds it too, at the same line and column, naming the same
unexpected token (what may come there is its own wording).

Inputs: every bundled program, the fuzz suite's generated kernels, table examples and mutants,
and lines of random tokens and characters."""

from __future__ import annotations

import fuzzgen
import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark_reference import lark_parser, parse_with_lark

from neuronemu.asm import parser as asm_parser
from neuronemu.asm.parser import parse
from neuronemu.errors import AsmError
from neuronemu.source import SourceFile, normalize_newlines

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _lark_tree(text: str):
    try:
        return lark_parser().parse(text + "\n")
    except lark.exceptions.LarkError:
        return None


def assert_same_tree(fast, reference) -> None:
    """Equal trees; an explicit stack, as the trees of long expressions are deep."""
    stack = [(fast, reference, "start")]
    while stack:
        a, b, path = stack.pop()
        if b is None:
            assert a is None, path
        elif isinstance(b, lark.Token):
            assert isinstance(a, asm_parser.Token), path
            assert (str(a), a.type, a.line, a.column, a.end_line, a.end_column) == \
                (str(b), b.type, b.line, b.column, b.end_line, b.end_column), path
        else:
            assert isinstance(a, asm_parser.Node), path
            assert a.data == b.data, path
            if b.data != "start":
                m = b.meta
                assert (a.meta.line, a.meta.column, a.meta.end_line, a.meta.end_column,
                        a.meta.empty) == (m.line, m.column, m.end_line, m.end_column,
                                          m.empty), path
            assert len(a.children) == len(b.children), path
            stack.extend((x, y, f"{path}/{b.data}[{i}]")
                         for i, (x, y) in enumerate(zip(a.children, b.children, strict=True)))


def check_against_lark(text: str) -> bool:
    """The parse of ``text`` agrees with lark's: the same tree, or an error at the same place
    naming the same token; True when it was accepted."""
    text = normalize_newlines(text)
    try:
        fast = asm_parser.parse_text(text, share=False)
    except asm_parser.ParseError as e:
        fast, error = None, e
    source = SourceFile("k.s", text)
    try:
        reference = parse_with_lark(source)
    except AsmError as e:
        assert fast is None, f"parser accepted what lark refuses ({e.message}):\n{text}"
        assert (error.line, error.column) == (e.location.line, e.location.column), \
            f"{error.message} vs lark's {e.message}:\n{text}"
        assert error.message.split("; expected")[0] == e.message.split("; expected")[0], text
        return False
    assert fast is not None, f"parser refused what lark accepts ({error.message}):\n{text}"
    assert_same_tree(fast, reference)
    return True


@pytest.mark.parametrize("name", sorted(fuzzgen.bundled_sources()))
def test_bundled_programs_parse_as_lark_parses_them(name):
    text = fuzzgen.bundled_sources()[name].decode()
    assert check_against_lark(text), name


@SETTINGS
@given(text=fuzzgen.kernel_text())
def test_generated_kernels(text):
    check_against_lark(text)


@SETTINGS
@given(text=fuzzgen.example_text())
def test_table_examples(text):
    assert check_against_lark(text)


@SETTINGS
@given(case=fuzzgen.mutants())
def test_mutated_programs(case):
    check_against_lark(case["source"].decode("utf-8", "replace"))


_PIECES = ("a", "b_1", "r1", "r64", "dma", "copy", "vector", "x", "e", "e5", "inf", "nan",
           "0", "1", "42", "1.5", "1.", ".5", "1e3", "1e-3", "1E+2", "1e", "0x1F", "0x", "0b101",
           "0b2", "00", "9" * 40,
           ".", ",", ":", "=", "[", "]", "(", ")", "+", "-", "*", "/", "%", "#", "#c",
           '"s"', '"', " ", "  ", "\t", "\f", "\v", "\u00e9", "\u00a0", "\x00", ";", "@", "\n")
_SHAPES = ("dma.copy a[0:64, 1:2], b, queue=1", ".hbm a float32[128, 512] input",
           "lp: ctrl.jump lp",
           "vector.tensor_scalar x[:, ::2], x[-1+2*(3), 4:], op0=add, operand0=-0.5", ".const N = (1 + 2) * -3 % 4 / 5", "x: .sbuf t bfloat16[128, 8]",
           "a.b c(1, 2), [1, 2, 3], [], f(), d[::3], e[1:], g[:2:1], +-+1",
           "dma.copy t, ap(w, [[256, 128], [32768, 4], [1, 256]], r1*8 + 2, int32), queue=2")


@st.composite
def token_lines(draw) -> str:
    """Lines of grammar pieces in random order, and well-formed lines with one piece changed."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            pieces = draw(st.lists(st.sampled_from(_PIECES), max_size=14))
            lines.append("".join(pieces))
        else:
            line = draw(st.sampled_from(_SHAPES))
            at = draw(st.integers(0, len(line)))
            cut = draw(st.integers(0, 3))
            lines.append(line[:at] + draw(st.sampled_from(_PIECES)) + line[at + cut:])
    return "\n".join(lines)


@settings(SETTINGS, max_examples=3000)
@given(text=token_lines())
def test_random_lines(text):
    check_against_lark(text)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from("ab1.:,=[]()-+*/%# \t\n\"x0e"), max_size=40))
def test_random_characters(text):
    check_against_lark(text)


def test_well_formed_shapes_take_the_fast_path():
    for line in _SHAPES:
        assert check_against_lark(line), line
        assert check_against_lark(f"{line}   # d\u00e9j\u00e0 vu \u2192 \x00 #"), line


def test_repeated_lines_share_children_with_their_own_top_node():
    line = "    dma.copy at[:, 0:256], a[:, 0:256], queue=0"
    tree = asm_parser.parse_text(f"{line}\n\n{line}\n")
    first, second = tree.children
    assert (first.meta.line, second.meta.line) == (1, 3)
    assert (second.meta.column, second.meta.end_column) == (5, 48)
    assert second.children is first.children


@pytest.mark.parametrize(("text", "message", "column"), [
    ("dma.copy a, b,\n", ("syntax error: unexpected end of line; expected one of: '(', '+', "
                          "'-', '[', name, number, string"), 15),
    ("dma.copy a b\n", "syntax error: unexpected 'b'; expected one of: ',', end of line", 12),
    ("x = 1\n", "syntax error: unexpected '='; expected one of: '.', ':'", 3),
    (".hbm a\x0bfloat32[1] input\n", "unexpected character '\\x0b'", 7),
    ("a[1:2:] \n", "syntax error: unexpected '['; expected one of: '.', ':'", 2),
    ("1.5.5\n", "syntax error: unexpected '1.5'; expected one of: '.', name", 1),
    ("dma.copy a[1:2:3:4], b  # c\n", ("syntax error: unexpected ':'; expected one of: ',', "
                                      "']'"), 17),
    ('.topology "trn2.48xlarge" \u00e9\n', "unexpected character '\u00e9'", 27),
    ("dma.copy (1 + 2\n", "syntax error: unexpected end of line; expected one of: ')'", 16),
])
def test_syntax_errors(text, message, column):
    """Hand-checked messages and columns: the token, and what may come there."""
    with pytest.raises(AsmError) as caught:
        parse(SourceFile("k.s", text))
    assert caught.value.message == message
    assert (caught.value.location.line, caught.value.location.column) == (1, column)


@pytest.mark.parametrize("depth", [1, 2, 3, 150])
def test_deep_nesting_of_every_bracket(depth):
    """Parentheses, lists, indices, calls and signs nested deep: the same tree as lark's."""
    for inner in ("1", "a[1:2, ::3]", "f(x, \"s\")", "[1, -2]", "-+-3"):
        text = inner
        for k in range(depth):
            text = ["({})", "[{}]", "t[{}, 0:1]", "g({}, 1)", "-{}", "+{}*2"][k % 6].format(text)
        assert check_against_lark(f".const N = {text}\n"), text
