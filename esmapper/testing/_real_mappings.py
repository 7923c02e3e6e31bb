"""Mappings echoed as Elasticsearch echoes them: a :class:`~esmapper.testing.cluster.
ClusterProxy` rule.

Elasticsearch answers ``GET .../_mapping`` (and the ``mappings`` of ``GET /<index>``) by
serialising its field mappers, not by returning what it was sent. Each mapper writes a
parameter only when it differs from the parameter's default (``FieldMapper.Parameter``'s
``isConfigured``), an object mapper writes ``"type": "object"`` only when it has no
properties (``ObjectMapper.toXContent``), ``dynamic`` as a lower-case string and
``enabled`` only when ``false``, ``copy_to`` always as an array, a boolean or integer
parameter as parsed (``"false"`` -> ``false``). Metadata fields at their defaults
(``_routing.required: false``, ``_source.enabled: true``) are not written. A dynamic
template writes a one-pattern list as a string and leaves ``match_mapping_type: "*"`` out
beside ``match``/``path_match``; its ``mapping`` is written as sent.

The local server echoes what it was sent (it only leaves out the object type, and writes
``dynamic`` as a string), so code that compares a stored mapping with what it would send
passes there and re-sends on every run against Elasticsearch.
:class:`~esmapper.testing.cluster.NormalisedMappings` rewrites each mapping answer with
:func:`serialise_mapping`, the way Elasticsearch writes it.

This module is the test double's own account of the server (written from Elasticsearch's
serialisers), kept apart from :mod:`esmapper.indexes._echo`, esmapper's rule for
comparing: a parameter esmapper forgot would be caught here, not mirrored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from esmapper.testing._rules import Exchange

__all__ = ["answers_mappings", "serialise_mapping"]

_POINT: Final[dict[str, Any]] = {"index": True, "doc_values": True, "store": False}
_NUMERIC: Final[dict[str, Any]] = {**_POINT, "coerce": True, "ignore_malformed": False}
_ANALYZED: Final[dict[str, Any]] = {
    "index": True,
    "store": False,
    "norms": True,
    "index_options": "positions",
    "eager_global_ordinals": False,
    "fielddata": False,
    "term_vector": "no",
}
#: Each mapper's parameter defaults (Elasticsearch 8.18-9.x), as far as tests need them.
_PARAMETERS: Final[dict[str, dict[str, Any]]] = {
    "keyword": {
        **_POINT,
        "norms": False,
        "eager_global_ordinals": False,
        "index_options": "docs",
        "split_queries_on_whitespace": False,
        "null_value": None,
    },
    "text": _ANALYZED,
    "search_as_you_type": {**_ANALYZED, "max_shingle_size": 3},
    "boolean": {**_POINT, "ignore_malformed": False, "null_value": None},
    "date": {
        **_POINT,
        "format": "strict_date_optional_time||epoch_millis",
        "ignore_malformed": False,
        "null_value": None,
    },
    "date_nanos": {
        **_POINT,
        "format": "strict_date_optional_time_nanos||epoch_millis",
        "ignore_malformed": False,
        "null_value": None,
    },
    "ip": {**_POINT, "ignore_malformed": False, "null_value": None},
    "geo_point": {**_POINT, "ignore_malformed": False, "ignore_z_value": True},
    "binary": {"doc_values": False, "store": False},
    **{
        name: _NUMERIC
        for name in (
            "long",
            "integer",
            "short",
            "byte",
            "double",
            "float",
            "half_float",
            "scaled_float",
            "unsigned_long",
        )
    },
}
_INTEGER_PARAMETERS: Final = ("ignore_above", "position_increment_gap", "max_shingle_size")


def _parsed(value: Any, default: Any) -> Any:
    if isinstance(default, bool) and value in ("true", "false"):
        return value == "true"
    return value


def _mapper(node: Mapping[str, Any]) -> dict[str, Any]:
    kind = node.get("type", "object")
    if kind in ("object", "nested"):
        return _object(node, kind)
    out: dict[str, Any] = {}
    defaults = _PARAMETERS.get(kind, {})
    for name, given in node.items():
        if name in ("fields", "copy_to", "meta"):
            continue
        value = _parsed(given, defaults[name]) if name in defaults else given
        if name in defaults and value == defaults[name] and type(value) is type(defaults[name]):
            continue
        if name in _INTEGER_PARAMETERS and isinstance(value, str) and value.isdigit():
            value = int(value)
        out[name] = value
    if node.get("meta"):
        out["meta"] = node["meta"]
    copy_to = node.get("copy_to")
    if copy_to:
        out["copy_to"] = [copy_to] if isinstance(copy_to, str) else list(copy_to)
    fields = node.get("fields")
    if isinstance(fields, Mapping) and fields:
        out["fields"] = {name: _mapper(sub) for name, sub in sorted(fields.items())}
    return out


def _object(node: Mapping[str, Any], kind: str) -> dict[str, Any]:
    props = node.get("properties")
    children = props if isinstance(props, Mapping) else {}
    out: dict[str, Any] = {}
    if kind == "nested" or not children:
        out["type"] = kind
    if "dynamic" in node:
        out["dynamic"] = str(node["dynamic"]).lower()
    if _parsed(node.get("enabled", True), True) is False:
        out["enabled"] = False
    for flag in ("include_in_parent", "include_in_root"):
        if kind == "nested" and _parsed(node.get(flag, False), False) is True:
            out[flag] = True
    written = ("type", "properties", "enabled", "dynamic", "include_in_parent", "include_in_root")
    for name, value in node.items():
        if name not in written:
            out[name] = value
    if children:
        out["properties"] = {name: _mapper(sub) for name, sub in sorted(children.items())}
    return out


def _template(entry: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, body in entry.items():
        written = dict(body)
        for key in ("match", "path_match", "unmatch", "path_unmatch"):
            if isinstance(written.get(key), list) and len(written[key]) == 1:
                written[key] = written[key][0]
        if written.get("match_mapping_type") == "*" and (
            "match" in written or "path_match" in written
        ):
            del written["match_mapping_type"]
        out[name] = written
    return out


def serialise_mapping(mappings: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping body as Elasticsearch writes it back (see the module docstring)."""
    out: dict[str, Any] = {}
    for name, value in mappings.items():
        if name == "properties":
            if isinstance(value, Mapping) and value:
                out[name] = {field: _mapper(sub) for field, sub in sorted(value.items())}
        elif name == "dynamic":
            out[name] = str(value).lower()
        elif name == "dynamic_templates" and isinstance(value, list):
            out[name] = [_template(entry) for entry in value]
        elif name == "_routing" and _parsed(value.get("required", False), False) is False:
            continue
        elif name == "_source" and set(value) <= {"enabled"}:
            if _parsed(value.get("enabled", True), True) is True:
                continue
            out[name] = {"enabled": False}
        else:
            out[name] = value
    return out


def answers_mappings(exchange: Exchange) -> bool:
    """``GET .../_mapping`` or ``GET /<index>`` (not a document that has a ``mappings``
    field)."""
    parts = exchange.path.strip("/").split("/")
    return "_mapping" in parts or (len(parts) == 1 and bool(exchange.index_part))
