"""The reindex work item: what ``configure_indexes(begin_reindexing_outdated=True)``
enqueues and a worker (:mod:`esmapper.jobs._reindex_items`) runs.

A :class:`ReindexWorkItem` names one reindex as it was seen by the process that enqueued
it: the index the alias pointed at (``old_index``), the index of the model's version
(``new_index``; for a time-series model the partition patterns ``<alias>-vK-*`` and
``<alias>-vN-*``), the ``alias``, the composed reindex ``script`` of the versions in
between, ``delete_old``, the model's ``timestamp_field`` (its updated date, which the
catch-up passes select on) and the throttle (``batch_size``, ``requests_per_second``).
The worker checks the item against its own model before running (same target, same
script, same timestamp field): a worker of another release refuses it, see
:func:`~esmapper.jobs.handle_reindex_work_item`.

Its :attr:`~ReindexWorkItem.key` (``reindex:<alias>:<new_index>``: the alias and the
target version) is what a queue deduplicates on: one item per outdated alias and target
while it is pending or running.

The reference item also carries a ``StartUtc`` for the second pass; esmapper's reindex
takes the catch-up start itself, when its copy begins (an enqueuer's start, taken before
the item waited in a queue, could only be later than the copy's and skip writes), so the
item has none.

Every field is checked when the item is made (``TypeError``/``ValueError``), also when it
is read back from a queue (:meth:`ReindexWorkItem.from_dict`), so a bad throttle is
refused before anything is sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["ReindexWorkItem"]

_FIELDS: Final = (
    "old_index",
    "new_index",
    "alias",
    "script",
    "delete_old",
    "timestamp_field",
    "batch_size",
    "requests_per_second",
)


def _name(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"ReindexWorkItem.{attribute.name} must be a non-empty str, not {value!r}")


def _optional_str(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"ReindexWorkItem.{attribute.name} must be a str or None, not {value!r}")


def _flag(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"ReindexWorkItem.{attribute.name} must be True or False, not {value!r}")


def _batch(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"ReindexWorkItem.batch_size must be an int, not {value!r}")
    if value <= 0:
        raise ValueError(f"ReindexWorkItem.batch_size must be more than 0, not {value}")


def _rate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"ReindexWorkItem.requests_per_second must be a number, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"ReindexWorkItem.requests_per_second must be a finite number more than 0, not {value}"
        )


@attrs.frozen(kw_only=True)
class ReindexWorkItem:
    """One reindex to run (see the module docstring); frozen, checked when made."""

    old_index: str = attrs.field(validator=_name)
    new_index: str = attrs.field(validator=_name)
    alias: str = attrs.field(validator=_name)
    script: str | None = attrs.field(default=None, validator=_optional_str)
    delete_old: bool = attrs.field(default=True, validator=_flag)
    timestamp_field: str | None = attrs.field(default=None, validator=_optional_str)
    batch_size: int | None = attrs.field(default=None, validator=_batch)
    requests_per_second: float | None = attrs.field(default=None, validator=_rate)

    @property
    def key(self) -> str:
        """``reindex:<alias>:<new_index>``: one item per alias and target version."""
        return f"reindex:{self.alias}:{self.new_index}"

    def to_dict(self) -> dict[str, Any]:
        """The item as JSON-ready data (what a queue stores)."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReindexWorkItem:
        """The item :meth:`to_dict` gave; ``ValueError`` for unknown or missing fields,
        the field checks as when made."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a ReindexWorkItem is read from a mapping, not {data!r}")
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise ValueError(f"unknown ReindexWorkItem fields: {', '.join(unknown)}")
        missing = [name for name in ("old_index", "new_index", "alias") if name not in data]
        if missing:
            raise ValueError(f"ReindexWorkItem fields missing: {', '.join(missing)}")
        return cls(**dict(data))
