"""compile_filter is safe to call from several threads (PLY lexers keep state per thread)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from esmapper.errors import QueryValidationError
from esmapper.query import compile_filter

from .mapping import CATALOG

EXPRESSIONS = [
    "age:>=25 AND email:x",
    "reviews.rating:5 AND reviews.author:bob",
    'name:"john smith" OR bio:chess',
    "created_utc:[2026-01-01 TO now] -is_active:false",
    "email:(a OR b OR c) && !age:3",
    "age:abc",
    "(age:1",
]


def _compile(expr: str) -> object:
    try:
        compiled = compile_filter(expr, CATALOG)
    except QueryValidationError as err:
        return ("error", str(err), err.position)
    assert compiled.query is not None
    return compiled.query.to_dict()


def test_concurrent_compilation_gives_the_sequential_results() -> None:
    expected = {expr: _compile(expr) for expr in EXPRESSIONS}
    work = EXPRESSIONS * 300
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(_compile, work))
    assert results == [expected[expr] for expr in work]
