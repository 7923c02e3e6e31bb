"""Mapping drift between a model and its index, and the index's field count (health).

Pure functions over mapping bodies (``{"properties": {...}}``): :func:`flatten` lists
every mapped field by dotted path with its type (objects, nested objects, multi-fields
such as ``name.keyword`` and field aliases included: they all count towards
``index.mapping.total_fields.limit``, 1,000 by default), :func:`mapping_drift` compares the
model's mapping with the server's (both as Elasticsearch echoes mappings,
:func:`esmapper.indexes._echo.echoed`: an object with properties has no ``type``),
:func:`count_fields` counts like Elasticsearch does.
:func:`field_limit` reads the limit (sends ``GET /<index>/_settings`` with defaults).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, Final

import attrs
from elasticsearch import Elasticsearch

from esmapper.indexes._echo import echoed

__all__ = ["DEFAULT_FIELD_LIMIT", "MappingDrift", "count_fields", "field_limit", "flatten"]

#: ``index.mapping.total_fields.limit`` unless the index says otherwise.
DEFAULT_FIELD_LIMIT: Final = 1000
_SETTING: Final = "index.mapping.total_fields.limit"


def _type(field: Mapping[str, Any]) -> str:
    kind = field.get("type")  # Elasticsearch leaves it out on an object with properties
    return str(kind) if kind is not None else "object"


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{dotted path: type}`` of every field of ``mapping`` (a body with
    ``properties``), multi-fields as ``<path>.<name>``."""
    out: dict[str, str] = {}
    for name, field in (mapping.get("properties") or {}).items():
        if not isinstance(field, Mapping):
            continue
        path = f"{prefix}{name}"
        out[path] = _type(field)
        for sub, subfield in (field.get("fields") or {}).items():
            if isinstance(subfield, Mapping):
                out[f"{path}.{sub}"] = _type(subfield)
        if "properties" in field:
            out.update(flatten(field, f"{path}."))
    return out


def count_fields(mapping: Mapping[str, Any]) -> int:
    """How many fields count towards the total-fields limit: every mapped field, object
    and multi-field, plus runtime fields."""
    return len(flatten(mapping)) + len(mapping.get("runtime") or {})


@attrs.frozen
class MappingDrift:
    """How an index's mapping differs from the model's: ``missing`` (declared by the
    model, not mapped on the server: ``configure_indexes`` adds them), ``changed``
    (``(path, model type, server type)``: needs a new index version and a reindex),
    ``extra`` (mapped on the server, unknown to the model: written by another version of
    the application, or dynamic mapping)."""

    missing: tuple[str, ...] = ()
    changed: tuple[tuple[str, str, str], ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """No field missing or changed (extra fields do not break the model)."""
        return not self.missing and not self.changed

    def describe(self) -> str:
        parts = []
        if self.missing:
            parts.append(f"not mapped on the server: {', '.join(self.missing)}")
        if self.changed:
            text = ", ".join(
                f"{p} ({code} in the model, {server} stored)" for p, code, server in self.changed
            )
            parts.append(f"type changed: {text}")
        if self.extra:
            parts.append(f"unknown to the model: {', '.join(self.extra)}")
        return "; ".join(parts) or "none"


def _templated(model: Mapping[str, Any]) -> list[str]:
    """The ``path_match`` / ``match`` patterns of ``model``'s dynamic templates: fields
    the model maps through them (custom-field slots) are the model's."""
    patterns = []
    for entry in model.get("dynamic_templates") or ():
        for template in entry.values() if isinstance(entry, Mapping) else ():
            for key in ("path_match", "match"):
                value = template.get(key) if isinstance(template, Mapping) else None
                patterns += [value] if isinstance(value, str) else list(value or ())
    return patterns


def mapping_drift(model: Mapping[str, Any], server: Mapping[str, Any]) -> MappingDrift:
    """Compare the model's mapping body with the server's (pure; both as Elasticsearch
    echoes them); a server field that one of the model's dynamic templates maps is not
    ``extra``."""
    code, stored = flatten(echoed(model)), flatten(echoed(server))
    templated = _templated(model)
    missing = tuple(sorted(p for p in code if p not in stored))
    changed = tuple(
        sorted((p, code[p], stored[p]) for p in code if p in stored and code[p] != stored[p])
    )
    extra = tuple(
        sorted(
            p
            for p in stored
            if p not in code and not any(fnmatch.fnmatchcase(p, t) for t in templated)
        )
    )
    return MappingDrift(missing, changed, extra)


def field_limit(client: Elasticsearch, index: str) -> int:
    """``index.mapping.total_fields.limit`` of ``index`` (``GET
    /<index>/_settings?include_defaults=true&flat_settings=true``)."""
    body = client.indices.get_settings(
        index=index, include_defaults=True, flat_settings=True, name=_SETTING
    ).body
    entry: dict[str, Any] = next(iter(body.values()), {}) if isinstance(body, dict) else {}
    for section in ("settings", "defaults"):
        value = (entry.get(section) or {}).get(_SETTING)
        if value is not None:
            return int(value)
    return DEFAULT_FIELD_LIMIT
