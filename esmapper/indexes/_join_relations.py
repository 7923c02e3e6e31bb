"""A version bump keeps the relations of a join field (:mod:`esmapper._join`).

Every parent/child document stores its relation name in the join field (``"club"``,
``{"name": "member", "parent": ...}``), and Elasticsearch refuses a document whose relation
the index's mapping does not declare ("unknown join name"). A bump whose new mapping drops
or renames a relation (a model class renamed for the new version: the relation name
defaults to the class name) would copy nothing of those documents and fail after the whole
copy; :func:`check_relations_kept` refuses it before anything is written (a relation
no stored document holds may go).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from esmapper.errors import IndexConfigurationError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from esmapper.indexes.spec import IndexSpec

__all__ = ["check_relations_kept", "join_relations"]


def join_relations(mapping: Mapping[str, Any]) -> dict[str, dict[str, frozenset[str]]]:
    """``{join field: {parent relation: child relations}}`` of the top-level join fields
    of a mapping body (``{"properties": ...}``), as sent or as Elasticsearch echoes it (a
    child given as a name or a list of names)."""
    found: dict[str, dict[str, frozenset[str]]] = {}
    for name, field in (mapping.get("properties") or {}).items():
        if not isinstance(field, Mapping) or field.get("type") != "join":
            continue
        relations: dict[str, frozenset[str]] = {}
        for parent, children in (field.get("relations") or {}).items():
            names = [children] if isinstance(children, str) else list(children or ())
            relations[str(parent)] = frozenset(str(c) for c in names)
        found[str(name)] = relations
    return found


def check_relations_kept(client: Elasticsearch, spec: IndexSpec, old: str) -> None:
    """Raise IndexConfigurationError when documents of the index ``old`` hold a relation
    of a join field that ``spec``'s mapping does not declare (or declares under another
    parent). Sends ``GET /<old>/_mapping``; when relations are dropped, ``POST
    /<old>/_refresh`` and ``POST /<old>/_count`` of the documents holding them (a relation
    no document holds may go). Nothing for a model without a join field."""
    new = join_relations(spec.info.mapping)
    if not new:
        return
    answer: dict[str, Any] = dict(client.indices.get_mapping(index=old).body)
    first: dict[str, Any] = next(iter(answer.values()), {})
    stored = first.get("mappings") or {}
    for field, relations in join_relations(stored).items():
        kept = new.get(field, {})
        parents = {child: parent for parent, kids in kept.items() for child in kids}
        lost = [p for p in relations if p not in kept] + [
            c for p, kids in relations.items() for c in sorted(kids) if parents.get(c) != p
        ]
        if not lost:
            continue
        # the join field matches its relation name (the local server: its ``name`` key)
        held = [{"terms": {field: lost}}, {"terms": {f"{field}.name": lost}}]
        query = {"bool": {"should": held, "minimum_should_match": 1}}
        client.indices.refresh(index=old)  # (a bump is rare: a document of a moment ago too)
        count = int(client.count(index=old, query=query).body.get("count") or 0)
        if count:
            declared = {p: sorted(kids) for p, kids in kept.items()}
            raise IndexConfigurationError(
                f"{spec.info.name}: {count} document(s) of {old!r} hold the relation(s) "
                f"{', '.join(lost)} of the join field {field!r}, which version "
                f"{spec.version} does not declare as they are ({declared}); Elasticsearch "
                "refuses a document of an unknown relation, so they could not be copied. A "
                "relation name defaults to the class name: keep it with Index.relation = "
                "'<old name>' on the renamed model",
                index=spec.alias,
            )
