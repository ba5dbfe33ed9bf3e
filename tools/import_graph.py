"""Print src/oomtrace's module sizes, its largest classes and its import cycles (for a redesign's note).

    python tools/import_graph.py                 # every module, the 15 largest classes, the cycles
    python tools/import_graph.py --min-lines 400 --classes 10
    python tools/import_graph.py --src OTHER/src # another checkout's code

Read with Python's ast only, nothing imported or installed. Lines are a file's physical lines
(`wc -l`); a class's lines run from its `class` line (or first decorator) to its last line.
Every `import` of an oomtrace module is an edge, wherever it is: at the top of a module, inside
a function (a deferred import, marked `def` below) or under `if TYPE_CHECKING:` (marked
`typing`). A cycle is a strongly connected component of that graph; for each one the edges
inside it are listed, and the shortest circle through each of its modules (each circle once).
"""

from __future__ import annotations

import argparse
import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "oomtrace"


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    kind: str
    """"top" (runs when the module is imported), "def" (inside a function) or "typing"."""


def modules(src: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not `__init__`)."""
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Each import statement with where it is: "top", "def" or "typing"."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, "typing" if kind == "typing" else "def")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), "typing")
                for statement in child.orelse:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, "top")


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The known module `name` is, or the nearest known package that holds it."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def edges(known: dict[str, Path]) -> list[Edge]:
    found = []
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        for node, kind in _imports(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import name`: a module pkg.name where there is one, else pkg itself.
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            for name in names:
                target = _target(name, known) if name.startswith(PACKAGE) else None
                if target and target != module:
                    found.append(Edge(module, target, node.lineno, kind))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def shortest_circle(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """The shortest path start → ... → start inside one component (breadth first)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for other in sorted(graph.get(node, set()) & within):
            if other == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if other not in previous:
                previous[other] = node
                queue.append(other)
    return []


def _rotated(circle: list[str]) -> tuple[str, ...]:
    """A circle begun at its first module in sorting order, so one circle is printed once."""
    ring = circle[:-1]
    start = ring.index(min(ring))
    ring = ring[start:] + ring[:start]
    return (*ring, ring[0])


def class_sizes(known: dict[str, Path]) -> list[tuple[int, str]]:
    sizes = []
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                sizes.append(((node.end_lineno or node.lineno) - first + 1, f"{module}.{node.name}"))
    return sorted(sizes, key=lambda s: (-s[0], s[1]))


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=SRC, help="the folder that holds oomtrace/")
    parser.add_argument("--min-lines", type=int, default=0, help="list only modules this long")
    parser.add_argument("--classes", type=int, default=15, help="how many of the largest classes")
    args = parser.parse_args()

    known = modules(args.src)
    lines = {module: len(path.read_bytes().splitlines()) for module, path in known.items()}
    print(f"Modules: {len(known)}, {sum(lines.values()):,} lines")
    for module, count in sorted(lines.items(), key=lambda item: (-item[1], item[0])):
        if count >= args.min_lines:
            print(f"  {count:6,}  {_short(module)}")

    print(f"\nLargest classes ({args.classes}):")
    for count, name in class_sizes(known)[: args.classes]:
        print(f"  {count:6,}  {_short(name)}")

    found = edges(known)
    graph: dict[str, set[str]] = {}
    for edge in found:
        graph.setdefault(edge.importer, set()).add(edge.imported)
    components = cycles(graph)
    print(f"\nImport cycles: {len(components)}")
    for component in components:
        members = set(component)
        print(f"  {len(component)} modules: {', '.join(_short(m) for m in component)}")
        inside = sorted(
            {(e.importer, e.imported, e.kind, e.line) for e in found if {e.importer, e.imported} <= members}
        )
        for importer, imported, kind, line in inside:
            print(f"    {_short(importer)}:{line} -> {_short(imported)} ({kind})")
        circles = {_rotated(shortest_circle(graph, module, members)) for module in component}
        for circle in sorted(circles, key=lambda c: (len(c), c)):
            print(f"    circle: {' -> '.join(_short(m) for m in circle)}")


if __name__ == "__main__":
    main()
