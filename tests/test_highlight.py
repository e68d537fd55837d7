"""Highlighting generated from the ISA tables: every mnemonic, engine, argument name, enum value
and directive the tables and the assembler know is highlighted as what it is, by the Pygments
lexer, the TextMate grammar and the Vim syntax file; the generated files are fresh; the lexer is
found through its entry point."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from neuronemu.highlight.words import vocabulary
from neuronemu.isa.table import load_isa

ROOT = Path(__file__).resolve().parents[1]
V = vocabulary()


def cases() -> list[tuple[str, str, str]]:
    """(line, word, kind): the word of the line that must be highlighted as kind."""
    isa = load_isa()
    out = []
    for name in isa.instructions:
        engine, op = name.split(".")
        out.append((f"    {name} x, y", op, "mnemonic"))
        out.append((f"    {name} x, y", engine, "engine"))
    for d in isa.instructions.values():
        for a in d.args:
            if a.kind != "enum":
                continue
            for value in isa.enums[a.enum].values:
                if a.keyword:
                    out.append((f"    {d.name} x, {a.name}={value}", value, "enum"))
                    out.append((f"    {d.name} x, {a.name}={value}", a.name, "argument"))
                else:
                    out.append((f"    {d.name} {value}, sem=0", value, "enum"))
    for directive in V.directives:
        out.append((f".{directive} x", f".{directive}", "directive"))
    for dtype in V.dtypes:
        out.append((f".sbuf t {dtype}[128, 4]", dtype, "dtype"))
    return list(dict.fromkeys(out))


CASES = cases()


def test_every_table_word_has_a_case():
    isa = load_isa()
    words = {w for _, w, _ in CASES}
    assert set(isa.enums["engine"].values) <= words     # every engine has instructions
    for enum in isa.enums.values():
        used = any(a.enum == enum.name for d in isa.instructions.values() for a in d.args)
        if used:
            assert set(enum.values) <= words, enum.name


def test_generated_files_are_fresh():
    result = subprocess.run([sys.executable, "-m", "tools.gen_highlight", "--check"], cwd=ROOT,
                            check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- Pygments ---------------------------------------------------------------------------------

PYGMENTS_KIND = {"mnemonic": "Token.Keyword", "engine": "Token.Name.Namespace",
                 "enum": "Token.Name.Constant", "argument": "Token.Name.Attribute",
                 "directive": "Token.Keyword.Declaration", "dtype": "Token.Keyword.Type"}


def test_pygments_highlights_every_word():
    pytest.importorskip("pygments")
    from neuronemu.highlight.pygments_lexer import NeuronemuLexer

    lexer = NeuronemuLexer()
    wrong = []
    for line, word, kind in CASES:
        tokens = [(str(t), v) for t, v in lexer.get_tokens(line)]
        if (PYGMENTS_KIND[kind], word) not in tokens:
            wrong.append((line, word, kind, tokens))
    assert not wrong, wrong[:3]


def test_pygmentize_finds_the_lexer_through_the_entry_point(tmp_path):
    """The entry point as pyproject.toml declares it, in a dist-info Pygments' plugin lookup
    reads (the editable install of this environment may point at another checkout)."""
    pytest.importorskip("pygments")
    points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    lexers = points["pygments.lexers"]
    info = tmp_path / "neuronemu_lexer-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: neuronemu-lexer\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[pygments.lexers]\n" + "".join(f"{k} = {v}\n" for k, v in lexers.items()))
    kernel = tmp_path / "k.s"
    kernel.write_text("    vector.tensor_tensor c, a, b, op=add\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "pygments", "-l", "neuronemu", "-f", "raw",
                           str(kernel)], check=False, capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "Token.Keyword\t'tensor_tensor'" in done.stdout
    assert "Token.Name.Constant\t'add'" in done.stdout


# --- TextMate -----------------------------------------------------------------------------------

TEXTMATE_KIND = {"mnemonic": "keyword.other.mnemonic", "engine": "entity.name.namespace.engine",
                 "enum": "constant.language.enum", "argument": "variable.parameter.argument",
                 "directive": "keyword.other.directive", "dtype": "storage.type.dtype"}


def _textmate_scopes(patterns: list[dict], line: str) -> list[tuple[str, str]]:
    """(scope, text) of a line, as a TextMate engine assigns them to top-level match rules:
    at each position the earliest match wins, the first rule on a tie."""
    compiled = [(re.compile(p["match"]), p) for p in patterns]
    out, pos = [], 0
    while pos < len(line):
        best = None
        for rx, p in compiled:
            m = rx.search(line, pos)
            if m and m.end() > m.start() and (best is None or m.start() < best[0].start()):
                best = (m, p)
        if best is None:
            break
        m, p = best
        if "name" in p:
            out.append((p["name"].removesuffix(".neuronemu"), m.group(0)))
        for k, cap in p.get("captures", {}).items():
            if m.group(int(k)) is not None:
                out.append((cap["name"].removesuffix(".neuronemu"), m.group(int(k))))
        pos = m.end()
    return out


def test_textmate_grammar_highlights_every_word():
    grammar = json.loads((ROOT / "editors/vscode/syntaxes/neuronemu.tmLanguage.json").read_text())
    wrong = []
    for line, word, kind in CASES:
        scopes = _textmate_scopes(grammar["patterns"], line)
        if (TEXTMATE_KIND[kind], word) not in scopes:
            wrong.append((line, word, kind, scopes))
    assert not wrong, wrong[:3]


# --- Vim ----------------------------------------------------------------------------------------

VIM_KIND = {"mnemonic": "nemuMnemonic", "engine": "nemuMnemonic", "enum": "nemuEnum",
            "argument": "nemuArgument", "directive": "nemuDirective", "dtype": "nemuType"}


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_syntax_highlights_every_word(tmp_path):
    kernel = tmp_path / "cases.s"
    kernel.write_text("".join(line + "\n" for line, _, _ in CASES))
    columns = tmp_path / "columns.txt"
    # an enum value is the last word of its line (reduce_cmd=reduce: not the one in the name)
    columns.write_text("".join(f"{(line.rindex if kind == 'enum' else line.index)(word) + 1}\n"
                               for line, word, kind in CASES))
    out = tmp_path / "groups.txt"
    script = tmp_path / "probe.vim"
    script.write_text(f"""\
set rtp^={ROOT / 'editors' / 'vim'}
syntax on
edit {kernel}
set filetype=neuronemu
let cols = readfile('{columns}')
let out = []
for i in range(len(cols))
  call add(out, synIDattr(synID(i + 1, str2nr(cols[i]), 1), 'name'))
endfor
call writefile(out, '{out}')
qall!
""")
    subprocess.run(["vim", "-Nu", "NONE", "-i", "NONE", "-Es", "-S", str(script)], check=False,
                   timeout=120, stdin=subprocess.DEVNULL, capture_output=True)
    groups = out.read_text().splitlines()
    wrong = [(line, word, kind, group) for (line, word, kind), group in zip(CASES, groups)
             if group != VIM_KIND[kind]]
    assert len(groups) == len(CASES) and not wrong, wrong[:3]
