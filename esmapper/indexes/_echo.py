"""Mappings as Elasticsearch echoes them, and whether a stored mapping holds a wanted one.

``GET /<index>/_mapping`` does not answer what was sent. Elasticsearch parses a mapping into
field mappers and writes them back out, and a mapper writes a parameter only when it is set
to something other than its default:

- an object field with ``properties`` has no ``"type": "object"`` (an object without
  properties keeps it); ``"enabled": true`` and empty ``properties`` are left out;
- ``dynamic`` is a string (``"true"``, ``"false"``, ``"strict"``, ``"runtime"``);
- a parameter given its default value is left out (``"index": true``, ``"doc_values":
  true``, ``"store": false``, ``"norms"`` of a ``text`` field, the default date ``format``,
  a ``nested`` field's ``include_in_parent: false`` ...); a boolean or integer given as a
  string comes back parsed (``"index": "false"`` -> ``false``);
- ``copy_to`` is a list (``"copy_to": "all"`` -> ``["all"]``), empty ``copy_to``,
  ``meta`` and multi-``fields`` are left out; the multi-fields are mappers too;
- ``_routing: {"required": false}`` and ``_source: {"enabled": true}`` are left out;
- a ``join`` field's ``relations``: a parent's one child is a string, several a list in
  the order of a hash set (compared sorted here); it always echoes
  ``eager_global_ordinals`` (its default ``true``: left out here);
- a dynamic template's one-pattern list is a string, and its ``match_mapping_type: "*"``
  is left out beside ``match``/``path_match``; its ``mapping`` is kept as sent (a template
  is not a mapper).

Elasticsearch also adds what it learns (dynamically mapped fields, a ``dense_vector``'s
``dims`` and ``index_options``): a stored mapping holds more than was sent.

:func:`echoed` puts a mapping body in that form; :func:`covers` compares two bodies in it,
which is how ``configure_indexes`` decides whether ``PUT _mapping`` is needed
(:mod:`esmapper.indexes.configure`) and how drift is measured
(:mod:`esmapper.indexes.drift`, ``status``). Both sides go through :func:`echoed`, so the
rule holds whether a server echoes a default or not (the local test server echoes what it
was sent). Pure functions: nothing is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["covers", "echoed"]

_OBJECTS: Final = frozenset({"object", "nested"})
_POINT: Final[dict[str, Any]] = {"index": True, "doc_values": True, "store": False}
_NUMBER: Final[dict[str, Any]] = {**_POINT, "coerce": True, "ignore_malformed": False}
_TEXT: Final[dict[str, Any]] = {
    "index": True,
    "store": False,
    "norms": True,
    "index_options": "positions",
    "eager_global_ordinals": False,
    "fielddata": False,
    "term_vector": "no",
}

#: The parameters whose default Elasticsearch leaves out of the echo, per field type
#: (the types esmapper's field classes map, and the common others). A type not listed
#: keeps its parameters as given.
DEFAULTS: Final[Mapping[str, Mapping[str, Any]]] = {
    "object": {"enabled": True},
    "nested": {"enabled": True, "include_in_parent": False, "include_in_root": False},
    "keyword": {
        **_POINT,
        "norms": False,
        "eager_global_ordinals": False,
        "index_options": "docs",
        "split_queries_on_whitespace": False,
    },
    "text": _TEXT,
    "search_as_you_type": {**_TEXT, "max_shingle_size": 3},
    "boolean": {**_POINT, "ignore_malformed": False},
    "date": {
        **_POINT,
        "ignore_malformed": False,
        "format": "strict_date_optional_time||epoch_millis",
    },
    "date_nanos": {
        **_POINT,
        "ignore_malformed": False,
        "format": "strict_date_optional_time_nanos||epoch_millis",
    },
    "ip": {**_POINT, "ignore_malformed": False},
    "geo_point": {**_POINT, "ignore_malformed": False, "ignore_z_value": True},
    "binary": {"doc_values": False, "store": False},
    "flattened": {"index": True, "doc_values": True, "eager_global_ordinals": False},
    "join": {"eager_global_ordinals": True},
    **{
        kind: _NUMBER
        for kind in (
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

_INTEGERS: Final = frozenset({"ignore_above", "position_increment_gap", "max_shingle_size"})
_ANALYZED: Final = frozenset({"text", "search_as_you_type", "match_only_text"})
_PATTERNS: Final = ("match", "path_match", "unmatch", "path_unmatch")
_ABSENT: Final = object()


def _boolean(value: Any) -> Any:
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    return value


def _integer(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def _dynamic(value: Any) -> Any:
    return str(value).lower() if isinstance(value, bool) else value


def _properties(node: Mapping[str, Any], key: str) -> dict[str, Any]:
    children = node.get(key)
    if not isinstance(children, Mapping):
        return {}
    return {
        name: _field(child) if isinstance(child, Mapping) else child
        for name, child in children.items()
    }


def _without_defaults(node: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    for name, default in defaults.items():
        if name not in node:
            continue
        value = node[name]
        if isinstance(default, bool):
            value = node[name] = _boolean(value)
        if value == default and type(value) is type(default):
            del node[name]


def _field(field: Mapping[str, Any]) -> dict[str, Any]:
    node = dict(field)
    kind = node.get("type")
    if kind is None and "properties" in node:
        kind = "object"
    if kind in _OBJECTS or kind is None:
        props = _properties(node, "properties")
        node.pop("properties", None)
        if props:
            node["properties"] = props
        if kind == "object" and props:
            node.pop("type", None)  # implied by the properties
        elif kind is None:
            node["type"] = "object"
        if "dynamic" in node:
            node["dynamic"] = _dynamic(node["dynamic"])
        _without_defaults(node, DEFAULTS.get(kind or "object", {}))
        return node
    for name in _INTEGERS & node.keys():
        node[name] = _integer(node[name])
    _without_defaults(node, DEFAULTS.get(str(kind), {}))
    analyzer = node.get("analyzer", "default")
    if kind in _ANALYZED and node.get("search_analyzer", analyzer) == analyzer:
        node.pop("search_analyzer", None)  # defaults to the analyzer
    copy_to = node.pop("copy_to", None)
    if copy_to:
        node["copy_to"] = [copy_to] if isinstance(copy_to, str) else list(copy_to)
    if not node.get("meta"):
        node.pop("meta", None)
    subfields = _properties(node, "fields")
    node.pop("fields", None)
    if subfields:
        node["fields"] = subfields
    if kind == "join" and isinstance(node.get("relations"), Mapping):
        node["relations"] = {
            parent: _children(children) for parent, children in node["relations"].items()
        }
    return node


def _children(children: Any) -> Any:
    """A join relation's children as Elasticsearch echoes them: one child as a string,
    several as a list in no set order (a set there), here sorted."""
    if isinstance(children, list | tuple):
        if len(children) == 1:
            return children[0]
        return sorted(children, key=str)
    return children


def _template(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    out: dict[str, Any] = {}
    for name, template in entry.items():
        if not isinstance(template, Mapping):
            out[name] = template
            continue
        body = dict(template)
        for key in _PATTERNS:
            value = body.get(key)
            if isinstance(value, list) and len(value) == 1:
                body[key] = value[0]
        if body.get("match_mapping_type") == "*" and ("match" in body or "path_match" in body):
            del body["match_mapping_type"]
        if body.get("match_pattern") == "simple":
            del body["match_pattern"]
        out[name] = body
    return out


def echoed(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """``mapping`` (a mapping body: ``properties``, ``dynamic``, ``dynamic_templates``,
    ``_meta`` ...) as ``GET _mapping`` echoes it (see the module docstring); a new dict,
    ``mapping`` is not changed."""
    node = dict(mapping)
    props = _properties(node, "properties")
    node.pop("properties", None)
    if props:
        node["properties"] = props
    if "dynamic" in node:
        node["dynamic"] = _dynamic(node["dynamic"])
    if isinstance(node.get("dynamic_templates"), list):
        node["dynamic_templates"] = [_template(entry) for entry in node["dynamic_templates"]]
    routing = node.get("_routing")
    if isinstance(routing, Mapping) and _boolean(routing.get("required", False)) is False:
        node.pop("_routing")
    source = node.get("_source")
    if (
        isinstance(source, Mapping)
        and set(source) <= {"enabled"}
        and _boolean(source.get("enabled", True)) is True
    ):
        node.pop("_source")
    return node


def _field_covers(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    kind = wanted.get("type", "object")
    if stored.get("type", "object") != kind:
        return False
    for key, value in wanted.items():
        if key in ("properties", "fields"):
            if not _children_cover(stored.get(key), value):
                return False
        elif key != "type" and stored.get(key, _ABSENT) != value:
            return False
    # a parameter the model leaves at its default, set otherwise on the server: changed
    return not any(key in stored and key not in wanted for key in DEFAULTS.get(str(kind), {}))


def _children_cover(stored: Any, wanted: Any) -> bool:
    if not isinstance(wanted, Mapping):
        return bool(stored == wanted)
    if not isinstance(stored, Mapping):
        return not wanted
    for name, field in wanted.items():
        have = stored.get(name)
        if not isinstance(field, Mapping) or not isinstance(have, Mapping):
            if have != field:
                return False
        elif not _field_covers(have, field):
            return False
    return True


def covers(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether the stored mapping body ``stored`` (``GET _mapping``'s ``mappings``) already
    holds everything in ``wanted`` (a model's mapping body), compared as Elasticsearch
    echoes both (:func:`echoed`): every wanted field is there with the same type and
    parameters, a parameter the model leaves at its default is at its default there too;
    fields and parameters Elasticsearch added (dynamic mapping, learned ``dims``) are
    allowed. ``False`` means ``PUT _mapping`` must be sent (Elasticsearch then applies it or
    refuses a change it cannot make in place)."""
    have, want = echoed(stored), echoed(wanted)
    for key, value in want.items():
        if key == "properties":
            if not _children_cover(have.get("properties"), value):
                return False
        elif have.get(key, _ABSENT) != value:
            return False
    return True
