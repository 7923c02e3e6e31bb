"""The normalizer run before every write of a whole document (add, save, session flush).

Lists and embedded objects can be mutated without an assignment (``doc.tags.append``,
``doc.address.tags[0] = ...``), which bypasses the attrs converters; :func:`compile_normalizer`
builds, once per model, the function that checks what such mutations can reach, raising
:class:`Invalid` (:func:`invalid_error` turns it into the DocumentValidationError users see).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from esmapper.errors import DocumentValidationError
from esmapper.model.codec import describe as _describe
from esmapper.model.codec import scalar_checker as _scalar_checker
from esmapper.model.fields import FieldSpec
from esmapper.model.lenient import kept_as_stored

__all__ = ["Invalid", "compile_normalizer", "invalid_error", "mismatch"]


class Invalid(Exception):
    """Raised by a compiled normalizer: the value at ``path`` (relative to the object being
    normalized, e.g. ``tags[2]`` or ``address.tags[0]``) cannot be stored, ``reason`` why.
    :func:`invalid_error` turns it into the DocumentValidationError users see."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def invalid_error(model: str, doc: Any, error: Invalid) -> DocumentValidationError:
    """The DocumentValidationError for ``error``, naming ``Model.path``."""
    doc_id = getattr(doc, "id", None)
    return DocumentValidationError(
        f"{model}.{error.path}: {error.reason}",
        field=error.path,
        ids=[] if doc_id is None else [doc_id],
    )


def mismatch(value: Any, expected: str) -> Invalid:
    return Invalid("", f"expected {expected}, got {_describe(value)}")


def _nested(path: str, error: Invalid) -> Invalid:
    """``error`` raised for a part of the value at ``path``."""
    if not error.path:
        return Invalid(path, error.reason)
    sep = "" if error.path.startswith("[") else "."
    return Invalid(f"{path}{sep}{error.path}", error.reason)


def _from_construction(inner: type, error: DocumentValidationError) -> Invalid:
    """An Invalid for a DocumentValidationError raised while building ``inner`` from a dict."""
    message = error.message
    if error.field is None:
        return Invalid("", message)
    prefix = f"{inner.__name__}.{error.field}: "
    reason = message[len(prefix) :] if message.startswith(prefix) else message
    return Invalid(error.field, reason)


def _fix_items(
    items: list[Any], check: Callable[[Any], Any], name: str, inner: Any, owner: Any
) -> None:
    """Check (and convert) every item of ``items`` (the list field ``name`` of ``owner``),
    replacing them in place (slice assignment: the caller's references to the list stay
    valid) when one changed. An item that fails but was loaded as stored is kept
    (:func:`~esmapper.model.lenient.kept_as_stored`)."""
    fixed = []
    changed = False
    for i, item in enumerate(items):
        try:
            new = check(item)
        except Invalid as exc:
            if kept_as_stored(owner, name, item):
                fixed.append(item)
                continue
            raise _nested(f"{name}[{i}]", exc) from None
        except DocumentValidationError as exc:  # building an embedded object from a dict
            raise _nested(f"{name}[{i}]", _from_construction(inner, exc)) from None
        if new is not item:
            changed = True
        fixed.append(new)
    if changed:
        items[:] = fixed


#: The exact type an item of each kind has when it needs no conversion (datetimes are
#: checked one by one: only an aware UTC datetime is kept as is).
_EXACT_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}


def compile_normalizer(
    cls: type, specs: Sequence[FieldSpec], raw_slots: Mapping[str, Any] | None = None
) -> Callable[[Any], None] | None:
    """The in-place normalizer of ``cls``, or ``None`` when it has nothing to normalize.

    Lists and embedded objects can be mutated without an assignment (``doc.tags.append``,
    ``doc.address.tags[0] = ...``), which bypasses the attrs converters. The normalizer
    checks what such mutations can reach: each item of a list field (converted like an
    assignment would: a dict appended to a ``list[InnerDoc]`` becomes the InnerDoc), and,
    recursively, the lists inside embedded objects. Lists keep their identity (items are
    replaced by slice assignment). It raises :class:`Invalid`; the cost when nothing needs
    converting is one type check per item (and, for floats, a finiteness check: ``NaN``
    and infinities cannot be stored). Fields of kind ``any`` (dicts) are not checked.
    Values loaded as stored that the model does not know (:mod:`esmapper.model.lenient`)
    are kept.
    """
    raw_slots = raw_slots or {}
    owner = cls.__name__
    steps: list[Callable[[Any], None]] = []
    for spec in specs:
        if spec.kind == "any" or not (spec.many or spec.kind == "inner"):
            continue
        name = spec.name
        raw = raw_slots.get(name)
        get: Callable[[Any], Any] = raw.__get__ if raw is not None else attrgetter(name)
        inner = spec.inner
        inner_normalize = None
        if inner is not None:
            inner_info = getattr(inner, "__esmapper__", None)
            inner_normalize = None if inner_info is None else inner_info.normalizer
        if not spec.many:
            if inner is not None and inner_normalize is not None:
                steps.append(_inner_step(name, get, inner, inner_normalize))
            continue
        check = _scalar_checker(spec, owner, mismatch)
        if inner is not None:
            steps.append(_inner_list_step(name, get, check, inner, inner_normalize))
        else:
            exact = _EXACT_TYPES.get(spec.kind, spec.enum)
            steps.append(_list_step(name, get, check, exact, finite=spec.kind == "float"))
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]
    run = tuple(steps)

    def normalize(doc: Any) -> None:
        for step in run:
            step(doc)

    return normalize


def _list_step(
    name: str,
    get: Callable[[Any], Any],
    check: Callable[[Any], Any],
    exact: type | None,
    *,
    finite: bool,
) -> Callable[[Any], None]:
    """The step of a list of scalars: the items are left alone when they all have the
    ``exact`` type, and, with ``finite`` (floats), their sum is finite (``NaN`` or an
    infinity makes it ``NaN`` or infinite; ``s - s`` is ``0.0`` only for a finite ``s``).
    Otherwise each item is checked (a sum that overflowed is found to be made of finite
    items there)."""

    def step(doc: Any) -> None:
        items = get(doc)
        if items is None:
            return
        if type(items) is not list:
            raise Invalid(name, f"expected a list, got {_describe(items)}")
        if exact is not None:
            for item in items:
                if type(item) is not exact:
                    break
            else:
                if not finite:
                    return
                total = sum(items)
                if total - total == 0.0:
                    return
        _fix_items(items, check, name, None, doc)

    return step


def _inner_list_step(
    name: str,
    get: Callable[[Any], Any],
    check: Callable[[Any], Any],
    inner: type,
    inner_normalize: Callable[[Any], None] | None,
) -> Callable[[Any], None]:
    def step(doc: Any) -> None:
        items = get(doc)
        if items is None:
            return
        if type(items) is not list:
            raise Invalid(name, f"expected a list, got {_describe(items)}")
        for item in items:
            if not isinstance(item, inner):
                _fix_items(items, check, name, inner, doc)
                break
        if inner_normalize is not None:
            for i, item in enumerate(items):
                try:
                    inner_normalize(item)
                except Invalid as exc:
                    raise _nested(f"{name}[{i}]", exc) from None
                except (TypeError, AttributeError):
                    if isinstance(item, inner):
                        raise
                    # an item loaded as stored (kept by _fix_items above): nothing inside

    return step


def _inner_step(
    name: str, get: Callable[[Any], Any], inner: type, inner_normalize: Callable[[Any], None]
) -> Callable[[Any], None]:
    def step(doc: Any) -> None:
        value = get(doc)
        if value is None:
            return
        try:
            inner_normalize(value)
        except Invalid as exc:
            raise _nested(name, exc) from None
        except (TypeError, AttributeError):
            if isinstance(value, inner):
                raise
            # a value loaded as stored (assignments only take the embedded class): keep it

    return step
