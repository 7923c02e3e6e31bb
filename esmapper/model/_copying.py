"""Compiled copies of hydrated documents: what a repeated cache hit hands out.

Hydrating a cached hit parses its dates and builds its embedded objects again on every
read. A document already hydrated from that very hit can instead be copied: a new object
whose slots are assigned the same values, with every mutable value (a list, an embedded
object, a dict) copied deep and the immutable ones (strings, numbers, datetimes, enum
members) shared. The copy equals a fresh hydration and shares nothing a caller can
mutate with any other document.

:func:`plan_of` compiles (once per model, on first use) a :class:`CopyPlan`: a snapshot
function and the function making a document of a snapshot, generated like the codec of
:mod:`esmapper.model.codec` (slots read and assigned through their raw descriptors, so
copying neither marks nor watches anything; the kept snapshot already says which lists
are flat, so a copy does not test their items again), and the two checks that say when a
copy is the same as a hydration:

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

from esmapper.model._raw import raw_class
from esmapper.model._tracking import TrackedSlot
from esmapper.model.codec import _all_atomic, _copy_items, json_copy
from esmapper.model.state import loaded_state_code

__all__ = ["CopyPlan", "HydratedCopies", "plan_of"]

#: Default values a hydration may share between documents (nothing in them is mutable).
_IMMUTABLE = (str, int, float, bool, type(None), _dt.datetime, _dt.date, enum.Enum)

_plans: dict[type, CopyPlan | None] = {}
_plans_lock = threading.RLock()  # a plan compiles those of its embedded models


@attrs.frozen(slots=True, eq=False)
class CopyPlan:
    """How to copy the hydrated objects of one model (see the module docstring).

    ``freeze(doc)`` takes a snapshot of a document (a tuple: its values, every flat list of
    immutable items as a tuple, every embedded object as its own snapshot, then its state's
    fields or ``None``); ``thaw(snapshot)`` makes a new document of it: the values shared
    when immutable, every list, embedded object and dict its own, a state of its own for a
    stored document (the same original ``_source``, never mutated, index and version, not
    in any session; ``None`` for an embedded object). A snapshot is kept by the cache and
    thawed on every hit: what can be worked out once (which lists are flat) is.
    ``required`` names the fields whose key a ``_source`` must hold for a copy to equal a
    hydration; ``inner`` lists ``(name, raw getter, plan, many)`` of the embedded fields;
    ``plain`` the raw getters of the fields of one scalar, which a copy shares (so each
    must hold an immutable value: Elasticsearch may store an array or an object there).
    """

    cls: type
    freeze: Callable[[Any], tuple[Any, ...]]
    thaw: Callable[[tuple[Any, ...]], Any]
    required: tuple[str, ...]
    inner: tuple[tuple[str, Callable[[Any], Any], CopyPlan, bool], ...]
    plain: tuple[Callable[[Any], Any], ...]

    def copy_document(self, doc: Any) -> Any:
        """A new document equal to ``doc``, sharing nothing mutable with it."""
        return self.thaw(self.freeze(doc))

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
        value kept as stored by the lenient path, and no mutable value (a stored array
        or object) in a field of one scalar, which a copy would share."""
        if type(obj) is not self.cls or getattr(obj, "_esm_raw", None) is not None:
            return False
        for get in self.plain:
            if not isinstance(get(obj), _IMMUTABLE):
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


def _frozen_list(items: list[Any]) -> Any:
    """The snapshot of a list of scalars as stored: a tuple when every item is immutable
    (thawed by ``list``), else a private deep copy (thawed by copying each item)."""
    return tuple(items) if _all_atomic(map(type, items)) else _copy_items(items)


#: Snapshot of an embedded object the model's plan does not know (a subclass): a private
#: deep copy in a one-item list, thawed by copying it deep again.
def _odd(value: Any) -> list[Any]:
    return [copy.deepcopy(value)]


def _compile(info: Any) -> CopyPlan | None:
    cls = info.cls
    attributes = {a.name: a for a in attrs.fields(cls)}
    state_slot = _raw_slot(cls, "_esm_state")
    if state_slot is None or set(attributes) != {spec.name for spec in info.fields}:
        return None  # (an attribute no field spec describes: a copy could not set it)
    ns: dict[str, Any] = {
        "_get__esm_state": state_slot.__get__,
        "_json_copy": json_copy,
        "_deepcopy": copy.deepcopy,
        "_frozen_list": _frozen_list,
        "_copy_items": _copy_items,
        "_odd": _odd,
        "_tuple": tuple,
        "_map": _map_or_none,
        "_or_none": _or_none,
    }
    frozen: list[str] = []  # one expression per field, then the state (of ``p``)
    required: list[str] = []
    inner: list[tuple[str, Callable[[Any], Any], CopyPlan, bool]] = []
    plain: list[Callable[[Any], Any]] = []
    for spec in info.fields:
        name = spec.name
        slot = _raw_slot(cls, name)
        attribute = attributes.get(name)
        if slot is None or attribute is None:
            return None
        ns[f"_get_{name}"] = slot.__get__
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
            ns[f"_freeze_{name}"] = plan.freeze
            ns[f"_cls_{name}"] = spec.inner
            one = f"(_freeze_{name}({{0}}) if type({{0}}) is _cls_{name} else _odd({{0}}))"
            if spec.many:
                item = one.format("_x")
                frozen.append(f"_map(lambda _x: None if _x is None else {item}, {value})")
            else:
                frozen.append(f"_or_none({value}, lambda _x: {one.format('_x')})")
        elif spec.kind == "any":
            frozen.append(f"_json_copy({value})")
        elif spec.many and spec.kind in ("datetime", "enum"):  # items made by hydration
            frozen.append(f"_or_none({value}, _tuple)")
        elif spec.many:  # scalars as stored: maybe an array of arrays
            frozen.append(f"_or_none({value}, _frozen_list)")
        else:
            plain.append(slot.__get__)
            frozen.append(value)
    source = "\n".join(
        [
            "def freeze(p):",
            # an embedded object's copy has no state (a document's own: see CopyPlan)
            "    s = _get__esm_state(p)" if info.is_document else "    s = None",
            "    return (",
            *(f"        {expr}," for expr in frozen),
            "        None if s is None else "
            "(s.original_or_bytes, s.index, None, s.partial, s.version, s.condition),",
            "    )",
            "",
            "def thaw(_snapshot):",
            *(f"    {line}" for line in _thaw_code(info, "_snapshot", "self", ns, "")),
            "    return self",
            "",
        ]
    )
    filename = f"<esmapper copy {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), ns)  # generated from the field specs
    return CopyPlan(cls, ns["freeze"], ns["thaw"], tuple(required), tuple(inner), tuple(plain))


def _thaw_code(info: Any, snapshot: str, target: str, ns: dict[str, Any], tag: str) -> list[str]:
    """Statements of ``thaw`` making ``target`` (a variable) a new instance of ``info``'s
    model of the snapshot in the variable ``snapshot`` (as ``freeze`` takes it; the model
    has a plan, so its embedded models too). Plain slot stores into the model's raw
    subclass, then the class switch (or the slots' own setters when it has none); an
    embedded object of one field built inline the same way (no call), a list of them by
    their plan's ``thaw``; a state of its own for a document. The names it uses carry
    ``tag`` (one per embedding level)."""
    cls = info.cls
    raw = raw_class(cls)
    ns[f"_cls{tag}"] = cls
    if raw is not None:
        ns[f"_raw{tag}"] = raw

    def put(name: str, expr: str) -> str:
        if raw is not None:
            return f"{target}.{name} = {expr}"
        ns[f"_put{tag}_{name}"] = _raw_slot(cls, name).__set__
        return f"_put{tag}_{name}({target}, {expr})"

    names = [f"_s{tag}_{i}" for i in range(len(info.fields))]
    state = f"_s{tag}_state"
    lines = [
        f"{', '.join([*names, state])}, = {snapshot}",
        f"{target} = _raw{tag}()" if raw is not None else f"{target} = _new(_cls{tag})",
    ]
    ns["_new"] = object.__new__
    for spec, v in zip(info.fields, names, strict=True):
        name = spec.name
        if spec.kind == "inner":
            inner_info = spec.inner.__esmapper__
            if spec.many:
                ns[f"_thaw{tag}_{name}"] = plan_of(inner_info).thaw  # type: ignore[union-attr]
                item = f"(_thaw{tag}_{name}(_x) if type(_x) is tuple else _deepcopy(_x[0]))"
                items = f"[None if _x is None else {item} for _x in {v}]"
                lines.append(put(name, f"None if {v} is None else {items}"))
                continue
            made = f"_o{v}"
            lines += [
                f"if {v} is None:",
                f"    {put(name, 'None')}",
                f"elif type({v}) is tuple:",
                *(f"    {line}" for line in _thaw_code(inner_info, v, made, ns, f"{tag}_{name}")),
                f"    {put(name, made)}",
                "else:",  # an embedded object the plan does not know (a subclass)
                f"    {put(name, f'_deepcopy({v}[0])')}",
            ]
        elif spec.kind == "any":
            lines.append(put(name, f"_json_copy({v})"))
        elif spec.many and spec.kind in ("datetime", "enum"):  # items made by hydration
            lines.append(put(name, f"None if {v} is None else list({v})"))
        elif spec.many:  # scalars as stored: maybe an array of arrays
            lines.append(
                put(
                    name,
                    f"None if {v} is None else "
                    f"(list({v}) if type({v}) is tuple else _copy_items({v}))",
                )
            )
        else:
            lines.append(put(name, v))
    if info.is_document:
        lines += _thawed_state(ns, state, put, f"_st{tag}")
    else:
        lines.append(put("_esm_state", "None"))
    if raw is not None:
        lines.append(f"{target}.__class__ = _cls{tag}")
    return lines


def _thawed_state(
    ns: dict[str, Any], state: str, put: Callable[[str, str], str], made: str
) -> list[str]:
    """Statements of ``thaw`` giving the object ``put`` stores into a state of its own
    (in the variable ``made``) made of the snapshot's ``state`` (``(original, index,
    None, partial, version, condition)``, or ``None``), built inline
    (:func:`~esmapper.model.state.loaded_state_code`: no ``DocState`` call)."""
    fields = {
        "original": f"{made}_original",
        "index": f"{made}_index",
        "version": f"{made}_version",
        "condition": f"{made}_condition",
        "partial": f"{made}_partial",
    }
    built = loaded_state_code(ns, made, **fields)
    return [
        f"if {state} is None:",
        f"    {put('_esm_state', 'None')}",
        "else:",
        f"    {fields['original']}, {fields['index']}, _, {fields['partial']}, "
        f"{fields['version']}, {fields['condition']} = {state}",
        *(f"    {line}" for line in built),
        f"    {put('_esm_state', made)}",
    ]


def _or_none(value: Any, make: Callable[[Any], Any]) -> Any:
    """``make(value)``, or ``None`` for ``None``."""
    return None if value is None else make(value)


def _map_or_none(make: Callable[[Any], Any], items: Any) -> tuple[Any, ...] | None:
    """The tuple of ``make(item)`` for a list of embedded objects, or ``None``."""
    return None if items is None else tuple(map(make, items))


class HydratedCopies:
    """The documents hydrated from cached hits, kept to be copied on the next hit.

    An in-process cache client (``InMemoryCache``, the L1 of a ``HybridCache``) hands out
    the very object it stores, read after read. The first read of such a hit hydrates it
    as any read does; when the document can be copied (:class:`CopyPlan`: every value
    came from the hit, none was kept as stored), a snapshot of it is kept here under the
    hit's identity. A later read handed the same object gets a new copy of that document: the
    same values, its own lists, embedded objects and dicts, its own state, without parsing
    dates again. A hit a hybrid cache reads from Redis is kept in its L1: the next read
    gets a copy. A document cache over a client that decodes every hit anew (a
    ``RedisCache`` on its own, a custom client) keeps no copies.

    The kept snapshot is never handed out, and an entry holds its hit, so a reused ``id()``
    can never match: an entry is only used for the object it was made from, which the
    cache client no longer hands out once the key was written, removed or expired.
    At most ``maxsize`` entries are kept (the oldest go first).
    """

    def __init__(self, maxsize: int = 10_000) -> None:
        self.maxsize = maxsize
        #: id(hit) -> (hit, the kept snapshot, its thaw function, its model): what
        #: :meth:`document` looks up first (and a reader of the document cache inline,
        #: ``DocumentCache.reader``); only :meth:`document` adds to it
        self.kept: dict[int, tuple[dict[str, Any], Any, Callable[[Any], Any], type]] = {}
        self._lock = threading.Lock()

    def document(
        self, info: Any, hit: dict[str, Any], hydrate: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """A document of the cached ``hit`` of model ``info``: a copy of the one kept for
        this very object, else ``hydrate(hit)`` (kept for the next read when copyable)."""
        entry = self.kept.get(id(hit))
        if entry is not None and entry[0] is hit and entry[3] is info.cls:
            return entry[2](entry[1])
        document = hydrate(hit)
        plan = plan_of(info)
        if plan is None or not plan.clean(document) or not plan.complete(hit.get("_source") or {}):
            return document
        kept = plan.freeze(document)  # before the caller can change the document
        with self._lock:
            self.kept[id(hit)] = (hit, kept, plan.thaw, plan.cls)
            if len(self.kept) > self.maxsize:
                del self.kept[next(iter(self.kept))]
        return document

    def clear(self) -> None:
        """Forget every kept document."""
        with self._lock:
            self.kept.clear()

    def __len__(self) -> int:
        """How many documents are kept."""
        return len(self.kept)
