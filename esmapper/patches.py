"""Patch kinds for ``repo.patch`` / ``repo.patch_all``.

- :class:`PartialPatch`: a partial document merged by the server (Update API,
  ``detect_noop``); setting a field to its current value is a no-op.
- :class:`ScriptPatch`: a Painless script with ``params``; a no-op only when the script sets
  ``ctx.op = 'none'``.
- :class:`JsonPatch`: RFC 6902 operations applied client-side to the stored ``_source``
  (paths with or without the leading ``/``), then written back with the version check.
- :class:`ActionPatch`: Python callables that mutate the hydrated document; when every
  callable returns ``False`` nothing is written (``None`` counts as "changed").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = ["ActionPatch", "JsonPatch", "PartialPatch", "Patch", "ScriptPatch"]


@attrs.frozen(slots=True)
class PartialPatch:
    """Merge ``doc`` (attribute names -> JSON values) into the stored document."""

    doc: Mapping[str, Any]
    retry_on_conflict: int | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.doc, Mapping):
            raise TypeError("PartialPatch takes a mapping of field names to values")


@attrs.frozen(slots=True)
class ScriptPatch:
    """Run the Painless ``source`` with ``params`` against each document."""

    source: str
    params: Mapping[str, Any] | None = None
    retry_on_conflict: int | None = None


def _normalize_ops(operations: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    normalized = []
    for position, op in enumerate(operations):
        if not isinstance(op, Mapping) or "op" not in op or "path" not in op:
            raise ValueError(f"JsonPatch operation {position} needs 'op' and 'path': {op!r}")
        fixed = dict(op)
        for key in ("path", "from"):
            value = fixed.get(key)
            if isinstance(value, str) and not value.startswith("/"):
                fixed[key] = "/" + value
        normalized.append(fixed)
    return tuple(normalized)


@attrs.frozen(slots=True)
class JsonPatch:
    """RFC 6902 ``operations`` (``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``)."""

    operations: tuple[dict[str, Any], ...] = attrs.field(converter=_normalize_ops)


@attrs.frozen(slots=True, init=False)
class ActionPatch:
    """Callables ``fn(doc) -> bool | None`` that change the document in place."""

    actions: tuple[Callable[[Any], bool | None], ...]

    def __init__(self, *actions: Callable[[Any], bool | None]) -> None:
        for action in actions:
            if not callable(action):
                raise TypeError(f"ActionPatch takes callables, got {action!r}")
        object.__setattr__(self, "actions", actions)

    def apply(self, doc: Any) -> bool:
        """Run every action; ``True`` unless all of them returned ``False``."""
        if not self.actions:
            return False
        results = [action(doc) for action in self.actions]
        return any(result is not False for result in results)


Patch = PartialPatch | ScriptPatch | JsonPatch | ActionPatch
