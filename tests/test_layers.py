"""The package's layers import downward only (issue 13 item 7): no import cycle between
neuronemu's modules, counting imports inside functions too (they are still dependencies), but
not those only for type annotations (under ``if TYPE_CHECKING:``). And ``import neuronemu``
does not load numba, lark or numpy, so ``--help``, the API's set-up and the pytest plugin in
unrelated suites stay fast (item 8; issue 15)."""

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


def test_the_api_names_load_on_first_use():
    code = "import neuronemu; print(neuronemu.run.__module__, neuronemu.Result.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["neuronemu.api", "Result"]
