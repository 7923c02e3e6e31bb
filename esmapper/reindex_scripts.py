"""Reindex scripts: what ``class Index: reindex_scripts`` accepts, the field operations
:func:`rename_field` and :func:`remove_field`, and how the scripts of a version range become
the one Painless source a ``_reindex`` pass runs.

::

    class Index:
        version = 3
        reindex_scripts = {
            2: em.rename_field("dept", "department"),
            3: [em.remove_field("data.legacy"), "ctx._source.migrated = true"],
        }

A value is a Painless source (a ``str``, sent as written: the way to add any other
transformation), a :class:`FieldOperation`, or a list or tuple of those, run in order. Keys
are the versions the scripts upgrade to (integers >= 2); a reindex from version K to N runs
the scripts of K < v <= N in version order. Nothing is sent here; the rules are checked when
the model class is defined (:class:`~esmapper.errors.IndexConfigurationError`).

Field paths. A dotted path names a field inside objects (``"data.old"``: key ``old`` of the
object ``data``); moves between parents, promotion and demotion work (``"data.name"`` ->
``"display_name"``). Segments that are Painless identifiers (not keywords) are written with
dot notation (``ctx._source.data.old``), others with bracket notation
(``ctx._source['@timestamp']``). A path containing ``'``, ``\\`` or a control character
(e.g. a newline) is refused with ``ValueError``: it could break out of the string literal,
so no field name can inject Painless. A key that itself contains a dot cannot be named, and
arrays of objects are not traversed.

Generated text (the reference library's, exactly): ``rename_field("dept", "department")`` is
two statements, the copy
``if (ctx._source.containsKey('dept')) { ctx._source.department = ctx._source.dept; }``
then the removal ``if (ctx._source.containsKey('dept')) { ctx._source.remove('dept'); }``.
Nested paths get null guards on every parent and the missing parents of the destination
are created (``if (ctx._source.data == null) { ctx._source.data = [:]; }``). A document
without the field is left unchanged. A parent that holds something other than an object
fails the script: the reindex then fails and rolls back (the old index keeps serving).

Composition (:func:`compose`). One unit is sent as it is; several are wrapped as functions
``void f000(def ctx) { ... }`` called in order (``f000(ctx); f001(ctx); ``), so a raw
script's variables and ``return`` stay its own. Field operations declare no variables and
never return, so consecutive ones (in one version or across versions) form one unit: a
reindex that only renames and removes fields sends one plain script (servers without
Painless functions, like the local test server, run it too).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import attrs

from esmapper.errors import IndexConfigurationError

__all__ = [
    "FieldOperation",
    "ReindexScript",
    "ReindexScriptValue",
    "check_reindex_scripts",
    "compose",
    "remove_field",
    "rename_field",
    "script_units",
]

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Painless keywords, and names a ``Map`` answers with a getter (``m.empty`` is
#: ``m.isEmpty()``, ``m.class`` ``m.getClass()``): written with bracket notation.
_RESERVED: Final = frozenset(
    {
        *("if", "else", "while", "do", "for", "in", "continue", "break", "return", "new"),
        *("try", "catch", "throw", "this", "instanceof", "def", "void", "true", "false"),
        *("null", "boolean", "byte", "short", "char", "int", "long", "float", "double"),
        *("empty", "class"),
    }
)
_FORBIDDEN_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})


@attrs.frozen(slots=True)
class FieldOperation:
    """A generated reindex script (:func:`rename_field`, :func:`remove_field`).

    ``statements``: Painless statements that declare no variable and never ``return``;
    ``description``: what it does, for humans. ``str()`` gives the statements joined.
    """

    statements: tuple[str, ...]
    description: str

    def __str__(self) -> str:
        return " ".join(self.statements)


ReindexScript: TypeAlias = str | FieldOperation
ReindexScriptValue: TypeAlias = ReindexScript | Sequence[ReindexScript]


def _segments(path: Any, what: str) -> tuple[str, ...]:
    if not isinstance(path, str):
        raise ValueError(f"{what} must be a field path (str), not {type(path).__name__}")
    for char in path:
        if char in "'\\" or unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise ValueError(
                f"{what} {path!r} contains {char!r}: quotes, backslashes and control "
                "characters cannot appear in a reindex script's field path"
            )
    segments = tuple(path.split("."))
    if not all(segment.strip() for segment in segments):
        raise ValueError(f"{what} {path!r} is not a field path (an empty name between dots)")
    return segments


def _access(segments: Sequence[str]) -> str:
    parts = ["ctx._source"]
    for segment in segments:
        if _IDENTIFIER.fullmatch(segment) and segment not in _RESERVED:
            parts.append(f".{segment}")
        else:
            parts.append(f"['{segment}']")
    return "".join(parts)


def _present(segments: Sequence[str]) -> str:
    """The condition "the field at ``segments`` exists" (null guards on every parent)."""
    parents = segments[:-1]
    checks = [f"{_access(parents[:depth])} != null" for depth in range(1, len(parents) + 1)]
    checks.append(f"{_access(parents)}.containsKey('{segments[-1]}')")
    return " && ".join(checks)


def rename_field(old: str, new: str, *, remove_original: bool = True) -> FieldOperation:
    """Copy the field at path ``old`` to path ``new`` in every document that has it, then
    remove ``old`` (unless ``remove_original=False``). Documents without ``old`` are left
    unchanged; an existing ``new`` is overwritten; missing parents of ``new`` are created.

    Raises ``ValueError`` for an invalid path (see the module docstring), equal paths, or
    one path inside the other. Sends nothing.
    """
    source, target = _segments(old, "rename_field: old"), _segments(new, "rename_field: new")
    shorter = min(len(source), len(target))
    if source[:shorter] == target[:shorter]:
        raise ValueError(
            f"rename_field({old!r}, {new!r}): "
            + ("the paths are equal" if source == target else "one path is inside the other")
        )
    create = "".join(
        f"if ({_access(target[:depth])} == null) {{ {_access(target[:depth])} = [:]; }} "
        for depth in range(1, len(target))
    )
    copy = f"if ({_present(source)}) {{ {create}{_access(target)} = {_access(source)}; }}"
    statements = (copy, _remove(source)) if remove_original else (copy,)
    verb = "rename" if remove_original else "copy"
    return FieldOperation(statements, f"{verb} {old} -> {new}")


def _remove(segments: Sequence[str]) -> str:
    parent = _access(segments[:-1])
    return f"if ({_present(segments)}) {{ {parent}.remove('{segments[-1]}'); }}"


def remove_field(path: str) -> FieldOperation:
    """Remove the field at ``path`` from every document that has it. Raises ``ValueError``
    for an invalid path (see the module docstring). Sends nothing."""
    return FieldOperation((_remove(_segments(path, "remove_field: path")),), f"remove {path}")


def _items(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str | FieldOperation):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)


def check_reindex_scripts(scripts: Any, where: str) -> None:
    """Raise :class:`IndexConfigurationError` unless ``scripts`` is a valid
    ``reindex_scripts`` mapping (see the module docstring); ``where`` names it."""
    if not isinstance(scripts, Mapping):
        raise IndexConfigurationError(
            f"{where} must map versions to scripts, not {type(scripts).__name__}"
        )
    for version, value in scripts.items():
        if not isinstance(version, int) or isinstance(version, bool) or version < 2:
            raise IndexConfigurationError(
                f"{where}: key {version!r} is not a version a reindex upgrades to (an integer >= 2)"
            )
        items = _items(value)
        if not items:
            raise IndexConfigurationError(f"{where}[{version}] is an empty list")
        for item in items:
            if isinstance(item, FieldOperation):
                continue
            if not isinstance(item, str) or not item.strip():
                raise IndexConfigurationError(
                    f"{where}[{version}]: {item!r} is neither a Painless source (a non-empty "
                    "str) nor a field operation (em.rename_field, em.remove_field)"
                )


def script_units(scripts: Mapping[int, Any], current: int, target: int) -> list[str]:
    """The units a reindex from ``current`` to ``target`` runs, in order: each raw script,
    and each run of consecutive field operations joined into one (module docstring)."""
    units: list[str] = []
    operations: list[str] = []
    for version in sorted(v for v in scripts if current < v <= target):
        for item in _items(scripts[version]):
            if isinstance(item, FieldOperation):
                operations.extend(item.statements)
                continue
            if operations:
                units.append(" ".join(operations))
                operations = []
            units.append(str(item))
    if operations:
        units.append(" ".join(operations))
    return units


def compose(scripts: Mapping[int, Any], current: int, target: int) -> str | None:
    """The Painless source for a reindex from version ``current`` to ``target``
    (re-exported as ``esmapper.indexes.compose_reindex_script``).

    The units (:func:`script_units`) of the versions ``current < v <= target`` in version
    order: none gives ``None``, one is returned as is, several are wrapped as
    ``void f000(def ctx) { ... }`` ... and called in order: ``f000(ctx); f001(ctx); ``.
    """
    units = script_units(scripts, current, target)
    if not units:
        return None
    if len(units) == 1:
        return units[0]
    functions = "".join(f"void f{i:03d}(def ctx) {{ {s} }}\n" for i, s in enumerate(units))
    return functions + "".join(f"f{i:03d}(ctx); " for i in range(len(units)))
