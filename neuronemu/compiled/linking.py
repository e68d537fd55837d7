"""How a compiled function's callers reach it: by a symbol, not by a copy of its code.

Why: numba links a jitted function into each function that calls it as a copy of its optimised
LLVM module, then optimises and generates machine code for the caller's module with every copy
in it. A helper at depth d of a call tree is therefore optimised and compiled d + 1 times, and
one that several instruction kernels call (``store_f32``, ``binary_rows``) once more for each.
In flash_attention_causal's first run LLVM handled 242,000 instructions for 62,000 of the
kernels' own, and its finalisation (linking, optimisation, machine code) was 27 of the 64 s.

What instead: a function whose optimised module is large (``MIN_INSTRUCTIONS``) is offered to
its callers as a one-line forwarder (``@<mangled name>`` calling ``@neuronemu$<...>``, inlined
into the caller) and a declaration. The caller's machine code calls the function's own code
through that symbol, which this process registers (``llvm.add_symbol``) when it compiles the
function or loads it from the cache. The symbol is named after the function's module, name
and argument types (``alias``), not after numba's mangled name, whose serial number changes
from one compile to the next: a caller cached by one process still finds the function
recompiled by another. Small functions are still copied: LLVM inlines them where it pays, and
their copies cost little.

A caller loaded from the cache must find the symbol before its machine code is linked, or LLVM
aborts the process: numba runs a cached function's ``reload_init`` callables before it loads
the code. When a caller is compiled, ``record_needs`` reads the symbols its finished code
still calls (declarations named ``neuronemu$...``: the calls through small copied helpers
included) and adds a ``Needed`` for each, which compiles (or loads) that function for its
argument types and registers the symbol. What the code calls is read from the code itself,
not inherited from the libraries it linked: a library loaded from the cache keeps no record of
what its own code calls.
"""

from __future__ import annotations

import hashlib
import importlib

import llvmlite.binding as llvm

PREFIX = "neuronemu$"
MIN_INSTRUCTIONS = 400
"""Functions whose optimised code (the function and what it copied in, not its two wrappers)
has at least this many LLVM instructions are called, not copied."""


def alias(module: str, qualname: str, args: tuple) -> str:
    """The symbol a function's callers call it by: the same in every process."""
    key = repr((module, qualname, tuple(str(a) for a in args)))
    return f"{PREFIX}{module}.{qualname}${hashlib.sha256(key.encode()).hexdigest()[:16]}"


class Needed:
    """A reload step numba runs before loading a cached caller: compile or load the function
    at ``module.qualname`` for ``args`` and register its symbol. Picklable and hashable (numba
    keeps these in a set and stores them with the caller's cached code)."""

    __slots__ = ("args", "module", "qualname")

    def __init__(self, module: str, qualname: str, args: tuple) -> None:
        self.module, self.qualname, self.args = module, qualname, tuple(args)

    def __reduce__(self):
        return Needed, (self.module, self.qualname, self.args)

    def __eq__(self, other) -> bool:
        return isinstance(other, Needed) and (self.module, self.qualname, self.args) == (
            other.module, other.qualname, other.args)

    def __hash__(self) -> int:
        return hash((self.module, self.qualname, self.args))

    def __call__(self) -> None:
        dispatcher = _dispatcher(self.module, self.qualname)
        dispatcher.compile(self.args)
        # (share registered it if it compiled or loaded it now; not if it was here already)
        _publish(dispatcher.overloads[self.args], self)


_NEEDED: dict[str, Needed] = {}
"""Each symbol this process registered -> how a later process gets it."""


def record_needs(library, reload_init: list) -> None:
    """Add to ``reload_init`` (the steps numba runs before loading a compile result's cached
    code) a ``Needed`` for every registered symbol ``library``'s finished code calls."""
    for fn in library._final_module.functions:
        if fn.is_declaration and fn.name.startswith(PREFIX):
            step = _NEEDED.get(fn.name)
            if step is None:
                raise RuntimeError(f"neuronemu internal error: compiled code calls {fn.name}, "
                                   "which this process never registered")
            if step not in reload_init:
                reload_init.append(step)


def _dispatcher(module: str, qualname: str):
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def share(dispatcher, cres) -> None:
    """Called for every overload a neuronemu dispatcher adds (compiled or loaded from the
    cache), before numba caches it: record what its code calls by symbol, and offer a large
    function to its callers by symbol."""
    record_needs(cres.library, cres.reload_init)
    options = dispatcher.targetoptions
    if options.get("inline", "never") != "never" or cres.objectmode:
        return   # inlined at numba's IR level: never linked
    fn = dispatcher.py_func
    module, qualname = fn.__module__, fn.__qualname__
    try:
        if _dispatcher(module, qualname) is not dispatcher:
            return   # not reachable by name in a later process: keep copying it
    except (ImportError, AttributeError):
        return
    library, args = cres.library, tuple(cres.signature.args)
    name = alias(module, qualname, args)
    symbols = _symbols(cres.fndesc, name)
    shared = library._shared_module
    if shared is not None and any(f.name == name for f in shared.functions):
        pass    # loaded from the cache as forwarders: register the symbols in this process
    elif shared is None and _at_least(library._final_module, MIN_INSTRUCTIONS,
                                      {cres.fndesc.llvm_cpython_wrapper_name,
                                       cres.fndesc.llvm_cfunc_wrapper_name}):
        forwarders = _forwarders(library._final_module, symbols)
        if forwarders is None:
            return
        library._shared_module = forwarders
    else:
        return
    _publish(cres, Needed(module, qualname, args))


def _publish(cres, step: Needed) -> None:
    """Register the function's symbols in this process, and how a later process gets them."""
    symbols = _symbols(cres.fndesc, alias(step.module, step.qualname, step.args))
    _register(cres.library, symbols)
    for symbol in symbols.values():
        _NEEDED[symbol] = step


def _symbols(fndesc, name: str) -> dict[str, str]:
    """numba's names of a compiled function's entry points -> the symbols they are called by:
    the function itself and its two wrappers (numba looks these up by name in a cached
    library's linking module, so it must define all three)."""
    return {fndesc.mangled_name: name, fndesc.llvm_cpython_wrapper_name: name + ".cpython",
            fndesc.llvm_cfunc_wrapper_name: name + ".cfunc"}


def _register(library, symbols: dict[str, str]) -> None:
    for entry, name in symbols.items():
        address = library.get_pointer_to_function(entry)
        if address:
            llvm.add_symbol(name, address)


def _at_least(module, count: int, wrappers: set[str]) -> bool:
    """Whether ``module`` defines at least ``count`` LLVM instructions (counted until then)
    besides the function's wrappers, which callers do not keep."""
    for fn in module.functions:
        if fn.is_declaration or fn.name in wrappers:
            continue
        for block in fn.blocks:
            for _ in block.instructions:
                count -= 1
                if count <= 0:
                    return True
    return False


def _forwarders(module, symbols: dict[str, str]):
    """A module defining each of the function's external entry points as an always-inlined
    call of its symbol, with the same type: what callers link instead of the function's code.
    None if the module exports anything else."""
    lines = []
    for fn in module.functions:
        if fn.is_declaration or fn.linkage != llvm.Linkage.external:
            continue
        if fn.name not in symbols:
            return None
        ftype = str(fn.global_value_type)   # "i32 (ptr, ptr, i64)"
        ret, params = ftype.split(" (", 1)
        types = _split_types(params[:-1])
        formal = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
        call = f'tail call {ret} @"{symbols[fn.name]}"({formal})'
        body = f"  {call}\n  ret void" if ret == "void" else f"  %r = {call}\n  ret {ret} %r"
        lines += [f'declare {ret} @"{symbols[fn.name]}"({", ".join(types)})',
                  f'define linkonce_odr {ret} @"{fn.name}"({formal}) alwaysinline {{\n{body}\n}}']
    forwarders = llvm.parse_assembly("\n".join(lines))
    forwarders.triple = module.triple
    forwarders.data_layout = module.data_layout
    forwarders.verify()
    return forwarders


def _split_types(text: str) -> list[str]:
    """The parameter types of an LLVM function type's list, split at top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{[<(":
            depth += 1
        elif ch in "}]>)":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text.strip():
        out.append(text[start:].strip())
    return out
