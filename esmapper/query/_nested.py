"""The boolean tree between the parser and the DSL, and its nested-aware emission.

The filter compiler first builds this small tree (leaves carry the nested paths that enclose
their field), then :func:`emit` turns it into one ``elasticsearch.dsl`` query:

- a leaf on a field under ``nested`` paths is wrapped in one ``nested`` query per level
  (``a`` then ``a.b`` for multi-level nesting);
- the operands of an AND that live under the same nested path are combined into ONE
  ``nested`` query around a ``bool`` (they must hold on the same nested object);
- OR operands are wrapped separately (they may match different nested objects);
- NOT is always applied at the document level: ``NOT reviews.author:bob`` excludes every
  document having any review by bob, including inside an AND with other nested clauses
  (``reviews.rating:5 AND NOT reviews.author:bob`` = a review rated 5, and no review by bob).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs
from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

__all__ = [
    "And",
    "Boosted",
    "Leaf",
    "Node",
    "Not",
    "Or",
    "emit",
    "make_and",
    "make_boosted",
    "make_not",
    "make_or",
]


@attrs.frozen
class Leaf:
    """A query on one field; ``paths`` are the nested paths enclosing it, outermost first."""

    query: Query
    paths: tuple[str, ...] = ()


@attrs.frozen
class And:
    """All children must match; ``paths`` is the nested path prefix common to all of them."""

    children: tuple[Node, ...]
    paths: tuple[str, ...]


@attrs.frozen
class Or:
    """At least one child must match; ``paths`` as for :class:`And`."""

    children: tuple[Node, ...]
    paths: tuple[str, ...]


@attrs.frozen
class Not:
    """The child must not match (document level, so ``paths`` is always empty)."""

    child: Node
    paths: tuple[str, ...] = ()


@attrs.frozen
class Boosted:
    """The child with a boost (``expr^2``)."""

    child: Node
    boost: float
    paths: tuple[str, ...]


Node = Leaf | And | Or | Not | Boosted


def _common_prefix(paths: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    common: tuple[str, ...] | None = None
    for p in paths:
        if common is None:
            common = p
            continue
        n = 0
        while n < min(len(common), len(p)) and common[n] == p[n]:
            n += 1
        common = common[:n]
    return common or ()


def make_and(children: Sequence[Node]) -> Node:
    """An AND of ``children`` (nested ANDs flattened; one child is returned as is)."""
    return _combine(And, children)


def make_or(children: Sequence[Node]) -> Node:
    """An OR of ``children`` (nested ORs flattened; one child is returned as is)."""
    return _combine(Or, children)


def _combine(kind: type[And | Or], children: Sequence[Node]) -> Node:
    flat: list[Node] = []
    for child in children:
        flat.extend(child.children if isinstance(child, kind) else (child,))
    if len(flat) == 1:
        return flat[0]
    return kind(tuple(flat), _common_prefix(c.paths for c in flat))


def make_not(child: Node) -> Node:
    """The negation of ``child`` (a double negation cancels out)."""
    if isinstance(child, Not):
        return child.child
    return Not(child)


def make_boosted(child: Node, boost: float) -> Node:
    """``child`` with a scoring boost."""
    return Boosted(child, boost, child.paths)


def _wrap(query: Query, paths: Sequence[str]) -> Query:
    for path in reversed(paths):
        query = Q("nested", path=path, query=query)
    return query


def emit(node: Node, ctx: tuple[str, ...] = ()) -> Query:
    """The DSL query for ``node``, which sits inside the nested paths ``ctx`` already.

    Produces ``bool`` queries with ``must`` (AND), ``should`` (OR) and ``must_not`` (NOT),
    ``nested`` wrappers where needed, and returns single clauses unwrapped.
    """
    if isinstance(node, Leaf):
        return _wrap(node.query, node.paths[len(ctx) :])
    if isinstance(node, Boosted):
        return Q("bool", must=[emit(node.child, ctx)], boost=node.boost)
    if isinstance(node, Not):
        return Q("bool", must_not=[emit(node.child, ctx)])
    if isinstance(node, Or):
        return Q("bool", should=[emit(child, ctx) for child in node.children])
    return _emit_and(node, ctx)


def _emit_and(node: And, ctx: tuple[str, ...]) -> Query:
    depth = len(ctx)
    # Each slot is either a finished query or the nested path of a group, kept in the order
    # of first appearance so the output follows the expression.
    slots: list[Query | str] = []
    groups: dict[str, list[Node]] = {}
    must_not: list[Query] = []
    for child in node.children:
        if isinstance(child, Not):
            must_not.append(emit(child.child, ctx))
        elif len(child.paths) > depth:
            path = child.paths[depth]
            if path not in groups:
                groups[path] = []
                slots.append(path)
            groups[path].append(child)
        else:
            slots.append(emit(child, ctx))
    must: list[Query] = []
    for slot in slots:
        if not isinstance(slot, str):
            must.append(slot)
            continue
        members = groups[slot]
        if len(members) == 1:
            must.append(emit(members[0], ctx))
        else:
            inner = _emit_and(And(tuple(members), (*ctx, slot)), (*ctx, slot))
            must.append(Q("nested", path=slot, query=inner))
    if len(must) == 1 and not must_not:
        return must[0]
    params: dict[str, list[Query]] = {}
    if must:
        params["must"] = must
    if must_not:
        params["must_not"] = must_not
    return Q("bool", **params)
