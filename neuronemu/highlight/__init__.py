"""Syntax highlighting of neuronemu assembly, from the ISA tables: a Pygments lexer
(pygments_lexer.py, registered as the ``neuronemu`` lexer), and the TextMate grammar and Vim
syntax file tools/gen_highlight.py writes under editors/. docs/debugging.md, "Highlighting"."""
