"""Stored values a model does not know: the slow paths of hydration and serialization.

The compiled converters of :mod:`esmapper.model.codec` assume that every stored value fits
its field. One that does not (an enum value added by a newer deploy, a date the model
cannot read, a string where an embedded object is declared) makes the compiled
``from_source`` raise; its ``except`` branch (free while nothing fails) hands the source to
:meth:`LenientCodec.load`, which converts field by field, list items one by one and
embedded objects recursively, and keeps each value that does not convert **as stored**
(the JSON value, copied). A read never fails on one document's value.

Each such value is logged once: a WARNING on the ``esmapper.model`` logger naming the
model, the field path (``reviews[1].status``), the value, the document id and why it did
not convert. Later reads of the same (model, field, value) log at DEBUG only, so a loop
over many documents holding a value of a newer deploy warns once, not once per document.
The memory of what was reported is bounded (the oldest entries are forgotten first, so a
value may be reported again after many others).

Kept values round-trip: the compiled ``to_source`` falls back to :meth:`LenientCodec.dump`,
which writes them back unchanged, and the normalizer run before every write tolerates them
(:func:`kept_as_stored`), so saving such a document does not corrupt or refuse it. They
are remembered per object (``_esm_raw``: field name -> the kept values, by identity);
assigning a value that contains one runs the field's checks like any assignment, which
refuse it.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from esmapper._text import article
from esmapper.model.dates import format_datetime, parse_datetime
from esmapper.model.fields import FieldSpec

__all__ = ["LenientCodec", "kept_as_stored", "reset_reported"]

log = logging.getLogger("esmapper.model")

#: JSON value types: only these are written back as stored when a dump fails
_JSON_TYPES = (str, int, float, bool, list, dict)
#: how many distinct (model, field, value) reports are remembered
_REPORTED_MAX = 1024
_reported: dict[tuple[str, str, str], None] = {}
_reported_lock = threading.Lock()
_INDEX = re.compile(r"\[\d+\]")


def reset_reported() -> None:
    """Forget which values were reported (tests use it to see the first warning again)."""
    with _reported_lock:
        _reported.clear()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _report(model: str, path: str, value: Any, id: Any, error: BaseException) -> None:
    shown = _short(value)
    key = (model, _INDEX.sub("[]", path), shown)
    with _reported_lock:
        first = key not in _reported
        if first:
            _reported[key] = None
            if len(_reported) > _REPORTED_MAX:
                del _reported[next(iter(_reported))]
    level = logging.WARNING if first else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(
            level,
            "%s %r: the stored value %s of field %s is not one the model knows (%s: %s); "
            "loaded as stored, and a save writes it back unchanged%s",
            model,
            id,
            shown,
            path,
            type(error).__name__,
            error,
            " (further reads of this value log at DEBUG)" if first else "",
        )


def _json_copy(value: Any) -> Any:
    """A stored value as kept on an object: containers are copied (the hit stays intact)."""
    return copy.deepcopy(value) if isinstance(value, list | dict) else value


def kept_as_stored(owner: Any, name: str, item: Any) -> bool:
    """Whether ``item``, found in the list field ``name`` of ``owner`` (a document or an
    embedded object), is a value loaded as stored, so a write may keep it: one the
    lenient hydration kept, or an item of the document's stored ``_source`` list (a value
    of another type that the compiled hydration passes through unchecked)."""
    kept = getattr(owner, "_esm_raw", None)
    if kept is not None and any(value is item for value in kept.get(name, ())):
        return True
    state = getattr(owner, "_esm_state", None)
    original = getattr(state, "original", None)
    stored = original.get(name) if isinstance(original, Mapping) else None
    return isinstance(stored, list) and any(
        type(value) is type(item) and value == item for value in stored
    )


class LenientCodec:
    """The slow paths of one model's codec (see the module docstring).

    ``fields`` are ``(spec, missing)`` pairs in declaration order, ``missing()`` giving the
    value of a key absent from the source (what the compiled hydration uses); ``strict`` is
    the compiled hydration without its fallback (set once compiled: an enclosing model's
    codec calls it for embedded objects, so a failure inside one is handled, and named,
    from the document down).
    """

    def __init__(
        self,
        cls: type,
        fields: Sequence[tuple[FieldSpec, Callable[[], Any]]],
        *,
        has_id: bool,
        has_version: bool,
        getters: Mapping[str, Callable[[Any], Any]],
    ) -> None:
        self.cls = cls
        self.name = cls.__name__
        self.fields = tuple(fields)
        self.has_id = has_id
        self.has_version = has_version
        self.strict: Callable[[Any, Any, Any], Any] | None = None
        self._dumped = tuple(
            (spec, getters.get(spec.name) or attrgetter(spec.name))
            for spec, _ in self.fields
            if spec.stored
        )

    # -- hydration ---------------------------------------------------------------------

    def load(self, src: Mapping[str, Any], id: Any, version: Any) -> Any:
        """The object for ``src``, keeping the values that do not convert (each reported)."""
        problems: list[tuple[str, Any, BaseException]] = []
        obj = self.build(src, id, version, "", problems)
        for path, value, error in problems:
            _report(self.name, path, value, id, error)
        return obj

    def build(
        self,
        src: Mapping[str, Any],
        id: Any,
        version: Any,
        prefix: str,
        problems: list[tuple[str, Any, BaseException]],
    ) -> Any:
        """The object for ``src``; ``prefix`` is its path in the document (``reviews[1].``),
        and every value kept as stored is added to ``problems``."""
        if not isinstance(src, Mapping):
            raise TypeError(f"{self.name}: a _source must be an object, got {_short(src)}")
        obj: Any = object.__new__(self.cls)
        set_ = object.__setattr__
        set_(obj, "_esm_state", None)
        kept: dict[str, list[Any]] = {}
        for spec, missing in self.fields:
            name = spec.name
            if name == "id" and self.has_id:
                set_(obj, "id", id if id is not None else src.get("id"))
                continue
            if name == "version" and self.has_version:
                set_(obj, "version", version)
                continue
            if name not in src:
                set_(obj, name, missing())
                continue
            value = src[name]
            where = f"{prefix}{name}"
            if value is None:
                set_(obj, name, None)
            elif spec.many:
                items = value if isinstance(value, list) else [value]
                set_(
                    obj,
                    name,
                    [
                        self._item(spec, item, f"{where}[{i}]", problems, kept)
                        for i, item in enumerate(items)
                    ],
                )
            else:
                set_(obj, name, self._item(spec, value, where, problems, kept))
        if kept:
            set_(obj, "_esm_raw", kept)
        return obj

    def _item(
        self,
        spec: FieldSpec,
        value: Any,
        where: str,
        problems: list[tuple[str, Any, BaseException]],
        kept: dict[str, list[Any]],
    ) -> Any:
        if value is None:
            return None
        try:
            return _load_one(spec, value)
        except Exception as exc:
            error: BaseException = exc
            if spec.kind == "inner":
                inner: LenientCodec = spec.inner.__esmapper__.lenient  # type: ignore[union-attr]
                if isinstance(value, Mapping):
                    return inner.build(value, None, None, f"{where}.", problems)
                error = TypeError(
                    f"{inner.name} is stored as an object, not {article(type(value).__name__)}"
                )
            problems.append((where, value, error))
            stored = _json_copy(value)
            kept.setdefault(spec.name, []).append(stored)
            return stored

    # -- serialization -----------------------------------------------------------------

    def dump(self, obj: Any) -> dict[str, Any]:
        """The ``_source`` of ``obj``, writing the values kept as stored unchanged."""
        return {spec.name: _dump_value(spec, get(obj)) for spec, get in self._dumped}


def _load_one(spec: FieldSpec, value: Any) -> Any:
    """One value (one list item) converted as the compiled hydration does; raises when it
    does not fit the field."""
    kind = spec.kind
    if kind == "datetime":
        return parse_datetime(value)
    if kind == "inner":
        strict = spec.inner.__esmapper__.lenient.strict  # type: ignore[union-attr]
        return strict(value, None, None)
    if kind == "enum":
        assert spec.enum is not None
        return spec.enum(value)
    if kind == "any":
        return copy.deepcopy(value)
    return value


def _dump_one(spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    try:
        kind = spec.kind
        if kind == "datetime":
            return format_datetime(value)
        if kind == "inner":
            return value.to_source()
        if kind == "enum":
            return value.value
        if kind == "any":
            return copy.deepcopy(value)
        return value
    except Exception:
        if isinstance(value, _JSON_TYPES):  # a value kept as stored
            return _json_copy(value)
        raise


def _dump_value(spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    if spec.many and isinstance(value, list | tuple):
        return [_dump_one(spec, item) for item in value]
    return _dump_one(spec, value)
