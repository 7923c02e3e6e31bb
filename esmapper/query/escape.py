"""Escaping user input for filter expressions."""

from __future__ import annotations

__all__ = ["escape_query_value"]

#: Characters with a meaning in Lucene query syntax. ``&&`` and ``||`` are escaped character
#: by character, which Lucene accepts; ``'`` cannot start a term in the parser either.
SPECIAL_CHARACTERS = frozenset("+-=&|><!(){}[]^\"~*?:\\/'")
#: Words the parser reads as operators when they stand alone.
RESERVED_WORDS = frozenset({"AND", "OR", "NOT", "TO"})


def escape_query_value(value: str) -> str:
    """Return ``value`` escaped so that it is read back as one literal term.

    Every Lucene special character (``+ - = && || > < ! ( ) { } [ ] ^ " ~ * ? : \\ /``), the
    single quote and every whitespace character get a backslash, so
    ``f"name:{escape_query_value(v)}"`` matches ``v`` literally whatever it holds
    (``John Smith``, ``a:b``, ``50%*``). A value that is exactly an operator word (``AND``,
    ``OR``, ``NOT``, ``TO``) is prefixed with a backslash so it is not read as the operator.
    The empty string becomes ``""`` (an empty phrase), so ``name:""`` stays a valid
    expression. A value holding a line feed (which a backslash cannot escape inside a term)
    is returned as a quoted phrase instead. This is not :func:`re.escape`: regular-expression
    syntax and Lucene syntax differ.
    """
    if value == "":
        return '""'
    if value in RESERVED_WORDS:
        return "\\" + value
    if "\n" in value:
        # A backslash cannot escape a line feed inside a term; a phrase can hold one.
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    out: list[str] = []
    for char in value:
        if char in SPECIAL_CHARACTERS or char.isspace():
            out.append("\\")
        out.append(char)
    return "".join(out)
