"""Partial documents (``PartialPatch``) checked against their model before anything is sent.

The Update API merges a partial document into the stored ``_source`` as it is: a key the
model does not declare would be stored silently (and read by nothing), a value of the
wrong type would come back as a 400 from the server, or be stored where the model cannot
read it. :func:`check_partial` refuses both with a
:class:`~esmapper.errors.DocumentValidationError` naming the field path
(``Book.reviews[0].rating``), and turns the values into what the model stores
(``datetime`` -> ISO-8601 UTC text, an ``Enum`` -> its value, an ``InnerDoc`` -> its
``_source``).

The rules, level by level (the document, then each embedded object a dict value reaches):

- a key must be a stored field of the model at that level: ``id`` (the identity) and
  ``version`` (not part of ``_source``) are refused; a dotted key (``"address.city"``)
  is refused too, since ``_source`` would keep it as one key with a dot: write
  ``{"address": {"city": ...}}`` (the update merges objects);
- undeclared keys are accepted where the mapping takes them: a model whose
  ``Index.dynamic`` is ``True``/``"true"``/``"runtime"``, inside an embedded object mapped
  with such a ``dynamic``, and anywhere inside a field of kind ``any`` (``dict`` fields,
  ``HasCustomFields.custom_fields``);
- a value is checked like an assignment of the field (``None`` only for optional fields, a
  list for list fields); a dict for an embedded object is itself a partial object (merged
  key by key, so it may name only some fields), an ``InnerDoc`` instance is written whole;
- a list is **replaced whole** by the Update API (its items are never merged), so a dict
  item of a list of embedded objects is a *complete* object, checked like a new one: a
  field without a default that it leaves out is refused, the others get their defaults in
  the model's stored form (what the model itself would store for that item); objects
  inside such an item are complete too. Decision: a dict for a single embedded object
  stays partial, since merging is what the Update API does with it when an object is
  stored (a patch naming one field of ``address`` must not reset the others). When the
  stored value is ``null`` or missing, that dict is stored as given; pass the
  ``InnerDoc`` instance (written whole) to set an object that may be absent;
- ``NaN`` and infinities are refused anywhere (JSON has neither; they would be stored as
  ``null``), also with ``validate=False``, which skips the other checks
  (:func:`check_finite`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import DocumentValidationError
from esmapper.model.codec import describe, format_datetime, scalar_checker
from esmapper.model.fields import FieldSpec
from esmapper.model.normalize import Invalid, mismatch

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["check_finite", "check_partial"]

#: ``dynamic`` settings under which Elasticsearch takes undeclared fields
_OPEN = (True, "true", "runtime")


class _Refused(Exception):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def check_partial(info: ModelInfo, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The partial document ``doc`` of a ``PartialPatch`` on ``info``'s model, checked and
    converted as the module docstring says. Sends nothing; raises
    :class:`DocumentValidationError` (``field``: the dotted path) on the first problem."""
    dynamic = info.index.dynamic if info.index is not None else False
    try:
        return _object(info, doc, "", dynamic in _OPEN)
    except _Refused as refused:
        raise _error(info, refused) from None


def check_finite(info: ModelInfo, doc: Mapping[str, Any]) -> None:
    """Refuse ``NaN`` and infinities anywhere in ``doc`` (the check ``validate=False``
    keeps): :class:`DocumentValidationError` naming the path."""
    try:
        _finite(doc, "")
    except _Refused as refused:
        raise _error(info, refused) from None


def _error(info: ModelInfo, refused: _Refused) -> DocumentValidationError:
    return DocumentValidationError(
        f"{info.name}.{refused.path}: {refused.reason} (PartialPatch refused before sending)",
        field=refused.path,
    )


def _object(
    info: ModelInfo, doc: Any, prefix: str, open_: bool, whole: bool = False
) -> dict[str, Any]:
    """``doc`` checked and converted; ``whole``: a complete object (a list item), see
    :func:`_completed`."""
    if not isinstance(doc, Mapping):
        raise _Refused(prefix.rstrip(".") or "<root>", f"expected an object, got {describe(doc)}")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str):
            raise _Refused(path, f"field names are strings, not {describe(key)}")
        spec = info.field_by_name.get(key)
        if spec is None or not spec.stored:
            head = key.split(".", 1)[0]
            if "." in key and head in info.field_by_name:
                rest = key.split(".", 1)[1]
                raise _Refused(
                    path,
                    "a dotted name is stored as one key with a dot in _source, not inside "
                    f"{head!r}; write {{{head!r}: {{{rest!r}: ...}}}} (the update merges objects)",
                )
            if spec is None and open_:
                _finite(value, path)
                out[key] = value
                continue
            raise _Refused(path, _unknown(info, key, spec))
        if key == "id" and info.is_document:
            raise _Refused(path, "the id is the document's identity; it cannot be patched")
        if key == "idx" and not prefix and info.custom_fields:
            raise _Refused(
                path,
                "idx is esmapper's own field (recomputed from custom_fields and the tenant on "
                "every write); patch custom_fields instead",
            )
        out[key] = _value(spec, value, path, open_, info.name, whole)
    return _completed(info, out, prefix) if whole else out


def _completed(info: ModelInfo, checked: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A complete object from the checked dict of a list item: every stored field of the
    model, the ones left out at their defaults, as the model stores a new object
    (``to_source`` of the object loaded from ``checked``: the same defaults and stored
    forms as ``InnerDoc(...)``); undeclared keys of an open mapping kept. A left-out
    field without a default is refused."""
    declared = attrs.fields_dict(info.cls) if attrs.has(info.cls) else {}
    for spec in info.fields:
        field = declared.get(spec.name)
        if (
            spec.stored
            and spec.name not in checked
            and field is not None
            and field.default is attrs.NOTHING
        ):
            raise _Refused(
                f"{prefix}{spec.name}",
                "missing: a list is stored whole (the update replaces it, it never merges its "
                f"items), so each item is a complete {info.name} and this field has no default",
            )
    return {**info.to_source(info.from_source(checked, None, None)), **checked}


def _unknown(info: ModelInfo, key: str, spec: FieldSpec | None) -> str:
    if spec is not None:  # declared, not stored (``version``)
        return f"{key!r} is not stored in _source (it comes from the store's metadata)"
    names = [s.name for s in info.fields if s.stored]
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (fields: {', '.join(names)})"
    return f"{info.name} has no field {key!r}{hint}"


def _value(  # noqa: PLR0917 - one recursive step, all positional
    spec: FieldSpec, value: Any, path: str, open_: bool, owner: str, whole: bool
) -> Any:
    if value is None:
        if spec.optional:
            return None
        raise _Refused(path, "None is not allowed")
    if not spec.many:
        return _one(spec, value, path, open_, owner, whole)
    if not isinstance(value, list | tuple | set | frozenset):
        raise _Refused(path, f"expected a list, got {describe(value)}")
    # the update replaces the list: each item is a complete object
    return [_one(spec, item, f"{path}[{i}]", open_, owner, True) for i, item in enumerate(value)]


def _one(  # noqa: PLR0917 - one recursive step, all positional
    spec: FieldSpec, value: Any, path: str, open_: bool, owner: str, whole: bool
) -> Any:
    kind = spec.kind
    if value is None:  # an item of a list (a field's own None is checked by _value)
        return None
    if kind == "any":
        _finite(value, path)
        return value
    if kind == "inner":
        inner = spec.inner
        assert inner is not None
        inner_info: ModelInfo = inner.__esmapper__  # type: ignore[attr-defined]
        if isinstance(value, inner):
            try:
                inner_info.normalize(value)  # lists mutated in place
            except DocumentValidationError as exc:
                raise _Refused(f"{path}.{exc.field}", _reason(exc)) from None
            return value.to_source()  # type: ignore[attr-defined]
        if isinstance(value, Mapping):
            dynamic = (spec.mapping or {}).get("dynamic")
            inner_open = open_ if dynamic is None else dynamic in _OPEN
            return _object(inner_info, value, f"{path}.", inner_open, whole)
        raise _Refused(path, f"expected {inner.__name__} or an object, got {describe(value)}")
    try:
        checked = scalar_checker(spec, owner, mismatch)(value)
    except Invalid as exc:
        raise _Refused(path, exc.reason) from None
    if kind == "datetime":
        return format_datetime(checked)
    if kind == "enum":
        return checked.value
    return checked


def _reason(exc: DocumentValidationError) -> str:
    """The reason part of a normalizer's message (``Model.path: reason``)."""
    return exc.message.split(": ", 1)[1] if ": " in exc.message else exc.message


def _finite(value: Any, path: str) -> None:
    if isinstance(value, float):
        if value - value != 0.0:
            raise _Refused(path, f"{value!r} cannot be stored (JSON has no NaN or infinities)")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            _finite(item, f"{path}[{i}]")
