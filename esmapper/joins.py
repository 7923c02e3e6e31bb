"""Queries across a parent/child join (:mod:`esmapper._join`): ``has_child``,
``has_parent`` and ``parent_id`` as ``elasticsearch.dsl`` queries, for ``filter=`` of any
search of the other side (``find``, ``count``, ``exists``, ``patch_all``...), alone or
combined with ``&``, ``|`` and ``~``::

    companies.find(em.has_child(Employee, "email:ann@acme.com"))
    employees.find(em.has_parent(Organization, "name:acme") & Q("term", age=30))
    employees.count(em.parent_id(Employee, org.id))

The inner filter is the other model's filter language (or a DSL query), resolved against
that model's fields, with that model's soft-delete clause in the mode ``soft_deletes``
(``"active"``, the default: a soft-deleted child does not make its parent match, a
soft-deleted parent does not make its children match; ``"all"``: no clause;
``"deleted"``: the deleted ones only, for a model with soft deletes). Nothing is sent
when they are built; a bad filter raises :class:`~esmapper.errors.QueryValidationError`
then, a model outside a join ``TypeError``. The local test server does not run these
queries (a real cluster does).
"""

from __future__ import annotations

from typing import Any, Literal

from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

from esmapper._join import ChildJoin, ParentJoin, join_of
from esmapper.errors import QueryValidationError
from esmapper.query.filter import compile_filter

__all__ = ["has_child", "has_parent", "parent_id"]

_MODES = ("active", "all", "deleted")
_SCORE_MODES = ("none", "avg", "sum", "max", "min")


def has_child(
    child: type,
    filter: str | Query | None = None,
    *,
    score_mode: Literal["none", "avg", "sum", "max", "min"] | None = None,
    min_children: int | None = None,
    max_children: int | None = None,
    soft_deletes: Literal["active", "all", "deleted"] = "active",
) -> Query:
    """Parents having a ``child`` (a child model) that matches ``filter``:
    ``{"has_child": {"type": "<child relation>", "query": ..., "score_mode"?,
    "min_children"?, "max_children"?}}``. ``min_children``/``max_children`` bound how many
    of its children must match (ints >= 1, min <= max: ``ValueError`` otherwise)."""
    join = _join(child, ChildJoin, "has_child", "a child model (Index.parent)")
    params: dict[str, Any] = {"type": join.relation, "query": _inner(join, filter, soft_deletes)}
    if score_mode is not None:
        if score_mode not in _SCORE_MODES:
            raise ValueError(
                f"score_mode must be one of {', '.join(_SCORE_MODES)}, not {score_mode!r}"
            )
        params["score_mode"] = score_mode
    for name, value in (("min_children", min_children), ("max_children", max_children)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, not {value!r}")
            params[name] = value
    if min_children is not None and max_children is not None and min_children > max_children:
        raise ValueError(f"min_children {min_children} is over max_children {max_children}")
    return Q("has_child", **params)


def has_parent(
    parent: type,
    filter: str | Query | None = None,
    *,
    score: bool | None = None,
    soft_deletes: Literal["active", "all", "deleted"] = "active",
) -> Query:
    """Children whose parent (of the parent model ``parent``) matches ``filter``:
    ``{"has_parent": {"parent_type": "<parent relation>", "query": ..., "score"?}}``
    (``score``: the parent's relevance score becomes the child's)."""
    join = _join(parent, ParentJoin, "has_parent", "a parent model (Index.join_field)")
    params: dict[str, Any] = {
        "parent_type": join.relation,
        "query": _inner(join, filter, soft_deletes),
    }
    if score is not None:
        params["score"] = bool(score)
    return Q("has_parent", **params)


def parent_id(child: type, id: str) -> Query:
    """The children of model ``child`` whose parent is ``id``:
    ``{"parent_id": {"type": "<child relation>", "id": id}}`` (an :class:`~esmapper.ids.Id`
    counts as its value)."""
    join = _join(child, ChildJoin, "parent_id", "a child model (Index.parent)")
    if not isinstance(id, str) or not id:
        raise ValueError(f"parent_id() takes the parent's id, a non-empty str, not {id!r}")
    return Q("parent_id", type=join.relation, id=str.__str__(id))


def _join(model: Any, kind: type[Any], query: str, what: str) -> Any:
    join = join_of(model)
    if not isinstance(join, kind):
        name = getattr(model, "__name__", repr(model))
        raise TypeError(f"{query}() takes {what}, not {name}")
    return join


def _inner(join: ParentJoin | ChildJoin, filter: str | Query | None, mode: str) -> Query:
    """``filter`` compiled against the model of ``join`` with its soft-delete clause."""
    if mode not in _MODES:
        raise ValueError(f"soft_deletes must be one of {', '.join(_MODES)}, not {mode!r}")
    info = join.info
    if mode == "deleted" and not info.soft_deletes:
        raise QueryValidationError(
            f"soft_deletes='deleted' asks for soft-deleted {info.name} documents, and "
            f"{info.name} has no soft deletes",
            field="soft_deletes",
        )
    default_fields = info.index.default_search_fields if info.index is not None else None
    compiled = compile_filter(filter, info.catalog, default_fields=default_fields)
    if info.soft_deletes and mode == "active" and "is_deleted" in compiled.fields:
        raise QueryValidationError(
            "the filter names is_deleted while soft_deletes='active' hides deleted "
            "documents; pass soft_deletes='all' or 'deleted' instead",
            field="is_deleted",
        )
    clauses: list[Query] = []
    if info.soft_deletes and mode != "all":
        clauses.append(Q("term", is_deleted=mode == "deleted"))
    if compiled.query is None:
        return Q("bool", filter=clauses) if clauses else Q("match_all")
    if not clauses:
        return compiled.query
    return Q("bool", must=[compiled.query], filter=clauses)
