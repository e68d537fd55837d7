"""A Pygments lexer for neuronemu assembly (``pygmentize -l neuronemu kernel.s``), its word
lists read from the ISA tables when it is imported (words.py), so it cannot fall behind them.

Registered through the ``pygments.lexers`` entry point (pyproject.toml); Pygments is an optional
dependency (``pip install neuronemu[highlight]``): only this module imports it."""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Text,
    Whitespace,
)

from neuronemu.highlight.words import vocabulary


def _rules() -> list:
    v = vocabulary()
    rules: list = [
        (r"#.*?$", Comment.Single),
        (r"^(\s*)([A-Za-z_]\w*)(\s*)(:)(?!:)", bygroups(Whitespace, Name.Label, Whitespace,
                                                       Punctuation)),
        (words(tuple("." + d for d in v.directives), suffix=r"\b"), Keyword.Declaration),
    ]
    for engine, ops in v.mnemonics.items():
        rules.append((rf"\b({engine})(\.)" + f"({'|'.join(sorted(ops, key=len, reverse=True))})"
                      + r"\b", bygroups(Name.Namespace, Punctuation, Keyword)))
    arguments = "|".join(sorted(v.arguments, key=len, reverse=True))
    values = "|".join(sorted(v.keyword_values, key=len, reverse=True))
    rules += [
        (rf"\b({arguments})(\s*)(=)(\s*)({values})\b",
         bygroups(Name.Attribute, Whitespace, Operator, Whitespace, Name.Constant)),
        (rf"\b({arguments})(\s*)(=)", bygroups(Name.Attribute, Whitespace, Operator)),
        (words(v.dtypes, prefix=r"\b", suffix=r"\b"), Keyword.Type),
        (words(v.targets, prefix=r"\b", suffix=r"\b"), Name.Builtin),
        (words(v.constants, prefix=r"\b", suffix=r"\b"), Keyword.Constant),
        (words(v.declarations, prefix=r"\b", suffix=r"\b"), Keyword.Pseudo),
        (words(v.positional_values, prefix=r"\b", suffix=r"\b(?!\.)"), Name.Constant),
        (r"\br\d+\b", Name.Variable),
        (r"\\[A-Za-z_]\w*|\\@|\\\(\)", Name.Variable.Magic),   # macro parameters
        (r"0[xX][0-9a-fA-F]+", Number.Hex),
        (r"(\d+\.\d*|\.\d+|\d+)[eE][-+]?\d+|\d+\.\d*|\.\d+", Number.Float),
        (r"\d+", Number.Integer),
        (r"[A-Za-z_]\w*", Name),
        (r"[\[\](),:]", Punctuation),
        (r"[-+*/%=<>&|^~!]", Operator),
        (r"\s+", Whitespace),
        (r".", Text),
    ]
    return rules


class NeuronemuLexer(RegexLexer):
    """neuronemu assembly: directives, labels, ``engine.mnemonic``, argument names and their
    enum values, dtypes, registers, numbers and comments."""

    name = "neuronemu"
    aliases: ClassVar = ["neuronemu", "nemu"]
    filenames: ClassVar = []    # .s is GNU assembly's too: choose it with -l neuronemu
    mimetypes: ClassVar = ["text/x-neuronemu"]
    tokens: ClassVar = {"root": _rules()}
