"""Parsing aggregation expressions into a small tree of :class:`AggSpec`.

Grammar (whitespace separates items; positions are 0-based offsets)::

    expression := item*
    item       := ["+" | "-"] op ":" (target | "(" target (item | option)* ")")
    target     := field ["~" value] ["^" value]
    option     := "@" name ":" value
    value      := characters up to whitespace or a parenthesis, or a "quoted string"

``+``/``-`` before an item orders the enclosing ``terms`` aggregation by it.
"""

from __future__ import annotations

from collections.abc import Container

import attrs

from esmapper.errors import QueryValidationError

__all__ = ["AggOption", "AggSpec", "parse_aggregation_expression"]

MAX_AGG_EXPRESSION_BYTES = 8 * 1024
MAX_AGG_DEPTH = 32
MAX_AGGS = 1024

_STOP = frozenset('()~^:@"')


@attrs.frozen
class AggOption:
    """``@name:value`` inside parentheses."""

    name: str
    value: str
    position: int


@attrs.frozen
class AggSpec:
    """One ``op:field`` item with its modifiers, options and sub-aggregations."""

    op: str
    op_position: int
    field: str
    field_position: int
    modifier: str | None = None  # after "~"
    modifier_position: int | None = None
    boost: str | None = None  # after "^"
    boost_position: int | None = None
    order: str | None = None  # "asc" (+) / "desc" (-) when it orders its parent
    options: tuple[AggOption, ...] = ()
    children: tuple[AggSpec, ...] = ()


def parse_aggregation_expression(text: str) -> list[AggSpec]:
    """The top-level items of ``text``; ``QueryValidationError`` with the position on error."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_AGG_EXPRESSION_BYTES:
        raise QueryValidationError(
            f"The aggregation expression is too long ({size} bytes; at most"
            f" {MAX_AGG_EXPRESSION_BYTES})",
            expression=text,
        )
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.count = 0

    def error(self, message: str, position: int | None = None) -> QueryValidationError:
        at = self.pos if position is None else position
        return QueryValidationError(
            f"Invalid aggregation expression: {message} at position {at}",
            position=at,
            expression=self.text,
        )

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def parse(self) -> list[AggSpec]:
        items: list[AggSpec] = []
        while True:
            self.skip_spaces()
            if self.pos >= len(self.text):
                return items
            if self.peek() == ")":
                raise self.error("unbalanced ')'")
            items.append(self.item(0))

    def run(self, stop: Container[str]) -> int:
        """Move past the characters before whitespace, one of ``stop`` or the end; returns
        where they began."""
        start = self.pos
        while self.peek() and not self.peek().isspace() and self.peek() not in stop:
            self.pos += 1
        return start

    def word(self, what: str) -> tuple[str, int]:
        start = self.run(_STOP)
        if self.pos == start:
            found = repr(self.peek()) if self.peek() else "end of expression"
            raise self.error(f"expected {what}, found {found}")
        return self.text[start : self.pos], start

    def value(self, what: str) -> tuple[str, int]:
        if self.peek() != '"':
            start = self.run("()^")
            if self.pos == start:
                raise self.error(f"expected {what}")
            return self.text[start : self.pos], start
        start = self.pos
        end = self.text.find('"', start + 1)
        if end < 0:
            raise self.error("unterminated quote", start)
        self.pos = end + 1
        return self.text[start + 1 : end], start

    def item(self, depth: int) -> AggSpec:
        self.count += 1
        if self.count > MAX_AGGS:
            raise self.error(f"more than {MAX_AGGS} aggregations")
        order = None
        if self.peek() in ("+", "-"):
            order = "asc" if self.peek() == "+" else "desc"
            self.pos += 1
        op, op_pos = self.word("an operation such as terms, avg or date")
        if self.peek() != ":":
            raise self.error(f"expected ':' after {op!r} (write {op}:field)")
        self.pos += 1
        if self.peek() != "(":
            return self.target(op, op_pos, order, depth, grouped=False)
        if depth >= MAX_AGG_DEPTH:
            raise self.error(f"nested deeper than {MAX_AGG_DEPTH} levels")
        self.pos += 1
        self.skip_spaces()
        return self.target(op, op_pos, order, depth, grouped=True)

    def target(
        self, op: str, op_pos: int, order: str | None, depth: int, *, grouped: bool
    ) -> AggSpec:
        field, field_pos = self.word("a field name")
        modifier = modifier_pos = boost = boost_pos = None
        if self.peek() == "~":
            self.pos += 1
            modifier, modifier_pos = self.value("a value after '~'")
        if self.peek() == "^":
            self.pos += 1
            boost, boost_pos = self.value("a value after '^'")
        options: list[AggOption] = []
        children: list[AggSpec] = []
        if grouped:
            while True:
                self.skip_spaces()
                char = self.peek()
                if char == ")":
                    self.pos += 1
                    break
                if not char:
                    raise self.error("expected ')'")
                if char == "@":
                    self.pos += 1
                    name, name_pos = self.word("an option name")
                    if self.peek() != ":":
                        raise self.error(f"expected ':' after @{name}")
                    self.pos += 1
                    value, _ = self.value(f"a value for @{name}")
                    options.append(AggOption(name, value, name_pos - 1))
                else:
                    children.append(self.item(depth + 1))
        char = self.peek()
        if char and not char.isspace() and char != ")":
            raise self.error(f"unexpected {char!r}")
        return AggSpec(
            op=op,
            op_position=op_pos,
            field=field,
            field_position=field_pos,
            modifier=modifier,
            modifier_position=modifier_pos,
            boost=boost,
            boost_position=boost_pos,
            order=order,
            options=tuple(options),
            children=tuple(children),
        )
