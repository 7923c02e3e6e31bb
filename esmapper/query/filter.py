"""Filter expressions (Lucene syntax) compiled to ``elasticsearch.dsl`` queries.

``compile_filter("age:>=25 AND company_id:acme", catalog)`` parses the text with luqum, checks
every field against the model's :class:`~esmapper.model.catalog.FieldCatalog` and every value
against its field's type, and returns a :class:`CompiledFilter` holding one DSL query. The raw
text never reaches ``query_string``: what the server receives is built clause by clause.

Supported syntax (``field`` is a model attribute name, dotted for objects and nested fields)::

    field:value          term on exact fields, match (operator and) on text fields
    field:"a phrase"     match_phrase on text, term on exact fields; "a b"~2 sets the slop
    field:>=25  >25  <x  <=x, field:[a TO b], {a TO b}, [a TO *]   ranges (dates: date math)
    field:jo*n?          wildcard (case-sensitive on keyword, case-insensitive on text)
    field:/jo.n/         regexp;  field:jon~ / jon~1   fuzzy
    field:*  _exists_:field  _missing_:field          has a value / has none ("" is none)
    a AND b, a OR b, NOT a, -a, +a, a b (implicit AND), (...), field:(a OR b), expr^2
    a && b, a || b, !a   (Lucene's symbol spellings of AND, OR, NOT)
    age:-3               a negative number on a numeric field (not NOT age:3)
    id:x  _id:x          ids query (``id`` means a mapped ``id`` field when there is one)
    bare terms           multi_match over the default fields (the text fields by default)
    *:*  or  *           match_all
    name:(expr)          a named sub-query a caller gives (``subqueries``: a parent/child
                         join's other model, ``worker:(age:>30)``), compiled by it
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query
from luqum import tree

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog, FieldInfo
from esmapper.query._leaves import (
    Target,
    default_field_search,
    default_field_wildcards,
    fuzziness,
    has_wildcard,
    unescape,
)
from esmapper.query._nested import (
    Leaf,
    Node,
    emit,
    make_and,
    make_boosted,
    make_not,
    make_or,
)
from esmapper.query._resolve import is_document_id, resolve_field
from esmapper.query._syntax import parse_lucene

__all__ = ["CompiledFilter", "compile_filter"]

_EXISTS, _MISSING = "_exists_", "_missing_"


@attrs.frozen
class CompiledFilter:
    """The result of :func:`compile_filter`.

    ``query`` is the ``elasticsearch.dsl`` query (``None`` for an empty or ``None`` filter);
    ``fields`` the resolved paths of every field the expression names explicitly
    (``_exists_:x`` included, ``"_id"`` for id clauses; fields searched only through bare
    terms are not listed). The repository uses it, e.g., to refuse ``is_deleted:`` while the
    soft-delete mode is ``"active"`` (the filter would contradict the mode).
    """

    query: Query | None
    fields: frozenset[str] = frozenset()


def compile_filter(
    expr: str | Query | None,
    catalog: FieldCatalog,
    *,
    default_fields: Sequence[str] | None = None,
    subqueries: Mapping[str, Callable[[str], Query]] | None = None,
) -> CompiledFilter:
    """Compile a filter expression (or pass a DSL query through) into a :class:`CompiledFilter`.

    ``expr`` is Lucene query text (see the module docstring), an ``elasticsearch.dsl`` query
    (returned as is, with no fields), or ``None``/blank (no query). ``default_fields`` are the
    fields bare terms search (default: every text field of the catalog).

    Raises :class:`~esmapper.errors.QueryValidationError` (with ``field``, ``position`` and
    ``expression``) for a syntax error, an unknown field (with close names suggested), a value
    that does not fit its field's type, an operation the field type does not support, or an
    expression beyond the bounds (8 KiB, 32 levels of nesting, 1024 clauses).
    """
    if expr is None:
        return CompiledFilter(None)
    if isinstance(expr, Query):
        return CompiledFilter(expr)
    if not isinstance(expr, str):
        raise TypeError(f"a filter is a str or an elasticsearch.dsl query, not {type(expr)!r}")
    if not expr.strip():
        return CompiledFilter(None)
    root = parse_lucene(expr)
    compiler = _Compiler(expr, catalog, default_fields, subqueries)
    node = compiler.compile(root, None)
    return CompiledFilter(emit(node), frozenset(compiler.fields))


@attrs.frozen
class _Special:
    """A field context that is not a mapped field: ``_id``, ``_exists_``, ``_missing_``, ``*``."""

    kind: str  # "id" | "_exists_" | "_missing_" | "all"
    name: str


_Context = Target | _Special | None


class _Compiler:
    """Walks a luqum tree and builds the boolean tree of :mod:`esmapper.query._nested`."""

    def __init__(
        self,
        text: str,
        catalog: FieldCatalog,
        default_fields: Sequence[str] | None,
        subqueries: Mapping[str, Callable[[str], Query]] | None = None,
    ) -> None:
        self.text = text
        self.subqueries = subqueries or {}
        self.catalog = catalog
        self.default_field_names = default_fields
        self.fields: set[str] = set()
        self._defaults: list[FieldInfo] | None = None

    def error(self, message: str, item: Any, field: str | None = None) -> QueryValidationError:
        return QueryValidationError(message, field=field, position=item.pos, expression=self.text)

    # -- structure -------------------------------------------------------------------------

    def compile(self, item: Any, ctx: _Context) -> Node:
        """The boolean-tree node for the luqum ``item`` under the field context ``ctx``."""
        if isinstance(item, (tree.AndOperation, tree.UnknownOperation)):
            return make_and([self.compile(o, ctx) for o in item.operands])
        if isinstance(item, tree.OrOperation):
            return make_or([self.compile(o, ctx) for o in item.operands])
        if isinstance(item, (tree.Not, tree.Prohibit)):
            return make_not(self.compile(item.a, ctx))
        if isinstance(item, tree.Plus):
            return self.compile(item.a, ctx)
        if isinstance(item, tree.BaseGroup):
            return self.compile(item.expr, ctx)
        if isinstance(item, tree.Boost):
            force = 1.0 if item.implicit_force else float(item.force)
            return make_boosted(self.compile(item.expr, ctx), force)
        if isinstance(item, tree.SearchField):
            if ctx is not None:
                raise self.error(
                    f"field {item.name!r} inside the value of another field"
                    " (write a:x AND b:y rather than a:(b:y))",
                    item,
                    unescape(item.name),
                )
            sub = self.subquery(item)
            if sub is not None:
                return sub
            target = self.context(item)
            expr = item.expr
            if (
                isinstance(target, Target)
                and target.info.is_numeric
                and isinstance(expr, tree.Prohibit)
                and isinstance(expr.a, tree.Word)
            ):
                # "age:-3" is a negative number, not "NOT age:3" (write -age:3 for that).
                return target.equals("-" + unescape(expr.a.value), expr.pos)
            return self.compile(expr, target)
        return self.value(item, ctx)

    def subquery(self, item: Any) -> Node | None:
        """The node of ``name:(expr)`` when ``name`` is one of the ``subqueries`` and no
        field of the catalog (``None`` otherwise): the query its compiler makes of
        ``expr``'s text."""
        if not self.subqueries:
            return None
        name = unescape(item.name)
        compile_sub = self.subqueries.get(name)
        if compile_sub is None or is_document_id(name, self.catalog):
            return None
        try:
            self.catalog.resolve(name)
        except KeyError:
            pass
        else:
            return None  # a field of that name wins
        expr = item.expr
        text = str(expr.expr if isinstance(expr, tree.BaseGroup) else expr).strip()
        self.fields.add(name)
        try:
            return Leaf(compile_sub(text))
        except QueryValidationError as exc:
            raise self.error(f"in {name}:(...): {exc}", item, name) from None

    def context(self, item: Any) -> Target | _Special:
        """The field context a ``SearchField`` opens (its name resolved and recorded)."""
        name = unescape(item.name)
        if name in (_EXISTS, _MISSING):
            return _Special(name, name)
        if name == "*":
            return _Special("all", name)
        if is_document_id(name, self.catalog):
            self.fields.add("_id")
            return _Special("id", name)
        info = resolve_field(self.catalog, name, position=item.pos, expression=self.text)
        self.fields.add(info.path)
        return Target(name, info, self.catalog, self.text)

    # -- values ----------------------------------------------------------------------------

    def value(self, item: Any, ctx: _Context) -> Node:
        """The node for a value item (word, phrase, range, pattern) in the context ``ctx``."""
        if ctx is None:
            return self.bare(item)
        if isinstance(ctx, Target):
            return self.field_value(item, ctx)
        if ctx.kind == "id":
            return self.id_value(item, ctx)
        if ctx.kind == "all":
            if isinstance(item, tree.Word) and item.value == "*":
                return Leaf(Q("match_all"))
            raise self.error("'*:' only accepts '*' (*:* matches every document)", item)
        return self.exists_value(item, ctx)

    def field_value(self, item: Any, target: Target) -> Node:
        pos = item.pos
        if isinstance(item, tree.Word):
            raw = item.value
            if raw == "*":
                return target.exists()
            if has_wildcard(raw):
                return target.wildcard(raw, pos)
            return target.equals(unescape(raw), pos)
        if isinstance(item, tree.Phrase):
            return target.phrase(_phrase_text(item), pos)
        if isinstance(item, tree.Proximity):
            return target.phrase(_phrase_text(item.term), pos, slop=int(item.degree))
        if isinstance(item, tree.Fuzzy):
            fuzz = self.fuzziness(item)
            return target.fuzzy(unescape(item.term.value), fuzz, item.term.pos)
        if isinstance(item, tree.Regex):
            return target.regexp(item.value[1:-1], pos)
        if isinstance(item, tree.Range):
            return target.range(
                self.bound(item.low),
                self.bound(item.high),
                include_low=item.include_low,
                include_high=item.include_high,
                position=pos,
            )
        if isinstance(item, (tree.From, tree.To)):
            bound = self.bound(item.a)
            is_from = isinstance(item, tree.From)
            return target.range(
                bound if is_from else None,
                None if is_from else bound,
                include_low=item.include,
                include_high=item.include,
                position=pos,
            )
        raise self.error(f"unsupported syntax {str(item).strip()!r}", item, target.name)

    def bound(self, item: Any) -> tuple[str, int | None] | None:
        """A range bound's text and position; ``None`` for ``*`` (open)."""
        if isinstance(item, tree.Prohibit) and isinstance(item.a, tree.Word):
            return "-" + unescape(item.a.value), item.pos
        if isinstance(item, tree.Phrase):
            return _phrase_text(item), item.pos
        if isinstance(item, tree.Word):
            if item.value == "*":
                return None
            return unescape(item.value), item.pos
        raise self.error(f"invalid range bound {str(item).strip()!r}", item)

    def fuzziness(self, item: Any) -> str | int:
        fuzz = fuzziness(item.degree, item._implicit_degree)
        if fuzz is None:
            raise self.error("fuzziness (~) must be 0, 1 or 2", item)
        return fuzz

    def id_value(self, item: Any, ctx: _Special) -> Node:
        if isinstance(item, tree.Word) and item.value == "*":
            return Leaf(Q("match_all"))
        if isinstance(item, tree.Word) and not has_wildcard(item.value):
            return Leaf(Q("ids", values=[unescape(item.value)]))
        if isinstance(item, tree.Phrase):
            return Leaf(Q("ids", values=[_phrase_text(item)]))
        raise self.error(
            f"{ctx.name} (the document id) only supports exact values (no ranges, wildcards"
            " or patterns)",
            item,
            ctx.name,
        )

    def exists_value(self, item: Any, ctx: _Special) -> Node:
        if not isinstance(item, tree.Word) or has_wildcard(item.value):
            raise self.error(f"{ctx.name} needs a field name: {ctx.name}:field", item, ctx.name)
        name = unescape(item.value)
        if is_document_id(name, self.catalog):
            node: Node = Leaf(Q("match_all"))
        else:
            info = resolve_field(self.catalog, name, position=item.pos, expression=self.text)
            self.fields.add(info.path)
            node = Target(name, info, self.catalog, self.text).exists()
        return make_not(node) if ctx.kind == _MISSING else node

    # -- bare terms (no field) -------------------------------------------------------------

    def default_fields(self, item: Any) -> list[FieldInfo]:
        """The fields bare terms search, resolved once."""
        if self._defaults is None:
            if self.default_field_names is None:
                infos = [info for info in self.catalog if info.is_text]
            else:
                infos = [
                    resolve_field(self.catalog, name, position=None, expression=self.text)
                    for name in self.default_field_names
                ]
            self._defaults = [i for i in infos if not i.is_container]
        if not self._defaults:
            raise self.error(
                f"{str(item).strip()!r} has no field and there are no default fields to search"
                " (the model has no text field); write field:value",
                item,
            )
        return self._defaults

    def bare(self, item: Any) -> Node:
        """A term without a field: ``multi_match`` (or wildcards) over the default fields."""
        if isinstance(item, tree.Word) and item.value == "*":
            return Leaf(Q("match_all"))
        if isinstance(item, (tree.Range, tree.From, tree.To, tree.Regex)):
            raise self.error(
                f"{str(item).strip()!r} needs a field (write field:{str(item).strip()})", item
            )
        fields = self.default_fields(item)
        if isinstance(item, tree.Word) and has_wildcard(item.value):
            leaves = default_field_wildcards(fields, item.value)
            if not leaves:
                raise self.error("wildcards need a text or keyword default field", item)
            return make_or(leaves)
        if isinstance(item, tree.Word):
            kind, value, slop, fuzz = "word", unescape(item.value), None, None
        elif isinstance(item, tree.Phrase):
            kind, value, slop, fuzz = "phrase", _phrase_text(item), None, None
        elif isinstance(item, tree.Proximity):
            kind, value, slop, fuzz = "phrase", _phrase_text(item.term), int(item.degree), None
        elif isinstance(item, tree.Fuzzy):
            kind, value, slop = "word", unescape(item.term.value), None
            fuzz = self.fuzziness(item)
        else:
            raise self.error(f"unsupported syntax {str(item).strip()!r}", item)
        return make_or(default_field_search(fields, kind, value, slop=slop, fuzz=fuzz))


def _phrase_text(item: Any) -> str:
    """The text between the quotes of a luqum ``Phrase``, unescaped."""
    return unescape(item.value[1:-1])
