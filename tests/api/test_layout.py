"""The shape of the code (issue 27's targets, kept): no import cycle between
sklstruct's modules, no file over 900 lines, no Cython function taking more
than 12 arguments.  Read from the sources, not by importing them."""
import ast
import re
from pathlib import Path

import pytest

import sklstruct

CHECKOUT = Path(__file__).resolve().parents[2]
# the checkout's sources when the tests run from one, else the installed package
# (a wheel has the .py files but not the Cython sources)
PACKAGE = (CHECKOUT / "sklstruct" if (CHECKOUT / "sklstruct" / "__init__.py").is_file()
           else Path(sklstruct.__file__).parent)
SOURCES = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd", ".h"))
CYTHON = [p for p in SOURCES if p.suffix in (".pyx", ".pxd")]


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """Module -> the sklstruct modules it imports anywhere (function-level
    imports included: they hide a cycle, they do not remove it), with the
    subpackages whose ``__init__`` such an import runs."""
    modules = {module_name(p): p for p in SOURCES if p.suffix in (".py", ".pyx")}
    graph = {}
    for name, path in modules.items():
        graph[name] = set()
        if path.suffix != ".py":
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = (package[:len(package) - node.level + 1] if node.level else [])
                target = ".".join(base + ([node.module] if node.module else []))
                targets = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                    graph[name].update(enclosing(target, name, modules))
    return graph


def enclosing(target, importer, modules):
    """The packages that importing ``target`` runs first: its enclosing
    packages below the top one, except those enclosing the importer (already
    running)."""
    parts = target.split(".")
    for i in range(2, len(parts)):
        package = ".".join(parts[:i])
        if package in modules and not importer.startswith(package + "."):
            yield package


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_reader_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    graph = import_graph()
    assert "sklstruct.chain" in graph["sklstruct.learners._base"]    # the reader reads
    assert cycles(graph) == []


def test_no_file_over_900_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in SOURCES
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 900}
    assert not long


_DEF = re.compile(r"^[ \t]*(?:cdef|cpdef|def)\s+(?:[\w\[\]:,. *]+?\s+)?\**(\w+)\s*\(", re.M)


def arguments(source, start):
    """The arguments of the signature whose '(' ends at ``start``, split at
    top-level commas (brackets of memoryview types and defaults nest)."""
    depth, current, parts, i = 1, "", [], start
    while depth:
        ch = source[i]
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 1:
            parts.append(current)
            current = ""
        elif depth:
            current += ch
        i += 1
    parts.append(current)
    return [p.strip() for p in parts if p.strip() and p.strip() not in ("self", "*", "cls")]


def test_the_argument_counter_reads_memoryview_types():
    source = "cdef double f(const double[:, ::1] a, int b=(1, 2), *, c=None) noexcept nogil:"
    match = _DEF.search(source)
    assert match.group(1) == "f" and len(arguments(source, match.end())) == 3


@pytest.mark.skipif(not CYTHON, reason="an installed wheel carries no Cython sources "
                    "(the checkout's run of the suite checks them)")
def test_no_cython_function_with_more_than_12_arguments():
    wide = {}
    for path in CYTHON:
        source = path.read_text(encoding="utf-8")
        for match in _DEF.finditer(source):
            n = len(arguments(source, match.end()))
            if n > 12:
                wide[f"{path.name}:{match.group(1)}"] = n
    assert not wide
