"""The package's layers hold: every import of every esmapper module, walked with ``ast``.

The layer order is the table of docs/architecture.md ("The layers"), read from there. The
rules: (a) the core imports no feature module; (b) a module imports only its own layer or
lower ones, at module level and inside functions (``TYPE_CHECKING`` blocks never run and
are skipped); (c) no function-local esmapper import outside :data:`LOCAL_IMPORTS`, each
with its reason; (d) no import cycle at module level.

Function-local esmapper imports: 48 in 19 modules at 94594bf (before issue 27's layering);
1 after it, allowed with its reason (:data:`LOCAL_IMPORTS`: an optional dependency).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import esmapper
from esmapper import _features
from tools.layers import LAYERS as TABLE
from tools.layers import layer_of, matches

ROOT = Path(esmapper.__file__).parent

#: the core: it calls the feature points and names no feature
CORE = (
    "esmapper.model.*",
    "esmapper.query.*",
    "esmapper._writes",
    "esmapper._settle",
    "esmapper._outcomes",
    "esmapper._cache_hooks",
    "esmapper._fenced",
    "esmapper._bodies",
    "esmapper._pending",
    "esmapper.bulk",
    "esmapper._bulk_encode",
    "esmapper._bulk_threads",
    "esmapper._search",
    "esmapper._searching",
    "esmapper._reading",
    "esmapper._session_reads",
    "esmapper._scan",
    "esmapper._pit",
    "esmapper._by_query",
    "esmapper._patch_actions",
    "esmapper._patching",
    "esmapper.repository",
    "esmapper.session",
    "esmapper._features",
    "esmapper._context",
)

#: the feature modules (with the modules the registered features live in, see _features())
FEATURE_MODULES = (
    "esmapper.custom_fields.*",
    "esmapper.indexes.timeseries",
    "esmapper.indexes._placement",
    "esmapper.indexes.placement",
    "esmapper.indexes.pipelines",
    "esmapper.indexes._pit_target",
    "esmapper.indexes._timeseries_feature",
    "esmapper._soft_deletes",
    "esmapper._builtin_features",
)

#: ``(importer, imported) -> why`` of the function-local esmapper imports that stay
LOCAL_IMPORTS = {
    ("esmapper._cli_server", "esmapper.testing.server"): (
        "noida-db, which the local server runs, is an optional dependency (the test "
        "extra): the CLI loads without it"
    ),
}


@attrs.frozen
class Import:
    """One esmapper import of a module: the module it names (resolved to a module of the
    package), the line, and whether it runs inside a function."""

    importer: str
    imported: str
    line: int
    local: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str) -> str:
    """The module ``name`` denotes (``esmapper.model.Document`` -> ``esmapper.model``)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(module: str) -> Iterator[Import]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(nodes: list[ast.stmt], local: bool) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from walk(node.orelse, local)
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(node.body, True)
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "esmapper":
                        yield Import(module, _resolve(alias.name), node.lineno, local)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package of this module
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                if base.split(".")[0] == "esmapper":
                    for alias in node.names:
                        yield Import(module, _resolve(f"{base}.{alias.name}"), node.lineno, local)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from walk([child], local)
                elif isinstance(child, ast.ExceptHandler | ast.match_case):
                    yield from walk(child.body, local)

    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for found in walk(tree.body, False):
        if found.imported != module:
            yield found


IMPORTS = [i for m in MODULES for i in _imports_of(m)]


_matches = matches
LAYERS = TABLE


def _layer_of(module: str) -> int | None:
    try:
        return layer_of(module)
    except KeyError:
        return None


def _in(module: str, patterns: tuple[str, ...]) -> bool:
    return any(_matches(module, p) for p in patterns)


def _feature_modules() -> tuple[str, ...]:
    """:data:`FEATURE_MODULES` and the module of every registered feature class."""
    registered = tuple(f.__module__ for f in _features.registered())
    return FEATURE_MODULES + registered


def _violations() -> dict[str, set[tuple[str, str, str]]]:
    features = _feature_modules()
    found: dict[str, set[tuple[str, str, str]]] = {"core": set(), "layer": set(), "local": set()}
    for i in IMPORTS:
        if _in(i.importer, CORE) and _in(i.imported, features):
            found["core"].add(("core", i.importer, i.imported))
        low, high = _layer_of(i.importer), _layer_of(i.imported)
        if low is not None and high is not None and high > low:
            found["layer"].add(("layer", i.importer, i.imported))
        if i.local and (i.importer, i.imported) not in LOCAL_IMPORTS:
            found["local"].add(("local", i.importer, i.imported))
    return found


VIOLATIONS = _violations()


def _report(rule: str) -> list[str]:
    new = sorted(VIOLATIONS[rule])
    lines = []
    for _, importer, imported in new:
        where = [i.line for i in IMPORTS if i.importer == importer and i.imported == imported]
        lines.append(f"{importer} (line {min(where)}) imports {imported}")
    return lines


def test_the_walk_sees_the_imports_it_must_judge() -> None:
    # the walk itself: module level, inside functions, not under TYPE_CHECKING
    found = {(i.importer, i.imported, i.local) for i in IMPORTS}
    assert ("esmapper.model.info", "esmapper._features", False) in found
    assert ("esmapper._cli_server", "esmapper.testing.server", True) in found
    # _definition_saves names the Mapper under TYPE_CHECKING only
    assert not any(
        i.imported == "esmapper.mapper"
        for i in IMPORTS
        if i.importer == "esmapper.custom_fields._definition_saves"
    )
    assert len(MODULES) > 150


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if _layer_of(m) is None)
    assert not unplaced, f"place these modules in docs/architecture.md's layer table: {unplaced}"


def test_the_layer_table_names_only_existing_modules() -> None:
    stale = [p for _, ps in LAYERS for p in ps if not any(_matches(m, p) for m in MODULES)]
    assert not stale, f"docs/architecture.md's layer table names no such module: {stale}"


def test_the_core_imports_no_feature() -> None:
    new = _report("core")
    assert not new, "the core names a feature (call a point of esmapper._features):\n" + "\n".join(
        new
    )


def test_every_import_goes_to_its_own_layer_or_a_lower_one() -> None:
    new = _report("layer")
    assert not new, "imports up the layers of docs/architecture.md:\n" + "\n".join(new)


def test_no_function_local_import_dodges_a_cycle() -> None:
    new = _report("local")
    assert not new, (
        "function-local esmapper imports (move the code to the right layer, or list the "
        "import in LOCAL_IMPORTS with its reason):\n" + "\n".join(new)
    )


def test_the_allowed_local_imports_still_exist() -> None:
    present = {(i.importer, i.imported) for i in IMPORTS if i.local}
    assert set(LOCAL_IMPORTS) <= present, set(LOCAL_IMPORTS) - present


#: the members of the ``Services`` (the ``Context``) kept for the mapper and the by-id reads
NOT_FOR_FEATURES = (
    "base_client",
    "before_create",
    "cache_fill",
    "cache_lookup",
    "register",
    "registered",
    "repository_of",
)


def test_no_feature_uses_a_member_of_the_context_kept_for_the_mapper() -> None:
    used = re.compile(rf"\b(?:ctx|context|services)\.(?:{'|'.join(NOT_FOR_FEATURES)})\b")
    found = [
        f"{module}: {hit.group(0)}"
        for module, path in MODULES.items()
        if _in(module, _feature_modules())
        for hit in used.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"features use what esmapper._services keeps from them: {found}"


def test_no_import_cycle_at_module_level() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in IMPORTS:
        if not i.local:
            graph[i.importer].add(i.imported)
    cycles = _cycles(graph)
    assert not cycles, f"import cycles at module level: {cycles}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start, targets in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(targets)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
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


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert _cycles(graph) == expected
