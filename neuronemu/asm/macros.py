"""``.rept``/``.endr`` and ``.macro``/``.endm`` (GNU as style), expanded as text before parsing.

    .rept COUNT            COUNT: a constant expression (``.const`` names allowed), >= 0
      body                 \\+ in the body is the repetition number (0, 1, ...)
    .endr

    .macro NAME [PARAM[=DEFAULT], ...]
      body                 \\PARAM: the argument's text; \\@: how many macros were expanded
    .endm                  before this one; \\(): nothing (separates \\PARAM from a following
                           letter)
    NAME ARG, ARG, PARAM=ARG    (a use: arguments split at top-level commas)

Every line of the expanded text keeps where it came from: the line in the file (the macro or
``.rept`` body line), how its columns map back to that line (an argument substituted for
``\\PARAM`` maps to the ``\\PARAM``), and the chain of expansions it is in
(``source.Expansion``). The parser and the assembler work on the expanded text; their
locations are then moved back (``Expanded.relocate_*``): every diagnostic, runtime fault,
warning and trace event of an expanded instruction names the line in the macro body, with a
note per expansion ("in expansion of macro 'm' from file.s:L:C").

A file that has none of these directives is not touched (``expand`` returns None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from neuronemu.asm.collect import Collector
from neuronemu.errors import AsmError, ResourceError
from neuronemu.source import Expansion, Location, SourceFile, location_of

MAX_LINES = 200_000
"""Lines one file may expand to: about 1 GB and 10 s to assemble (BYTES_PER_LINE); a longer
kernel is a register loop (ctrl.*), not an unrolled one."""
MAX_DEPTH = 64           # nested expansions (macros and .rept)
MAX_REPETITIONS = 1_000_000
"""Repetitions of .rept bodies and macro uses one file may make in all: an empty body emits no
line, so without this two nested ``.rept 1000000`` would loop 10^12 times and never end."""
BYTES_PER_LINE = 8 << 10
"""Host memory an expanded line costs until the program is assembled (parse tree, instruction,
lowered rows; measured 4.9 KB for a three-operand vector instruction, rounded up): the
expansion stops, located, before it would need more than the host has available."""
_HEADROOM = 256 << 20    # the interpreter, numpy and the assembler's tables

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_BLANK = r"[ \t\f]*"
BLOCK_DIRECTIVES = ("rept", "endr", "macro", "endm")   # expanded here, before assembly
_BLOCK = "|".join(BLOCK_DIRECTIVES)
_WORDS = re.compile(rf"\.(?:{_BLOCK})")
_QUICK = re.compile(rf"^{_BLANK}(?:{_NAME}{_BLANK}:{_BLANK})?\.(?:{_BLOCK})\b", re.MULTILINE)
_DIRECTIVE = re.compile(rf"{_BLANK}(?:({_NAME}){_BLANK}:{_BLANK})?\.({_BLOCK}|const)"
                        r"(?![A-Za-z0-9_])")
_INVOCATION = re.compile(rf"{_BLANK}(?:({_NAME}){_BLANK}:{_BLANK})?({_NAME})(?=[ \t\f]|$)")
_ESCAPE = re.compile(r"\\(" + _NAME + r"|@|\(\)|\+)?")
_KEYWORD = re.compile(rf"({_NAME}){_BLANK}=")


class _Line:
    """One line of (partly) expanded text: ``line`` in the file, ``maps`` from its columns back
    to that line's (one segment list per substitution, applied last to first), and the
    expansion it is in."""

    __slots__ = ("expansion", "line", "maps", "text")

    def __init__(self, text: str, line: int, maps: tuple = (), expansion: Expansion | None = None):
        self.text, self.line, self.maps, self.expansion = text, line, maps, expansion


@dataclass
class _Macro:
    name: str
    params: list[tuple[str, str | None]]    # (name, default text or None)
    body: list[_Line]
    location: Location

    def signature(self) -> str:
        return ", ".join(p if d is None else f"{p}={d}" for p, d in self.params) or "none"


class _Fatal(Exception):
    """Expansion cannot go on (too many lines)."""


def _map_position(segments, x: int, is_end: bool) -> int:
    shift = 0
    for exp_start, exp_end, orig_start, orig_end in segments:
        if x < exp_start:
            break
        if x < exp_end:   # inside a substituted argument: its \PARAM
            return orig_end - 1 if is_end else orig_start
        shift = orig_end - exp_end
    return x + shift


def _map_columns(maps, column: int, end: int | None) -> tuple[int, int | None]:
    for segments in reversed(maps):
        new_column = _map_position(segments, column, False)
        if end is not None:
            end = _map_position(segments, max(end - 1, column), True) + 1
        column = new_column
    return column, end


def _code_end(text: str) -> int:
    """Where the comment of a line starts (a '#' outside a string), or its length."""
    if '"' not in text:
        at = text.find("#")
        return len(text) if at < 0 else at
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            return i
    return len(text)


def _split_arguments(code: str, start: int) -> list[tuple[str, int, int]]:
    """The comma-separated arguments of ``code[start:]`` (commas inside brackets, parentheses
    or strings do not separate): (text, first column, end column), stripped."""
    pieces = []
    depth, quoted, begin = 0, False, start
    for i in range(start, len(code) + 1):
        ch = code[i] if i < len(code) else ","
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and (depth <= 0 or i == len(code)):
            raw = code[begin:i]
            lead = len(raw) - len(raw.lstrip())
            text = raw.strip()
            pieces.append((text, begin + lead + 1, begin + lead + 1 + len(text)))
            begin = i + 1
    if len(pieces) == 1 and not pieces[0][0]:
        return []
    return pieces


class Expanded:
    """The expanded text of a file, and the way back from it to the file."""

    def __init__(self, original: SourceFile, lines: list[_Line]):
        self.original = original
        self.lines = lines
        self.source = SourceFile(original.name, "\n".join(line.text for line in lines))

    def relocate(self, location: Location | None) -> Location | None:
        """A location in the expanded text, moved to the line (and columns) it came from."""
        if location is None or location.source is not self.source:
            return location
        if not self.lines:
            return Location(self.original, 1, 1)
        origin = self.lines[min(max(location.line, 1), len(self.lines)) - 1]
        column, end = _map_columns(origin.maps, location.column, location.end_column)
        return Location(self.original, origin.line, column, end, origin.expansion)

    def relocate_errors(self, error: AsmError) -> None:
        for e in error.errors:
            e.location = self.relocate(e.location)

    def relocate_program(self, program) -> None:
        """Move every location of an assembled program (instructions, their tiles and
        immediates, declarations, warnings) and its line numbers back to the file."""
        from neuronemu.machine import layout as L
        from neuronemu.program import Immediate, Instruction, Tile

        relocate = self.relocate
        for table in (program.tensors, program.allocations):
            for name, decl in table.items():
                table[name] = _with_location(decl, relocate(decl.location))
        instructions = []
        for ins in program.instructions:
            args = {name: (_with_location(v, relocate(v.location))
                           if isinstance(v, (Tile, Immediate)) else v)
                    for name, v in ins.args.items()}
            instructions.append(Instruction(ins.definition, args, relocate(ins.location),
                                            ins.text))
        program.instructions = instructions
        if len(instructions):
            program.instrs[:, L.I_LINE] = [ins.location.line for ins in instructions]
        for w in program.warnings:
            w.location = relocate(w.location)
            related = getattr(w, "related", None)
            if related is not None:
                from neuronemu.asm.expr import set_related

                set_related(w, relocate(related))
        program.source = self.original


def _lines_in_memory() -> int:
    """How many expanded lines the host's available memory holds (BYTES_PER_LINE each, after
    the headroom the interpreter needs); unlimited where the platform does not say."""
    from neuronemu.hostmem import host_memory

    available = host_memory()[1]
    if available is None:
        return MAX_LINES
    return max(available - _HEADROOM, 0) // BYTES_PER_LINE


def _with_location(value, location: Location):
    moved = object.__new__(type(value))
    moved.__dict__.update(value.__dict__)
    moved.__dict__["location"] = location
    return moved


def expand(source: SourceFile, collector: Collector) -> Expanded | None:
    """The expansion of ``source``'s ``.rept`` and ``.macro`` blocks and macro uses (errors go
    to ``collector``), or None when the file has no such directive."""
    text = source.text
    # the unanchored search first: about 0.3 ms per megabyte, ten times faster than the
    # line-anchored one (which skips the words in comments)
    if _WORDS.search(text) is None or _QUICK.search(text) is None:
        return None
    expander = _Expander(source, collector)
    lines = [_Line(text, number) for number, text in enumerate(source.text.split("\n"), 1)]
    try:
        expander.run(lines, 0, ())
    except _Fatal:
        # the expansion is cut short: parsing what it made would take long and report lines
        # the file does not have (labels past the cut, ...)
        if expander.fatal is not None:
            raise expander.fatal from None
        collector.raise_if_any()
    return Expanded(source, expander.out)


class _Expander:
    def __init__(self, source: SourceFile, collector: Collector):
        self.source = source
        self.collector = collector
        self.macros: dict[str, _Macro] = {}
        self.failed: set[str] = set()     # macros whose definition was refused
        self.constants: dict[str, float | int] = {}
        self.out: list[_Line] = []
        self.counter = 0                  # \@
        self.repetitions = 0              # .rept repetitions and macro uses so far
        self.fatal: ResourceError | None = None
        self.memory_lines = _lines_in_memory()

    # ------------------------------------------------------------------ locations, errors
    def _location(self, line: _Line, column: int, end: int | None = None) -> Location:
        column, end = _map_columns(line.maps, column, end)
        return Location(self.source, line.line, column, end, line.expansion)

    def _error(self, line: _Line, column: int, end: int | None, message: str,
               notes: tuple[str, ...] = (), symbol: str | None = None) -> None:
        self.collector.add(AsmError(message, self._location(line, column, end), notes, symbol))

    def _relocated(self, error: AsmError, line: _Line, scratch: SourceFile) -> AsmError:
        """An error located in a one-line scratch source, moved to ``line``."""
        loc = error.location
        if loc is not None and loc.source is scratch:
            error.location = self._location(line, loc.column, loc.end_column)
        return error

    # ------------------------------------------------------------------ the line stream
    def _emit(self, line: _Line) -> None:
        if len(self.out) >= MAX_LINES:
            self._error(line, 1, None, f"the expansion of .rept / .macro blocks exceeds "
                                       f"{MAX_LINES:,} lines")
            raise _Fatal
        if len(self.out) >= self.memory_lines:
            from neuronemu.hostmem import host_memory, human

            available = host_memory()[1] or 0
            self.fatal = ResourceError(
                f"the expansion of .rept / .macro blocks needs more host memory than is "
                f"available: {len(self.out):,} lines so far, about {human(BYTES_PER_LINE)} each "
                f"until assembled, and {human(available)} available; repeat with a register "
                f"loop (ctrl.* instructions, docs/language.md) instead of unrolling",
                self._location(line, 1))
            raise _Fatal
        if line.expansion is not None and "\\" in line.text:
            code = line.text[:_code_end(line.text)]
            for m in _ESCAPE.finditer(code):
                what = m.group(0)
                if what == "\\+":
                    message = ("'\\+' (the repetition number) is only defined inside a "
                               "'.rept' body")
                else:
                    message = (f"'{what}' is not defined here: '\\PARAM', '\\@' and '\\()' are "
                               f"defined in a macro body, '\\+' in a '.rept' body")
                self._error(line, m.start() + 1, m.end() + 1, message)
                return
        self.out.append(line)

    def _count_repetition(self, line: _Line, column: int, end: int) -> None:
        """One more .rept repetition or macro use (at ``line``): past MAX_REPETITIONS the
        expansion stops with an error there."""
        self.repetitions += 1
        if self.repetitions > MAX_REPETITIONS:
            self._error(line, column, end, f"the expansion of .rept / .macro blocks exceeds "
                                           f"{MAX_REPETITIONS:,} repetitions and macro uses in "
                                           f"all (a repeated empty body counts too)")
            raise _Fatal

    def _emit_label(self, line: _Line, match: re.Match) -> None:
        """The label before a .rept / .macro / macro use, as a line of its own."""
        if match.group(1):
            self._emit(_Line(line.text[:match.end(1)] + ":", line.line, line.maps,
                             line.expansion))

    def run(self, lines: list[_Line], depth: int, active: tuple[str, ...]) -> None:
        """Expand ``lines`` into ``self.out``; ``active``: the macros being expanded."""
        i, count = 0, len(lines)
        while i < count:
            line = lines[i]
            i += 1
            text = line.text
            code = text[:_code_end(text)] if ("#" in text or '"' in text) else text
            m = _DIRECTIVE.match(code)
            if m is not None:
                word = m.group(2)
                if word == "const":
                    self._const(line, code)
                    self._emit(line)
                    continue
                self._emit_label(line, m)
                if word == "macro":
                    i = self._define(lines, i, line, code, m)
                elif word == "rept":
                    i = self._rept(lines, i, line, code, m, depth, active)
                else:
                    opener = "rept" if word == "endr" else "macro"
                    self._error(line, m.start(2), m.end(2) + 1,
                                f"'.{word}' without a '.{opener}' before it")
                continue
            if self.macros or self.failed:
                m = _INVOCATION.match(code)
                if m is not None:
                    name = m.group(2)
                    if name in self.macros:
                        self._emit_label(line, m)
                        self._invoke(line, code, m, depth, active)
                        continue
                    if name in self.failed:   # its definition was reported
                        self._emit_label(line, m)
                        continue
            self._emit(line)

    def _block_end(self, lines: list[_Line], start: int, opener: str, closer: str) -> int | None:
        """The index of the line closing the block whose body starts at ``start``."""
        nesting = 1
        for j in range(start, len(lines)):
            m = _DIRECTIVE.match(lines[j].text)
            if m is None:
                continue
            word = m.group(2)
            if word == opener:
                nesting += 1
            elif word == closer:
                nesting -= 1
                if nesting == 0:
                    return j
        return None

    def _poison(self, body: list[_Line]) -> None:
        """A block that was not expanded (reported): what its lines declare (labels, .const,
        .hbm, .sbuf, .psum names) is not reported again as unknown where it is used."""
        for b in body:
            self.collector.poison_line(b.text)

    # ------------------------------------------------------------------ .const (for counts)
    def _parse_directive(self, line: _Line, code: str):
        """The directive node of one line, parsed alone (located errors go to the line)."""
        from neuronemu.asm.parser import parse_one

        scratch = SourceFile(self.source.name, code)
        try:
            items = parse_one(scratch, code, 1)
        except AsmError as e:
            raise self._relocated(e, line, scratch) from None
        return items[-1], scratch

    def _const(self, line: _Line, code: str) -> None:
        """Evaluate a ``.const`` so that a later ``.rept`` count may use it (the assembler
        evaluates and checks it again, and reports its errors)."""
        from neuronemu.asm.expr import Evaluator

        try:
            node, scratch = self._parse_directive(line, code)
        except AsmError:
            return
        args = node.children[1:]
        if len(args) != 1 or getattr(args[0], "data", None) != "kwarg":
            return
        name = str(args[0].children[0])
        try:
            self.constants[name] = Evaluator(scratch, self.constants).constant(args[0].children[1])
        except AsmError:
            self.collector.poison(name)

    # ------------------------------------------------------------------ .rept
    def _rept(self, lines, i, line, code, m, depth, active) -> int:
        from neuronemu.asm.expr import Evaluator

        dot = m.start(2) - 1   # the '.' of '.rept' (0-based)
        end = self._block_end(lines, i, "rept", "endr")
        if end is None:
            self._error(line, dot + 1, m.end(2) + 1, "'.rept' without a matching '.endr'")
            return i
        try:
            node, scratch = self._parse_directive(line, code)
            args = node.children[1:]
            if len(args) != 1 or getattr(args[0], "data", None) == "kwarg":
                raise AsmError("usage: .rept COUNT (a constant expression), then the body, "
                               "then .endr", self._location(line, dot + 1, len(code.rstrip()) + 1))
            try:
                count = Evaluator(scratch, self.constants).integer(args[0])
            except AsmError as e:
                raise self._relocated(e, line, scratch) from None
            if not 0 <= count <= MAX_REPETITIONS:
                raise self._relocated(AsmError(
                    f"a .rept count must be an integer in the range [0, {MAX_REPETITIONS}], got "
                    f"{count}", location_of(scratch, args[0].meta)), line, scratch)
        except AsmError as e:
            self.collector.add(e)
            self._poison(lines[i:end])
            return end + 1
        if depth >= MAX_DEPTH:
            self._error(line, dot + 1, m.end(2) + 1, f"expansions nested more than {MAX_DEPTH} "
                                                     f"deep")
            return end + 1
        body = lines[i:end]
        # \+ belongs to the innermost .rept: substitute it only outside nested .rept blocks
        outer, nesting = [], 0
        for b in body:
            word = _DIRECTIVE.match(b.text)
            word = word.group(2) if word is not None else None
            if word == "rept":
                nesting += 1
            outer.append(nesting == 0 and "\\+" in b.text)
            if word == "endr":
                nesting -= 1
        site = self._location(line, dot + 1, m.end(2) + 1)
        if not body:   # nothing to repeat: count the repetitions at once
            self.repetitions += count - min(count, 1)
            count = min(count, 1)
        for k in range(count):
            self._count_repetition(line, dot + 1, m.end(2) + 1)
            frame = Expansion("rept", "", site, k + 1, count)
            repeated = []
            for b, substitute in zip(body, outer, strict=True):
                if substitute:
                    text, segments = self._substitute(b, {"+": str(k)}, None)
                    repeated.append(_Line(text, b.line, (*b.maps, segments), frame))
                else:
                    repeated.append(_Line(b.text, b.line, b.maps, frame))
            self.run(repeated, depth + 1, active)
        return end + 1

    # ------------------------------------------------------------------ .macro
    def _define(self, lines, i, line, code, m) -> int:
        dot = m.start(2) - 1
        end = self._block_end(lines, i, "macro", "endm")
        header = re.compile(rf"{_BLANK}({_NAME})?").match(code, m.end(2))
        name = header.group(1)
        if end is None:
            self._error(line, dot + 1, m.end(2) + 1, "'.macro' without a matching '.endm'")
            if name:
                self.failed.add(name)
            return i
        usage = "usage: .macro NAME [PARAM[=DEFAULT], ...], then the body, then .endm"
        try:
            if not name or (header.end() < len(code) and code[header.end()] not in " \t\f,"):
                raise AsmError(usage, self._location(line, dot + 1, len(code.rstrip()) + 1))
            if name in self.macros:
                raise AsmError(f"macro '{name}' is already defined",
                               self._location(line, header.start(1) + 1, header.end(1) + 1),
                               (f"first defined at {self.macros[name].location}",))
            params = self._parameters(line, code, header.end(), usage)
        except AsmError as e:
            self.collector.add(e)
            if name and name not in self.macros:
                self.failed.add(name)
            return end + 1
        where = self._location(line, header.start(1) + 1, header.end(1) + 1)
        self.macros[name] = _Macro(name, params, lines[i:end], where)
        return end + 1

    def _parameters(self, line, code, start, usage) -> list[tuple[str, str | None]]:
        params: list[tuple[str, str | None]] = []
        for text, column, end in _split_arguments(code, start):
            if not text:
                raise AsmError(f"empty parameter; {usage}", self._location(line, column, end + 1))
            pieces = [(text, column)]
            if "=" not in text and re.search(r"[ \t\f]", text):   # GNU as: .macro m a b
                pieces = [(p.group(0), column + p.start()) for p in re.finditer(r"\S+", text)]
            for piece, at in pieces:
                pm = re.fullmatch(rf"({_NAME})(?:{_BLANK}={_BLANK}(.*))?", piece, re.DOTALL)
                if pm is None:
                    raise AsmError(f"a macro parameter is a name, optionally with a default "
                                   f"(NAME=VALUE), got '{piece}'",
                                   self._location(line, at, at + len(piece)))
                pname, default = pm.group(1), pm.group(2)
                if any(pname == p for p, _ in params):
                    raise AsmError(f"parameter '{pname}' is given twice",
                                   self._location(line, at, at + len(pname)))
                params.append((pname, default.strip() if default is not None else None))
        return params

    def _invoke(self, line, code, m, depth, active) -> None:
        name = m.group(2)
        macro = self.macros[name]
        site = self._location(line, m.start(2) + 1, m.end(2) + 1)
        if name in active:
            chain = " -> ".join((*active[active.index(name):], name))
            self._error(line, m.start(2) + 1, m.end(2) + 1,
                        f"macro '{name}' uses itself ({chain}); recursive macros never end "
                        f"here (there is no .if)")
            return
        if depth >= MAX_DEPTH:
            self._error(line, m.start(2) + 1, m.end(2) + 1,
                        f"expansions nested more than {MAX_DEPTH} deep")
            return
        values = self._bind(line, code, m, macro)
        if values is None:   # (a label made with \@ would have had this number)
            self._poison([_Line(b.text.replace("\\@", str(self.counter)), b.line)
                          for b in macro.body])
            return
        self._count_repetition(line, m.start(2) + 1, m.end(2) + 1)
        values["@"] = str(self.counter)
        values["()"] = ""
        self.counter += 1
        frame = Expansion("macro", name, site)
        body = []
        nesting = 0   # inside a macro this body defines, its own \PARAMs are left alone
        for b in macro.body:
            word = _DIRECTIVE.match(b.text)
            word = word.group(2) if word is not None else None
            if word == "endm":
                nesting -= 1
            if "\\" in b.text:
                text, segments = self._substitute(b, values, macro if nesting == 0 else None,
                                                  frame)
                if text is None:
                    return
                body.append(_Line(text, b.line, (*b.maps, segments), frame))
            else:
                body.append(_Line(b.text, b.line, b.maps, frame))
            if word == "macro":
                nesting += 1
        self.run(body, depth + 1, (*active, name))

    def _bind(self, line, code, m, macro: _Macro) -> dict[str, str] | None:
        """The text of every parameter for one use of ``macro`` (None: an error, reported)."""
        names = [p for p, _ in macro.params]
        given: dict[str, str] = {}
        positional = 0
        usage = f"macro '{macro.name}' takes {len(names)} argument(s) ({macro.signature()})"
        for text, column, end in _split_arguments(code, m.end(2)):
            km = _KEYWORD.match(text)
            if km is not None and not text[km.end():].startswith("="):
                key = km.group(1)
                if key not in names:
                    self._error(line, column, column + len(key),
                                f"macro '{macro.name}' has no parameter '{key}'; parameters: "
                                f"{macro.signature()}")
                    return None
                if key in given:
                    self._error(line, column, column + len(key), f"argument '{key}' given twice")
                    return None
                given[key] = text[km.end():].strip()
                continue
            if positional >= len(names):
                self._error(line, column, end, f"{usage}, got more")
                return None
            if text:
                if names[positional] in given:
                    self._error(line, column, end,
                                f"argument '{names[positional]}' given twice")
                    return None
                given[names[positional]] = text
            positional += 1
        for pname, default in macro.params:
            if pname not in given:
                if default is None:
                    self._error(line, m.start(2) + 1, m.end(2) + 1,
                                f"macro '{macro.name}' needs argument '{pname}' "
                                f"(parameters: {macro.signature()})",
                                (f"macro '{macro.name}' is defined at {macro.location}",))
                    return None
                given[pname] = default
        return given

    def _substitute(self, line: _Line, values: dict[str, str], macro: _Macro | None,
                    frame: Expansion | None = None):
        """``line``'s text with every ``\\NAME`` of ``values`` replaced in its code (comments
        are left alone), and the segments mapping the new columns back. In a macro body
        (``macro``), an unknown ``\\NAME`` is an error (reported; (None, None) returned);
        ``\\+`` is left for the ``.rept`` around it. ``macro`` None: unknown names are left
        (a ``.rept`` body, or a macro defined inside the macro body)."""
        text = line.text
        code_end = _code_end(text)
        parts, segments = [], []
        last, shift = 0, 0
        for m in _ESCAPE.finditer(text, 0, code_end):
            key = m.group(1)
            if key not in values:
                if macro is None or key == "+":
                    continue
                shown = f"\\{key}" if key else "\\"
                legal = ", ".join(f"\\{p}" for p, _ in macro.params)
                where = _Line(text, line.line, line.maps, frame)
                self._error(where, m.start() + 1, m.end() + 1,
                            f"unknown macro parameter '{shown}' in macro '{macro.name}'; "
                            f"parameters: {legal or 'none'} (and \\@, \\())")
                return None, None
            value = values[key]
            parts.append(text[last:m.start()])
            parts.append(value)
            start = m.start() + 1 + shift    # 1-based column of the value in the new text
            segments.append((start, start + len(value), m.start() + 1, m.end() + 1))
            shift += len(value) - (m.end() - m.start())
            last = m.end()
        parts.append(text[last:])
        return "".join(parts), tuple(segments)
