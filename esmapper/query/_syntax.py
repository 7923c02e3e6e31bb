"""Parsing a Lucene filter expression with luqum, within bounds.

:func:`parse_lucene` is the only place that calls luqum. It bounds the input (size, nesting,
number of clauses) so that nothing downstream (our recursive compiler, ``to_dict``, the server)
meets a pathological tree, and it turns every luqum failure into a
:class:`~esmapper.errors.QueryValidationError` carrying the 0-based character position.
"""

from __future__ import annotations

import re
import threading
import types
from typing import Any

import luqum.parser
from luqum import tree
from luqum.exceptions import IllegalCharacterError, ParseError
from luqum.head_tail import TokenValue, token_headtail

from esmapper.errors import QueryValidationError

__all__ = ["MAX_CLAUSES", "MAX_DEPTH", "MAX_EXPRESSION_BYTES", "parse_lucene"]

#: Longest accepted expression, in UTF-8 bytes.
MAX_EXPRESSION_BYTES = 8 * 1024
#: Deepest accepted nesting of groups, boolean operations and unary operators.
MAX_DEPTH = 32
#: Most value clauses (terms, phrases, ranges) in one expression.
MAX_CLAUSES = 1024

_POSITION = re.compile(r"position (\d+)")
#: Nodes that open a nesting level (counted against MAX_DEPTH).
_NESTING = (tree.BaseOperation, tree.BaseGroup, tree.UnaryOperator, tree.Boost)
#: Nodes that count as one clause each (a range counts once, not per bound).
_CLAUSES = (tree.Range, tree.OpenRange, tree.Term)


#: Operator spellings luqum does not know but Lucene (and Elasticsearch) accept.
_SYMBOL_OPERATORS = {"&&": "AND_OP", "||": "OR_OP", "!": "NOT"}


def _t_term(t: Any) -> Any:
    """luqum's TERM rule, plus ``&&``, ``||`` and a leading ``!`` as AND, OR and NOT."""
    value = t.value
    if value.startswith("!") and value != "!":
        # "!field:x": emit NOT for the "!" alone and lex the rest again.
        t.lexer.lexpos = t.lexpos + 1
        value = "!"
    kind = _SYMBOL_OPERATORS.get(value)
    if kind is None:
        return luqum.parser.t_TERM(t)
    t.type = kind
    t.value = TokenValue(value)
    token_headtail(t, value)
    return t


_RULES = types.SimpleNamespace(
    **{name: getattr(luqum.parser, name) for name in dir(luqum.parser) if name.startswith("t_")}
)
_RULES.t_TERM = _t_term
_local = threading.local()


def _luqum_parse(text: str) -> Any:
    """luqum's parser with our lexer rules; one lexer per thread (PLY lexers keep state)."""
    lexer = getattr(_local, "lexer", None)
    if lexer is None:
        lexer = _local.lexer = luqum.parser.lexer.clone(_RULES)
        lexer.begin("INITIAL")  # PLY's clone rebinds the rule tables but not the active one
    return luqum.parser.parser.parse(text, lexer=lexer)


def parse_lucene(text: str) -> Any:
    """Parse ``text`` into a luqum tree, or raise ``QueryValidationError``.

    Returns the root ``luqum.tree.Item``; nodes carry ``pos`` (0-based offset) and ``size``.
    Raises for: more than :data:`MAX_EXPRESSION_BYTES` bytes, an unpaired surrogate, a syntax
    error (with its position; the end of the text for a truncated expression), nesting deeper
    than :data:`MAX_DEPTH`, more than :data:`MAX_CLAUSES` clauses.
    """
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise QueryValidationError(
            "The expression contains an unpaired surrogate character",
            position=exc.start,
            expression=text,
        ) from None
    if size > MAX_EXPRESSION_BYTES:
        raise QueryValidationError(
            f"The expression is too long ({size} bytes; at most {MAX_EXPRESSION_BYTES})",
            expression=text,
        )
    try:
        root = _luqum_parse(text)
    except IllegalCharacterError as exc:
        position = _error_position(exc, text)
        char = text[position] if position is not None and position < len(text) else ""
        hint = " (unterminated quote?)" if char == '"' else ""
        raise QueryValidationError(
            f"Syntax error: unexpected character {char!r} at position {position}{hint}",
            position=position,
            expression=text,
        ) from None
    except ParseError as exc:
        position = _error_position(exc, text)
        where = "end of expression" if position == len(text) else f"position {position}"
        raise QueryValidationError(
            f"Syntax error at {where} (unbalanced parentheses, brackets or quotes,"
            " or an operator without operand?)",
            position=position,
            expression=text,
        ) from None
    except (ValueError, ArithmeticError, AssertionError, TypeError, IndexError):
        # luqum converts boost and fuzziness degrees itself (Decimal / int): "a~1.2.3".
        raise QueryValidationError(
            "Syntax error: invalid boost (^) or fuzziness/proximity (~) value",
            expression=text,
        ) from None
    check_bounds(root, text)
    return root


def _error_position(exc: Exception, text: str) -> int | None:
    """The offset luqum names in its message ("position N"), or the end of the text."""
    match = _POSITION.search(str(exc))
    if match:
        return int(match.group(1))
    if "the end" in str(exc):
        return len(text)
    return None


def check_bounds(root: Any, text: str) -> None:
    """Raise ``QueryValidationError`` if the tree is deeper than MAX_DEPTH or has too many clauses.

    Walks the tree with an explicit stack, so a degenerate tree cannot exhaust the Python stack.
    """
    clauses = 0
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, _NESTING):
            depth += 1
            if depth > MAX_DEPTH:
                raise QueryValidationError(
                    f"The expression is nested too deeply (more than {MAX_DEPTH} levels of"
                    " groups and operators)",
                    position=node.pos,
                    expression=text,
                )
        if isinstance(node, _CLAUSES):
            clauses += 1
            if clauses > MAX_CLAUSES:
                raise QueryValidationError(
                    f"The expression has too many clauses (more than {MAX_CLAUSES})",
                    position=node.pos,
                    expression=text,
                )
            continue
        stack.extend((child, depth) for child in reversed(node.children))
