"""The package's layers import downward only (issue 13 item 7): no import cycle between
neuronemu's modules, counting imports inside functions too (they are still dependencies), but
not those only for type annotations (under ``if TYPE_CHECKING:``). Above modules, the packages
keep one order with no back edge (issue 27; import-linter's "layers" contract): ``LAYERS``
below, which docs/engine.md draws. And ``import neuronemu`` does not load numba, lark or numpy,
so ``--help``, the API's set-up and the pytest plugin in unrelated suites stay fast (item 8;
issue 15)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "neuronemu"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, known: set[str]) -> set[str]:
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            return   # annotations only
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                "neuronemu"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("neuronemu"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def dependency_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    graph = {}
    for name, path in paths.items():
        deps = _imports(ast.parse(path.read_text()), known) & known
        # importing a package's module imports the package's __init__ too; ours are empty of
        # imports, so a dependency on the package itself adds nothing
        graph[name] = {d for d in deps if d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root, children_of_root in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(children_of_root)))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


# The package order, lowest first: a unit (a subpackage of neuronemu, or a module at its root;
# "neuronemu" is the root package's lazy names) imports only units of lower layers, and the units
# of one layer do not import each other. Where this differs from the order the architecture
# review proposed (source/errors < isa < machine < numerics < ...), the code said otherwise:
# - the numba tooling (jit decorator, cache, compile reporter) is its own package, `compiled`,
#   below `numerics`, because numerics' kernels are jitted while machine/memory.py decodes and
#   rounds tiles with numerics' casts: compiled < numerics < machine;
# - `program` (the assembler's product) sits on machine (its compressed-tensor sizes), and the
#   assembler imports neither the engine nor multichip, so `asm` is a sibling of semantics and
#   timing; `encoding` reads `asm.expr`'s register count, so it sits above asm;
# - the MPI partitions gather ranks' Results, so `results` (a finished core -> Result) sits
#   below `multichip`, beside `exec` (it reads a Core's arrays, never imports exec).
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    "source notices",            # text, locations, user notices: import nothing
    "errors",
    "isa kernel_text",           # the tables (instructions, dtypes, topologies, codes); decoding
                                 # kernel files
    "programs",                  # the bundled kernels, the kernel lookup, a kernel's own topology
    "compiled",                  # numba tooling: jit, content-keyed cache, compile reporter
    "numerics",                  # value <-> bits
    "machine",                   # lowered-array layout, kernel ABI, tile memory, compression
    "program hostmem",           # the assembled program; host memory a run needs
    "semantics timing asm",      # instruction kernels, timing models, the assembler
    "exec encoding results",     # interpreter, kernels, single-core run; .neo; Result
    "multichip",
    "api plot files",            # files: .npy reading, all-or-none writing (sizes from hostmem)
    "report",                    # the --json documents and text lines (saved dtypes from files)
    "runs",                      # one `neuronemu run`: assemble, run, save, document
    "neuronemu",
    "nki testing grade warm isa_reference",
    "debug highlight",           # the step debugger and DAP server; the highlighters
    "cli_errors",                # click plumbing: errors shown once, --json usage errors
    "cli pytest_plugin",
    "__main__",
))


def unit(module: str) -> str:
    """The layer unit of a module: its subpackage of neuronemu, or the root module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]], layers) -> list[str]:
    """Every import that is not strictly downward in ``layers`` (and every unit without a
    layer), as ``importer -> imported`` module pairs."""
    rank = {u: i for i, layer in enumerate(layers) for u in layer}
    found = []
    for module, deps in sorted(graph.items()):
        if unit(module) not in rank:
            found.append(f"{module}: package {unit(module)!r} has no layer in LAYERS")
            continue
        for dep in sorted(deps):
            a, b = unit(module), unit(dep)
            if a != b and rank.get(b, len(layers)) >= rank[a]:
                found.append(f"{module} -> {dep}")
    return found


def test_packages_import_only_lower_layers():
    assert layer_violations(dependency_graph(), LAYERS) == []


def test_the_layer_check_finds_an_upward_and_a_sideways_import():
    graph = {"neuronemu.isa.table": {"neuronemu.machine.layout"},
             "neuronemu.machine.layout": set(),
             "neuronemu.semantics.alu": {"neuronemu.timing.model"},
             "neuronemu.timing.model": set(),
             "neuronemu.newpkg.x": set()}
    assert layer_violations(graph, LAYERS) == [
        "neuronemu.isa.table -> neuronemu.machine.layout",
        "neuronemu.newpkg.x: package 'newpkg' has no layer in LAYERS",
        "neuronemu.semantics.alu -> neuronemu.timing.model"]


def test_no_import_cycles():
    assert cycles(dependency_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_import_neuronemu_and_its_pytest_plugin_load_neither_numpy_nor_numba_nor_lark():
    """The pytest plugin loads in every test suite of an environment with neuronemu installed:
    it must cost them nothing (the API, numpy and the engine load on first use)."""
    code = ("import sys, neuronemu, neuronemu.pytest_plugin; "
            "print([m for m in ('numpy', 'numba', 'lark', 'neuronemu.api') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_assembling_and_its_errors_never_load_lark():
    """lark is the tests' reference parser of the grammar, not a run-time one: assembling a
    kernel, a kernel with a syntax error and one with a .rept block loads none of it."""
    code = ("import sys, neuronemu\n"
            "from neuronemu.errors import AsmError\n"
            "from neuronemu.programs import bundled_programs\n"
            "neuronemu.assemble_file(bundled_programs()['examples/vector_add'])\n"
            "neuronemu.assemble('.sbuf t float32[128, 8]\\n.rept 2\\n"
            "    vector.memset t, value=1\\n.endr\\n')\n"
            "try:\n    neuronemu.assemble('vector.memset t t\\nx = ')\n"
            "except AsmError as e:\n    assert 'syntax error' in str(e)\n"
            "print('lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_the_api_names_load_on_first_use():
    code = "import neuronemu; print(neuronemu.run.__module__, neuronemu.Result.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["neuronemu.api", "Result"]


def test_the_cache_key_covers_every_package_with_compiled_code():
    """A compiled module's cache folder is named by a hash of the compiled-package modules it
    imports (neuronemu/compiled/sources.py): a jitted module in a package outside that list
    would have no folder of its own, and its imports would go unhashed (docs/engine.md, "Where
    it is cached")."""
    from neuronemu.compiled.sources import COMPILED_PACKAGES as _COMPILED_PACKAGES

    jitted = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "numba" or n.startswith(("numba.", "neuronemu.compiled.jit"))
                   for n in names):
                jitted.add(unit(_module_name(path)))
    assert jitted and jitted <= set(_COMPILED_PACKAGES), jitted - set(_COMPILED_PACKAGES)


def test_a_single_core_run_imports_no_multichip_module():
    """neuronemu.run of a kernel without cc.* instructions goes api -> exec.session ->
    results: the multi-chip driver, network and partitions stay unloaded (issue 27)."""
    kernel = PACKAGE.parent / "programs" / "examples" / "vector_add.s"
    code = (f"import sys, neuronemu; r = neuronemu.run(neuronemu.assemble_file({str(kernel)!r})); "
            "assert r.outputs['c'].shape == (128, 512); "
            "print(sorted(m for m in sys.modules if m.startswith('neuronemu.multichip')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    assert out[-1] == "[]"
