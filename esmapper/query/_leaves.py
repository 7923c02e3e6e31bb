"""The leaf queries of a filter: one value (or range, or pattern) on one field.

Each builder checks that the operation fits the field's mapping type, converts the value
(:func:`~esmapper.query._values.coerce_value`) and returns a :class:`~esmapper.query._nested.Leaf`
(the query plus the nested paths around the field). Errors are
:class:`~esmapper.errors.QueryValidationError` with the field and the position of the value.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import attrs
from elasticsearch.dsl import Q

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import EXACT_TYPES, NUMERIC_TYPES, FieldCatalog, FieldInfo
from esmapper.query._nested import Leaf
from esmapper.query._values import coerce_value, date_span

__all__ = [
    "STRING_TYPES",
    "Target",
    "default_field_search",
    "default_field_wildcards",
    "fuzziness",
    "has_wildcard",
    "unescape",
    "wildcard_pattern",
]

#: Exact types that hold strings (wildcards, regular expressions and fuzziness apply).
STRING_TYPES = frozenset({"keyword", "constant_keyword", "wildcard"})
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def unescape(raw: str) -> str:
    """``raw`` with Lucene backslash escapes removed (``a\\:b`` -> ``a:b``)."""
    return _ESCAPE.sub(r"\1", raw)


def has_wildcard(raw: str) -> bool:
    """True when ``raw`` holds an unescaped ``*`` or ``?``."""
    escaped = False
    for char in raw:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "*?":
            return True
    return False


def wildcard_pattern(raw: str) -> str:
    """The ``wildcard`` query pattern for ``raw``: escapes kept only for ``* ? \\``."""
    out: list[str] = []
    chars = iter(raw)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append("\\" + nxt if nxt in ("*", "?", "\\") else nxt)
        else:
            out.append(char)
    return "".join(out)


def fuzziness(degree: Any, implicit: bool) -> str | int | None:
    """Elasticsearch ``fuzziness`` for a luqum degree: ``AUTO``, 0, 1 or 2; None if invalid."""
    if implicit:
        return "AUTO"
    value = Decimal(degree)
    if value == value.to_integral_value() and 0 <= value <= 2:
        return int(value)
    if 0 < value < 1:  # classic Lucene similarity (``~0.8``): let Elasticsearch choose
        return "AUTO"
    return None


@attrs.frozen
class Target:
    """A resolved field in an expression: the name as written, its catalog entry, the text."""

    name: str
    info: FieldInfo
    catalog: FieldCatalog
    expression: str

    @property
    def paths(self) -> tuple[str, ...]:
        return self.info.nested_paths

    def error(self, message: str, position: int | None) -> QueryValidationError:
        """A ``QueryValidationError`` about this field at ``position``."""
        return QueryValidationError(
            message, field=self.name, position=position, expression=self.expression
        )

    def _describe(self) -> str:
        return f"field {self.name!r} ({self.info.type})"

    def _check_queryable(self, position: int | None) -> None:
        if self.info.is_container:
            raise self.error(
                f"{self._describe()} is an object; query one of its fields"
                f" (e.g. {self.name}.<field>) or use _exists_:{self.name}",
                position,
            )
        if not (self.info.is_text or self.info.type in EXACT_TYPES):
            raise self.error(f"{self._describe()} cannot be searched by value", position)

    def coerce(self, value: str, position: int | None, info: FieldInfo | None = None) -> Any:
        """``value`` converted for ``info`` (default: this field)."""
        return coerce_value(
            info or self.info,
            value,
            field=self.name,
            position=position,
            expression=self.expression,
        )

    def exists(self) -> Leaf:
        """Documents where the field has a value (a nested field: any nested object).

        An empty string is no value, as the reference's ``FieldEmpty``/``FieldHasValue``
        read it (null or empty): on a keyword field, or a text field with a keyword
        subfield, the ``exists`` excludes the documents whose only value is ``""``
        (``_missing_:x``, the negation, matches them): the ``must_not`` is "holds ``""``
        and no other (non-empty) term", so a list ``["x", ""]`` still has a value (a
        ``range`` ``gt ""`` on the exact field: any non-empty term). A text field without
        a keyword subfield cannot tell ``""`` apart: ``exists`` alone."""
        info = self.info
        if info.type == "nested":
            return Leaf(Q("match_all"), (*self.paths, info.path))
        exists = Q("exists", field=info.path)
        exact = info.keyword if info.is_text else info.path
        if exact is None or not (info.is_text or info.type in STRING_TYPES):
            return Leaf(exists, self.paths)
        only_empty = Q(
            "bool",
            filter=[Q("term", **{exact: ""})],
            must_not=[Q("range", **{exact: {"gt": ""}})],
        )
        return Leaf(Q("bool", filter=[exists], must_not=[only_empty]), self.paths)

    def equals(self, value: str, position: int | None) -> Leaf:
        """``field:value``: ``match`` (operator and) on text, ``term`` on exact fields."""
        self._check_queryable(position)
        if self.info.is_text:
            body = {"query": value, "operator": "and"}
            return Leaf(Q("match", **{self.info.path: body}), self.paths)
        return Leaf(Q("term", **{self.info.path: self.coerce(value, position)}), self.paths)

    def phrase(self, value: str, position: int | None, slop: int | None = None) -> Leaf:
        """``field:"a phrase"``: ``match_phrase`` on text, ``term`` on exact fields."""
        self._check_queryable(position)
        if self.info.is_text:
            body: Any = value if slop is None else {"query": value, "slop": slop}
            return Leaf(Q("match_phrase", **{self.info.path: body}), self.paths)
        if slop is not None:
            raise self.error(
                f"proximity (~) needs a text field; {self._describe()} is not", position
            )
        return Leaf(Q("term", **{self.info.path: self.coerce(value, position)}), self.paths)

    def _pattern_target(self, what: str, position: int | None) -> None:
        self._check_queryable(position)
        if not (self.info.is_text or self.info.type in STRING_TYPES):
            raise self.error(
                f"{what} need a keyword or text field; {self._describe()} is not", position
            )

    def wildcard(self, raw: str, position: int | None) -> Leaf:
        """``field:jo*n?``: ``wildcard`` (case-insensitive on text, exact on keyword)."""
        self._pattern_target("wildcards (* and ?)", position)
        body: dict[str, Any] = {"value": wildcard_pattern(raw)}
        if self.info.is_text:
            body["case_insensitive"] = True
        return Leaf(Q("wildcard", **{self.info.path: body}), self.paths)

    def regexp(self, pattern: str, position: int | None) -> Leaf:
        """``field:/jo.n/``: ``regexp`` (case-insensitive on text, exact on keyword)."""
        self._pattern_target("regular expressions", position)
        body: dict[str, Any] = {"value": pattern}
        if self.info.is_text:
            body["case_insensitive"] = True
        return Leaf(Q("regexp", **{self.info.path: body}), self.paths)

    def fuzzy(self, value: str, fuzz: str | int, position: int | None) -> Leaf:
        """``field:jon~1``: ``match`` with fuzziness on text, ``fuzzy`` on keyword."""
        self._pattern_target("fuzzy searches (~)", position)
        if self.info.is_text:
            body = {"query": value, "operator": "and", "fuzziness": fuzz}
            return Leaf(Q("match", **{self.info.path: body}), self.paths)
        return Leaf(Q("fuzzy", **{self.info.path: {"value": value, "fuzziness": fuzz}}), self.paths)

    def range(
        self,
        low: tuple[str, int | None] | None,
        high: tuple[str, int | None] | None,
        *,
        include_low: bool,
        include_high: bool,
        position: int | None,
    ) -> Leaf:
        """A ``range`` between the bounds (``None`` = open); both open means ``exists``.

        Numbers and dates range on the field, strings on the field or, for a text field,
        on its keyword subfield (an error if it has none). Booleans cannot be ranged.
        """
        self._check_queryable(position)
        info = self.info
        if info.is_text:
            if info.keyword is None:
                raise self.error(
                    f"a range needs an exact value; text {self._describe()} has no keyword"
                    " subfield to range on",
                    position,
                )
            info = self.catalog.resolve(info.keyword)
        elif info.type == "boolean":
            raise self.error(f"a range makes no sense on {self._describe()}", position)
        if low is None and high is None:
            return Leaf(Q("exists", field=info.path), self.paths)
        body: dict[str, Any] = {}
        if low is not None:
            body["gte" if include_low else "gt"] = self.coerce(low[0], low[1], info)
        if high is not None:
            body["lte" if include_high else "lt"] = self.coerce(high[0], high[1], info)
        if low is not None and high is not None:
            exclusive = not (include_low and include_high)
            self._check_not_inverted(info, low[0], high[0], exclusive, position)
        return Leaf(Q("range", **{info.path: body}), self.paths)

    def _check_not_inverted(
        self, info: FieldInfo, low: str, high: str, exclusive: bool, position: int | None
    ) -> None:
        """Refuse a range that can match nothing because its bounds are the wrong way round:
        a start after the end (numbers; absolute dates, the start's first instant after the
        end's last: ``[2026-02 TO 2026-01]``), or the same bound on both sides with one
        side excluded (``{5 TO 5]``). Date math (``now-1d``) is not compared; strings are
        not either (their order is the server's)."""
        if low == high:
            inverted = exclusive and (info.is_date or info.type in NUMERIC_TYPES)
        elif info.is_date:
            first, last = date_span(low), date_span(high)
            inverted = first is not None and last is not None and first[0] > last[1]
        elif info.type in NUMERIC_TYPES:
            inverted = float(low) > float(high)
        else:
            inverted = False
        if inverted:
            raise self.error(
                f"the range from {low} to {high} on {self._describe()} matches nothing: its"
                + (
                    f" bounds are equal and one is excluded (write [{low} TO {high}])"
                    if low == high
                    else " start is after its end (write the earlier bound first)"
                ),
                position,
            )


def default_field_search(
    fields: list[FieldInfo], kind: str, value: str, *, slop: int | None, fuzz: str | int | None
) -> list[Leaf]:
    """``multi_match`` leaves for a bare term: one per nested path among ``fields``.

    ``kind`` is ``"word"`` (operator and) or ``"phrase"`` (``type: phrase``, with ``slop``).
    ``lenient`` is set when some field is not text (numbers would otherwise fail).
    """
    by_paths: dict[tuple[str, ...], list[FieldInfo]] = {}
    for info in fields:
        by_paths.setdefault(info.nested_paths, []).append(info)
    leaves: list[Leaf] = []
    for paths, infos in by_paths.items():
        body: dict[str, Any] = {"query": value, "fields": [i.path for i in infos]}
        if kind == "phrase":
            body["type"] = "phrase"
            if slop is not None:
                body["slop"] = slop
        else:
            body["operator"] = "and"
            if fuzz is not None:
                body["fuzziness"] = fuzz
        if any(not i.is_text for i in infos):
            body["lenient"] = True
        leaves.append(Leaf(Q("multi_match", **body), paths))
    return leaves


def default_field_wildcards(fields: list[FieldInfo], raw: str) -> list[Leaf]:
    """Case-insensitive ``wildcard`` leaves for a bare pattern, one per string field."""
    pattern = wildcard_pattern(raw)
    return [
        Leaf(
            Q("wildcard", **{i.path: {"value": pattern, "case_insensitive": True}}),
            i.nested_paths,
        )
        for i in fields
        if i.is_text or i.type in STRING_TYPES
    ]
