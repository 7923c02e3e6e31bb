"""A model's "raw" subclass: the fast way to fill a new instance of a model.

A model's attributes are slots; a tracked field's slot sits behind a ``TrackedSlot`` and
the model's ``__setattr__`` is attrs' (conversion, checks). Code that builds an instance
from values already checked (hydration from a stored source, a copy of a cached
document) stores them through :func:`raw_class`'s subclass: an instance of it takes plain
slot stores (``obj.name = value``, the interpreter's own), then becomes an instance of the
model by ``__class__`` assignment (allowed: the subclass adds no slot, so the layout is
the model's). The subclass never escapes: callers switch the class before handing the
object out. It shows in ``Model.__subclasses__()`` as ``_Raw<Model>``; its
``__esmapper__`` is ``None``, so it is no model of its own (registering it raises
``TypeError``, as for any class that is not a Document).
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from esmapper.model._tracking import TrackedSlot

__all__ = ["raw_class"]


@functools.cache
def raw_class(cls: type) -> type | None:
    """The raw subclass of the model ``cls`` (one per model): it adds no slot, its
    attributes ``_esm_state`` and every field's name are ``cls``'s slots themselves (a
    tracked field's raw slot, not its ``TrackedSlot``), its ``__setattr__`` is
    ``object``'s, and calling it makes an empty instance (its ``__init__`` is
    ``object``'s: cheaper than ``object.__new__(cls)``). ``None`` when ``cls`` cannot have
    one: a field that is not a slot, an ``__init_subclass__`` in its classes (which would
    see the subclass), a metaclass with its own ``__call__``."""
    if any("__init_subclass__" in vars(base) for base in cls.__mro__[:-1]):
        return None
    if type(cls).__call__ is not type.__call__:
        return None
    ns: dict[str, Any] = {
        "__slots__": (),
        "__setattr__": object.__setattr__,
        "__init__": object.__init__,
        "__esmapper__": None,  # not a model of its own (a walk over subclasses sees it)
    }
    info = cls.__esmapper__  # type: ignore[attr-defined]
    for name in ["_esm_state", *(f.name for f in info.fields)]:
        found = inspect.getattr_static(cls, name, None)
        if isinstance(found, TrackedSlot):
            found = found.slot
        if not isinstance(found, types.MemberDescriptorType):
            return None
        ns[name] = found
    # type.__new__: the metaclass's own __new__ would make the subclass a model
    return type.__new__(type(cls), f"_Raw{cls.__name__}", (cls,), ns)
