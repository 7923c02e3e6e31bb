"""A mypy plugin: ``Employee.age`` read on a model class is a field reference.

At run time a model's field read on its class is a
:class:`~esmapper.model._refs.FieldRef` (``sort=-Employee.age``, ``includes=[Employee.name]``);
mypy, following the model's ``dataclass_transform``, types it as the field's value (``int``),
so ``-Employee.age`` passes as an ``int`` and ``Employee.age.desc()`` is an error. With the
plugin, mypy types it as ``FieldRef``. Enable it in the mypy configuration::

    [mypy]
    plugins = esmapper.contrib.mypy

Only class-level reads change: ``doc.age`` on an instance is still an ``int``. Methods,
``ClassVar`` attributes, unannotated class attributes (``limit = 5``: no field), names
starting with ``_`` and names of ``type`` itself (``mro``) keep their types, as they do at
run time.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.nodes import TypeInfo, Var
from mypy.plugin import AttributeContext, Plugin
from mypy.types import CallableType, Instance, Type, TypeType, TypeVarType, get_proper_type

__all__ = ["EsmapperPlugin", "plugin"]

_MODEL_BASE = "esmapper.model.document._ModelBase"
_FIELD_REF = "esmapper.model._refs.FieldRef"
_TYPE_NAMES = frozenset(dir(type))


def _class_of(tp: Type) -> TypeInfo | None:
    """The class a class-object expression of type ``tp`` stands for."""
    proper = get_proper_type(tp)
    if isinstance(proper, CallableType) and proper.is_type_obj():
        return proper.type_object()
    if isinstance(proper, TypeType):
        item = get_proper_type(proper.item)
        if isinstance(item, TypeVarType):  # type[Self], type[M] with M bound to a model
            item = get_proper_type(item.upper_bound)
        if isinstance(item, Instance):
            return item.type
    return None


def _field_ref_type(plugin: Plugin, name: str) -> Callable[[AttributeContext], Type]:
    def hook(ctx: AttributeContext) -> Type:
        info = _class_of(ctx.type)
        if info is None or not info.has_base(_MODEL_BASE):
            return ctx.default_attr_type
        symbol = info.get(name)
        node = symbol.node if symbol is not None else None
        if not isinstance(node, Var) or node.is_classvar or node.is_property or node.is_inferred:
            # an unannotated class attribute (``limit = 5``) is no field: attrs makes fields
            # of annotated names only, so ``Model.limit`` stays the value at run time
            return ctx.default_attr_type
        ref = plugin.lookup_fully_qualified(_FIELD_REF)
        if ref is None or not isinstance(ref.node, TypeInfo):  # esmapper not analysed
            return ctx.default_attr_type
        return Instance(ref.node, [])

    return hook


class EsmapperPlugin(Plugin):
    """Types ``Model.<field>`` read on a model class as ``FieldRef``."""

    def get_class_attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        name = fullname.rpartition(".")[2]
        if not name or name.startswith("_") or name in _TYPE_NAMES:
            return None
        return _field_ref_type(self, name)


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point."""
    return EsmapperPlugin
