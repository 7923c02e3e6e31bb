"""``repo.find_as`` projections: each hit's ``_source`` as another type.

A projection is built from the stored ``_source`` of each hit, as the model reads it:

- ``dict`` (or a ``dict`` subclass): a copy of the ``_source`` as stored (JSON values);
- an esmapper model (an ``em.InnerDoc`` subclass, or another ``em.Document``): built with
  that model's own converters (``Model.from_source``: its fields, its defaults for missing
  keys, undeclared keys ignored; a Document also gets the hit's id);
- any other attrs class: its attributes that the searched model declares get the model's
  values (dates as aware datetimes, enums as members, embedded objects as InnerDocs),
  ``id`` (and ``version``) come from the hit, and keys of ``_source`` the model does not
  declare are passed as stored. Attributes whose key is absent keep their own default
  (a required one gets the model's default).

Without ``includes``, a class projection asks only for its own fields (``_source``
filtering); ``dict`` gets the whole ``_source``. Checked before anything is sent: an
attrs class whose required attribute the model does not declare, or that ``includes``
leave out, raises :class:`~esmapper.errors.QueryValidationError` naming it.
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import QueryValidationError

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["Projector", "projection"]

Projector = Callable[[dict[str, Any], str | None], Any]


def projection(
    info: ModelInfo, result_type: Any, includes: Any
) -> tuple[Projector, list[str] | None]:
    """The projector of ``result_type`` (``project(raw_hit, version)``) and the includes
    to send (``includes`` when given, else the projection's own fields)."""
    if isinstance(result_type, type) and issubclass(result_type, dict):
        return _dict_projector(result_type), _listed(includes)
    model_info = (
        getattr(result_type, "__esmapper__", None) if isinstance(result_type, type) else None
    )
    if not isinstance(result_type, type) or not attrs.has(result_type):
        raise TypeError(
            f"find_as() projects into dict, an em.InnerDoc subclass or an attrs class, "
            f"not {result_type!r}"
        )
    fields = attrs.fields(result_type)
    stored = {spec.name for spec in info.fields if spec.stored}
    if model_info is None:
        _check_required(info, result_type, fields, stored, includes)
    if includes is None:
        own = [a.name for a in fields if a.name in stored]
        return _projector(info, result_type, model_info), own or None
    return _projector(info, result_type, model_info), _listed(includes)


def _listed(includes: Any) -> list[str] | None:
    if includes is None:
        return None
    return [includes] if isinstance(includes, str) else list(includes)


def _covered(name: str, includes: Iterable[str]) -> bool:
    """Whether the ``_source`` filtered by ``includes`` holds (part of) field ``name``."""
    return any(
        name == inc
        or name.startswith(f"{inc}.")
        or inc.startswith(f"{name}.")
        or fnmatch.fnmatchcase(name, inc)
        for inc in includes
    )


def _check_required(
    info: ModelInfo,
    result_type: type,
    fields: Iterable[attrs.Attribute],  # type: ignore[type-arg]
    stored: set[str],
    includes: Any,
) -> None:
    listed = _listed(includes)
    for attribute in fields:
        if not attribute.init or attribute.default is not attrs.NOTHING:
            continue
        name = attribute.name
        if name in ("id", "version"):
            continue
        if name not in stored:
            raise QueryValidationError(
                f"find_as({result_type.__name__}): the required attribute {name!r} is not a "
                f"field of {info.name}; give it a default or project into another class",
                field=name,
            )
        if listed is not None and not _covered(name, listed):
            raise QueryValidationError(
                f"find_as({result_type.__name__}): includes={listed!r} leave out the "
                f"required attribute {name!r}",
                field=name,
            )


def _dict_projector(result_type: type) -> Projector:
    def project(raw: dict[str, Any], version: str | None) -> Any:
        # a copy: a response cached under a custom key is shared by later reads
        return result_type(copy.deepcopy(raw.get("_source") or {}))

    return project


def _projector(info: ModelInfo, result_type: type, model_info: Any) -> Projector:
    if model_info is not None:
        from_source = model_info.from_source
        takes_id = model_info.is_document

        def project_model(raw: dict[str, Any], version: str | None) -> Any:
            source = raw.get("_source") or {}
            return from_source(source, raw["_id"] if takes_id else None, None)

        return project_model

    declared = info.field_by_name
    attributes = [
        (a.name, a.alias, a.default is attrs.NOTHING) for a in attrs.fields(result_type) if a.init
    ]
    hydrate = info.from_source

    def project_attrs(raw: dict[str, Any], version: str | None) -> Any:
        source = raw.get("_source") or {}
        document = hydrate(source, raw["_id"], version)
        values: dict[str, Any] = {}
        for name, alias, required in attributes:
            if name == "id":
                values[alias] = raw["_id"]
            elif name == "version" and name not in source:
                values[alias] = version
            elif name in declared and (name in source or required):
                values[alias] = getattr(document, name)
            elif name in source:
                values[alias] = copy.deepcopy(source[name])
        return result_type(**values)

    return project_attrs
