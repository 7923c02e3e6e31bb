"""escape_query_value: Lucene escaping, not re.escape."""

from __future__ import annotations

import re

import pytest

from esmapper.query import compile_filter, escape_query_value

from .mapping import CATALOG


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("plain", "plain"),
        ("a+b-c=d", "a\\+b\\-c\\=d"),
        ("a&&b||c", "a\\&\\&b\\|\\|c"),
        ("<>!", "\\<\\>\\!"),
        ("(){}[]", "\\(\\)\\{\\}\\[\\]"),
        ('^"~*?:', '\\^\\"\\~\\*\\?\\:'),
        ("a\\b/c", "a\\\\b\\/c"),
        ("John Smith", "John\\ Smith"),
        ("tab\there", "tab\\\there"),
        ("it's", "it\\'s"),
        ("AND", "\\AND"),
        ("OR", "\\OR"),
        ("NOT", "\\NOT"),
        ("TO", "\\TO"),
        ("ANDY", "ANDY"),
        ("", '""'),
        ("line\nbreak", '"line\nbreak"'),
        ('a"\nb\\', '"a\\"\nb\\\\"'),
        ("café.日本", "café.日本"),
        ("50%", "50%"),
    ],
)
def test_escape(value: str, escaped: str) -> None:
    assert escape_query_value(value) == escaped


def test_not_re_escape() -> None:
    assert escape_query_value("a.b$c") == "a.b$c"
    assert escape_query_value("a.b$c") != re.escape("a.b$c")


@pytest.mark.parametrize("value", ["a b", "x:y", "(1 OR 2)", "AND", "*", "-neg", "!", "é è"])
def test_escaped_values_match_literally(value: str) -> None:
    compiled = compile_filter(f"email:{escape_query_value(value)}", CATALOG)
    assert compiled.query is not None
    assert compiled.query.to_dict() == {"term": {"email": value}}


def test_escaped_values_on_text_fields_are_one_match() -> None:
    compiled = compile_filter(f"name:{escape_query_value('John (Jr.) Smith')}", CATALOG)
    assert compiled.query is not None
    assert compiled.query.to_dict() == {
        "match": {"name": {"query": "John (Jr.) Smith", "operator": "and"}}
    }
