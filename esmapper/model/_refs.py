"""Typed field references: ``Employee.age`` on the class names the field ``age``.

On an instance, ``doc.age`` is the value, read straight from its slot (the slot descriptors
stay on the model class, untouched: no cost on instance reads and writes). On the class,
``Employee.age`` is a :class:`FieldRef`, accepted wherever a field name is (``sort=``,
``includes=``, ``excludes=``), the SQLAlchemy habit:

- ``-Employee.age`` (or ``Employee.age.desc()``) sorts descending, ``+Employee.age`` /
  ``.asc()`` ascending;
- ``Employee.address.city`` names a field of an embedded model (``address.city``).

How: a finished model class gets the metaclass ``FieldRefMeta`` (a subclass of the model
metaclass with the same layout, assigned once the class is built), which holds one data
descriptor per field name (:class:`_ClassAccess`). Python looks data descriptors of the
metaclass up before the class's own ``__dict__`` when an attribute is read *on the class*,
and never when it is read on an instance, so only class-level reads go through it. A field
named like an attribute of ``type`` (``mro``) gets no such descriptor: ``Employee.mro`` is
its slot descriptor, which :func:`field_name` accepts too (it has no ``-``: sort it with
``"-mro"``).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["FieldRef", "field_name", "install_refs", "raw_class_attributes"]


class FieldRef:
    """A field of ``model`` named through its class (``Employee.age``), with a sort direction.

    ``path`` is the dotted field name (``address.city``); ``descending`` the direction a sort
    on it takes. ``str(ref)`` is the path; ``ref.expression`` the sort expression
    (``-age``). Immutable; equal when model, path and direction are.
    """

    __slots__ = ("descending", "model", "path")

    model: type
    path: str
    descending: bool

    def __init__(self, model: type, path: str, descending: bool = False) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "descending", descending)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def expression(self) -> str:
        """The sort expression: ``"age"``, or ``"-age"`` descending."""
        return f"-{self.path}" if self.descending else self.path

    def desc(self) -> FieldRef:
        """This field sorted descending (``-Employee.age``)."""
        return FieldRef(self.model, self.path, True)

    def asc(self) -> FieldRef:
        """This field sorted ascending (the default)."""
        return FieldRef(self.model, self.path, False)

    def __neg__(self) -> FieldRef:
        return FieldRef(self.model, self.path, not self.descending)

    def __pos__(self) -> FieldRef:
        return self

    def __getattr__(self, name: str) -> FieldRef:
        """``Employee.address.city``: a field of the embedded model ``address`` holds."""
        if name.startswith("_"):
            raise AttributeError(name)
        inner = _inner_model(self.model, self.path)
        if inner is None or name not in _field_names(inner):
            raise AttributeError(
                f"{self.model.__name__}.{self.path} has no field {name!r}"
                + (
                    ""
                    if inner is None
                    else f" (fields of {inner.__name__}: {', '.join(sorted(_field_names(inner)))})"
                )
            )
        return FieldRef(self.model, f"{self.path}.{name}", self.descending)

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"{'-' if self.descending else ''}{self.model.__name__}.{self.path}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldRef):
            return NotImplemented
        return (self.model, self.path, self.descending) == (
            other.model,
            other.path,
            other.descending,
        )

    def __hash__(self) -> int:
        return hash((self.model, self.path, self.descending))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FieldRef, (self.model, self.path, self.descending))


def _info(model: type) -> Any:
    return vars(model).get("__esmapper__")


def _field_names(model: type) -> Any:
    info = _info(model)
    return info.field_by_name if info is not None else {}


def _inner_model(model: type, path: str) -> type | None:
    """The embedded model the field at ``path`` of ``model`` holds (``None``: not one)."""
    current: type | None = model
    for part in path.split("."):
        spec = _field_names(current).get(part) if current is not None else None
        current = spec.inner if spec is not None else None
    return current


def field_name(value: Any) -> str | None:
    """The field path ``value`` names when it is a field reference (a :class:`FieldRef`, or
    the slot descriptor of a field, as ``attrs.fields(Model).age`` or a name of ``type``
    leaves it), else ``None``. A descending :class:`FieldRef` gives its path too: callers
    that have no direction (``includes=``) check ``descending`` themselves."""
    if isinstance(value, FieldRef):
        return value.path
    owner = getattr(value, "__objclass__", None)
    name = getattr(value, "__name__", None)
    if isinstance(name, str) and isinstance(owner, type) and name in _field_names(owner):
        return name  # a slot descriptor: ``vars(Model)["age"]``
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__name__ == "Attribute" and hasattr(value, "eq"):
        return name  # an attrs.Attribute: ``attrs.fields(Model).age``
    return None


class _ClassAccess:
    """The data descriptor of one field name on :class:`FieldRefMeta`: reading it on a model
    class gives a :class:`FieldRef` when the class has that field; otherwise (a class that
    merely shares the name) the class attribute as Python would find it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, cls: Any, meta: Any = None) -> Any:
        if cls is None:
            return self
        if self.name in _field_names(cls) and not getattr(_building, "depth", 0):
            return FieldRef(cls, self.name)
        for klass in cls.__mro__:
            if self.name in vars(klass):
                value = vars(klass)[self.name]
                getter = getattr(type(value), "__get__", None)
                return value if getter is None else getter(value, None, cls)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {self.name!r}")

    def __set__(self, cls: Any, value: Any) -> None:
        with _as_plain(cls):
            setattr(cls, self.name, value)

    def __delete__(self, cls: Any) -> None:
        with _as_plain(cls):
            delattr(cls, self.name)


class _PlainClass:
    """Context: ``cls`` has the plain model metaclass (the nearest class of its metaclass's
    MRO without field references: ModelMeta, or a user's metaclass derived from it)
    meanwhile, so that setting or deleting a class attribute named like a field reaches the
    class's ``__dict__`` (the model's own machinery does so while building it)."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls
        self.meta = type(cls)

    def __enter__(self) -> None:
        _class_lock.acquire()
        # the nearest metaclass without field references: ModelMeta, or a user's own
        self.cls.__class__ = next(
            m for m in self.meta.__mro__ if not getattr(m, "__esm_field_refs__", False)
        )

    def __exit__(self, *exc: object) -> None:
        try:
            self.cls.__class__ = self.meta
        finally:
            _class_lock.release()


_as_plain = _PlainClass
#: per thread: how many model classes are being built (attrs reads the slot descriptors of
#: the bases with ``getattr``, which must then see the descriptors, not FieldRefs)
_building = threading.local()


class raw_class_attributes:
    """Context: while a model class is built in this thread, ``Model.<field>`` on any model
    class is the class attribute itself (its slot descriptor), as attrs expects."""

    def __enter__(self) -> None:
        _building.depth = getattr(_building, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _building.depth -= 1


_class_lock = threading.RLock()
_RESERVED = frozenset(dir(type))


def install_refs(cls: type, meta: type) -> None:
    """Make the finished model class ``cls`` answer ``cls.<field>`` with a :class:`FieldRef`:
    its metaclass becomes ``meta`` (the field-reference subclass of its model metaclass, with
    the same layout), which gains a :class:`_ClassAccess` for each of its field names that
    ``type`` does not have."""
    with _class_lock:
        for name in _field_names(cls):
            if name not in _RESERVED and not isinstance(vars(meta).get(name), _ClassAccess):
                type.__setattr__(meta, name, _ClassAccess(name))
        cls.__class__ = meta
