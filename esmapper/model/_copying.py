"""Compiled copies of hydrated documents: what a repeated cache hit hands out.

Hydrating a cached hit parses its dates and builds its embedded objects again on every
read. A document already hydrated from that very hit can instead be copied: a new object
whose slots are assigned the same values, with every mutable value (a list, an embedded
object, a dict) copied deep and the immutable ones (strings, numbers, datetimes, enum
members) shared. The copy equals a fresh hydration and shares nothing a caller can
mutate with any other document.

:func:`plan_of` compiles (once per model, on first use) a :class:`CopyPlan`: the copy
function, generated like the codec of :mod:`esmapper.model.codec` (slots read and
assigned through their raw descriptors, so copying neither marks nor watches anything),
and the two checks that say when a copy is the same as a hydration:

- :meth:`CopyPlan.complete`: the ``_source`` holds a key for every field whose missing
  value would be made per document (a factory default, or a mutable default value);
  otherwise hydration gives such a field a value of its own that a copy could not;
- :meth:`CopyPlan.clean`: nothing was kept as stored by the lenient path
  (:mod:`esmapper.model.lenient`), which remembers kept values by identity and reports
  them on every load.

A model whose attributes are not all plain slots gets no plan (``None``): its documents
are always hydrated. :class:`HydratedCopies` is what a document cache keeps of its hits
with these plans.
"""

from __future__ import annotations

import copy
import datetime as _dt
import enum
import inspect
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from esmapper.model._tracking import TrackedSlot
from esmapper.model.codec import json_copy, list_copy_expr
from esmapper.model.state import DocState

__all__ = ["CopyPlan", "HydratedCopies", "plan_of"]

#: Default values a hydration may share between documents (nothing in them is mutable).
_IMMUTABLE = (str, int, float, bool, type(None), _dt.datetime, _dt.date, enum.Enum)

_plans: dict[type, CopyPlan | None] = {}
_plans_lock = threading.RLock()  # a plan compiles those of its embedded models


@attrs.frozen(slots=True, eq=False)
class CopyPlan:
    """How to copy the hydrated objects of one model (see the module docstring).

    ``copy(obj)`` is the generated field-by-field copy (its ``_esm_state`` is ``None``);
    ``copy_document(doc)`` the same with a state of its own for a stored document: the
    same original ``_source`` (never mutated), index and version, not in any session.
    ``required`` names the fields whose key a ``_source`` must hold for a copy to equal a
    hydration; ``inner`` lists ``(name, raw getter, plan, many)`` of the embedded fields.
    """

    cls: type
    copy: Callable[[Any], Any]
    copy_document: Callable[[Any], Any]
    required: tuple[str, ...]
    inner: tuple[tuple[str, Callable[[Any], Any], CopyPlan, bool], ...]

    def complete(self, source: Mapping[str, Any]) -> bool:
        """Whether hydrating ``source`` used no per-document default, embedded objects
        included."""
        for name in self.required:
            if name not in source:
                return False
        for name, _get, plan, many in self.inner:
            value = source.get(name)
            if value is None:
                continue
            items = value if many and isinstance(value, list) else [value]
            for item in items:
                if item is not None and not (isinstance(item, Mapping) and plan.complete(item)):
                    return False
        return True

    def clean(self, obj: Any) -> bool:
        """Whether ``obj`` (an instance of the model) and its embedded objects hold no
        value kept as stored by the lenient path."""
        if type(obj) is not self.cls or getattr(obj, "_esm_raw", None) is not None:
            return False
        for _name, get, plan, many in self.inner:
            value = get(obj)
            if value is None:
                continue
            for item in value if many else (value,):
                if item is not None and not plan.clean(item):
                    return False
        return True


def plan_of(info: Any) -> CopyPlan | None:
    """The copy plan of the model of ``info`` (a ``ModelInfo``), compiled on first use;
    ``None`` when its documents cannot be copied this way."""
    cls = info.cls
    try:
        return _plans[cls]
    except KeyError:
        pass
    with _plans_lock:
        if cls not in _plans:
            _plans[cls] = _compile(info)
        return _plans[cls]


def _raw_slot(cls: type, name: str) -> Any:
    """The slot descriptor holding attribute ``name`` (under its TrackedSlot), or ``None``."""
    found = inspect.getattr_static(cls, name, None)
    if isinstance(found, TrackedSlot):
        found = found.slot
    return found if isinstance(found, types.MemberDescriptorType) else None


def _shared_default(attribute: attrs.Attribute) -> bool:  # type: ignore[type-arg]
    """Whether a missing key gives every hydration the same immutable value."""
    default = attribute.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return False
    return default is attrs.NOTHING or isinstance(default, _IMMUTABLE)


def _compile(info: Any) -> CopyPlan | None:
    cls = info.cls
    attributes = {a.name: a for a in attrs.fields(cls)}
    state_slot = _raw_slot(cls, "_esm_state")
    if state_slot is None:
        return None
    ns: dict[str, Any] = {
        "_cls": cls,
        "_new": object.__new__,
        "_put__esm_state": state_slot.__set__,
        "_get__esm_state": state_slot.__get__,
        "_State": DocState,
        "_json_copy": json_copy,
        "_deepcopy": copy.deepcopy,
    }
    lines: list[str] = []
    required: list[str] = []
    inner: list[tuple[str, Callable[[Any], Any], CopyPlan, bool]] = []
    for spec in info.fields:
        name = spec.name
        slot = _raw_slot(cls, name)
        attribute = attributes.get(name)
        if slot is None or attribute is None:
            return None
        ns[f"_get_{name}"] = slot.__get__
        ns[f"_put_{name}"] = slot.__set__
        # a plain slot is read as an attribute (fast); a tracked one through its raw slot
        # (reading it as an attribute would watch the kept document)
        tracked = inspect.getattr_static(cls, name, None) is not slot
        special = info.is_document and (
            name == "id" or (name == "version" and info.versioned)
        )  # from the hit's metadata, never a default
        if not special and not _shared_default(attribute):
            required.append(name)
        value = f"_get_{name}(p)" if tracked else f"p.{name}"
        if spec.kind == "inner":
            plan = plan_of(spec.inner.__esmapper__)
            if plan is None:
                return None
            inner.append((name, slot.__get__, plan, spec.many))
            ns[f"_copy_{name}"] = plan.copy
            ns[f"_cls_{name}"] = spec.inner
            one = f"(_copy_{name}({{0}}) if type({{0}}) is _cls_{name} else _deepcopy({{0}}))"
            lines.append(f"    _v = {value}")
            if spec.many:
                item = one.format("_x")
                lines.append(
                    f"    _put_{name}(self, None if _v is None else "
                    f"[None if _x is None else {item} for _x in _v])"
                )
            else:
                lines.append(f"    _put_{name}(self, None if _v is None else {one.format('_v')})")
        elif spec.kind == "any":
            lines.append(f"    _put_{name}(self, _json_copy({value}))")
        elif spec.many and spec.kind in ("datetime", "enum"):  # items made by hydration
            lines.append(f"    _v = {value}")
            lines.append(f"    _put_{name}(self, None if _v is None else list(_v))")
        elif spec.many:  # scalars as stored: maybe an array of arrays
            lines.append(f"    _v = {value}")
            lines.append(
                f"    _put_{name}(self, None if _v is None else {list_copy_expr('_v', ns)})"
            )
        else:
            lines.append(f"    _put_{name}(self, {value})")
    body = ["self = _new(_cls)", *(line[4:] for line in lines)]
    state = (
        "s = _get__esm_state(p)",
        "_put__esm_state(self, None if s is None else "
        "_State(s.original_or_bytes, s.index, None, s.partial, s.version, s.condition))",
    )
    source = "\n".join(
        [
            "def copy(p):",
            *(f"    {line}" for line in body),
            "    _put__esm_state(self, None)",
            "    return self",
            "",
            "def copy_document(p):",
            *(f"    {line}" for line in body),
            *(f"    {line}" for line in state),
            "    return self",
            "",
        ]
    )
    filename = f"<esmapper copy {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), ns)  # generated from the field specs
    return CopyPlan(cls, ns["copy"], ns["copy_document"], tuple(required), tuple(inner))


class HydratedCopies:
    """The documents hydrated from cached hits, kept to be copied on the next hit.

    An in-process cache client (``InMemoryCache``, the L1 of a ``HybridCache``) hands out
    the very object it stores, read after read. The first read of such a hit hydrates it
    as any read does; when the document can be copied (:class:`CopyPlan`: every value
    came from the hit, none was kept as stored), a copy of it is kept here under the hit's
    identity. A later read handed the same object gets a new copy of that document: the
    same values, its own lists, embedded objects and dicts, its own state, without parsing
    dates again. A hit a hybrid cache reads from Redis is kept in its L1: the next read
    gets a copy. A document cache over a client that decodes every hit anew (a
    ``RedisCache`` on its own, a custom client) keeps no copies.

    The kept copy is never handed out, and an entry holds its hit, so a reused ``id()``
    can never match: an entry is only used for the object it was made from, which the
    cache client no longer hands out once the key was written, removed or expired.
    At most ``maxsize`` entries are kept (the oldest go first).
    """

    def __init__(self, maxsize: int = 10_000) -> None:
        self.maxsize = maxsize
        #: id(hit) -> (hit, the kept document, its copy function, its model)
        self._kept: dict[int, tuple[dict[str, Any], Any, Callable[[Any], Any], type]] = {}
        self._lock = threading.Lock()

    def document(
        self, info: Any, hit: dict[str, Any], hydrate: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """A document of the cached ``hit`` of model ``info``: a copy of the one kept for
        this very object, else ``hydrate(hit)`` (kept for the next read when copyable)."""
        entry = self._kept.get(id(hit))
        if entry is not None and entry[0] is hit and entry[3] is info.cls:
            return entry[2](entry[1])
        document = hydrate(hit)
        plan = plan_of(info)
        if plan is None or not plan.clean(document) or not plan.complete(hit.get("_source") or {}):
            return document
        kept = plan.copy_document(document)  # before the caller can change the document
        with self._lock:
            self._kept[id(hit)] = (hit, kept, plan.copy_document, plan.cls)
            if len(self._kept) > self.maxsize:
                del self._kept[next(iter(self._kept))]
        return document

    def clear(self) -> None:
        """Forget every kept document."""
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        """How many documents are kept."""
        return len(self._kept)
