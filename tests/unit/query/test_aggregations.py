"""compile_aggregations: golden table and errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esmapper.errors import QueryValidationError
from esmapper.query import compile_aggregations

from .mapping import CATALOG

GOLDEN: list[tuple[str, dict[str, Any]]] = [
    ("", {}),
    ("terms:company_id", {"terms_company_id": {"terms": {"field": "company_id"}}}),
    ("terms:name", {"terms_name": {"terms": {"field": "name.keyword"}}}),
    ("terms:age", {"terms_age": {"terms": {"field": "age"}}}),
    ("terms:company_id~20", {"terms_company_id": {"terms": {"field": "company_id", "size": 20}}}),
    (
        "terms:company_id^2",
        {"terms_company_id": {"terms": {"field": "company_id", "min_doc_count": 2}}},
    ),
    (
        "terms:(company_id @include:a @include:b @exclude:c @missing:none @min:0)",
        {
            "terms_company_id": {
                "terms": {
                    "field": "company_id",
                    "include": ["a", "b"],
                    "exclude": ["c"],
                    "missing": "none",
                    "min_doc_count": 0,
                }
            }
        },
    ),
    (
        'terms:(company_id @include:"a b")',
        {"terms_company_id": {"terms": {"field": "company_id", "include": ["a b"]}}},
    ),
    ("min:age", {"min_age": {"min": {"field": "age"}}}),
    ("max:created_utc", {"max_created_utc": {"max": {"field": "created_utc"}}}),
    ("avg:score", {"avg_score": {"avg": {"field": "score"}}}),
    ("sum:visits", {"sum_visits": {"sum": {"field": "visits"}}}),
    ("stats:age", {"stats_age": {"stats": {"field": "age"}}}),
    ("cardinality:email", {"cardinality_email": {"cardinality": {"field": "email"}}}),
    ("cardinality:name", {"cardinality_name": {"cardinality": {"field": "name.keyword"}}}),
    ("missing:email", {"missing_email": {"missing": {"field": "email"}}}),
    ("percentiles:age", {"percentiles_age": {"percentiles": {"field": "age"}}}),
    (
        "percentiles:age~25,50,99.9",
        {"percentiles_age": {"percentiles": {"field": "age", "percents": [25.0, 50.0, 99.9]}}},
    ),
    (
        "date:created_utc",
        {
            "date_created_utc": {
                "date_histogram": {"field": "created_utc", "calendar_interval": "1d"}
            }
        },
    ),
    *[
        (
            f"date:created_utc~{interval}",
            {"date_created_utc": {"date_histogram": {"field": "created_utc", key: value}}},
        )
        for interval, key, value in [
            ("1d", "calendar_interval", "1d"),
            ("1w", "calendar_interval", "1w"),
            ("1M", "calendar_interval", "1M"),
            ("1q", "calendar_interval", "1q"),
            ("1y", "calendar_interval", "1y"),
            ("M", "calendar_interval", "1M"),
            ("month", "calendar_interval", "1M"),
            ("5m", "fixed_interval", "5m"),
            ("12h", "fixed_interval", "12h"),
            ("1h", "fixed_interval", "1h"),
            ("30s", "fixed_interval", "30s"),
            ("2d", "fixed_interval", "2d"),
        ]
    ],
    (
        "date:created_utc~1M^Europe/Paris",
        {
            "date_created_utc": {
                "date_histogram": {
                    "field": "created_utc",
                    "calendar_interval": "1M",
                    "time_zone": "Europe/Paris",
                }
            }
        },
    ),
    (
        "terms:company_id avg:age max:created_utc cardinality:email date:created_utc~1M",
        {
            "terms_company_id": {"terms": {"field": "company_id"}},
            "avg_age": {"avg": {"field": "age"}},
            "max_created_utc": {"max": {"field": "created_utc"}},
            "cardinality_email": {"cardinality": {"field": "email"}},
            "date_created_utc": {
                "date_histogram": {"field": "created_utc", "calendar_interval": "1M"}
            },
        },
    ),
    # sub-aggregations, top hits, ordering
    (
        "terms:(company_id avg:age tophits:_)",
        {
            "terms_company_id": {
                "terms": {"field": "company_id"},
                "aggs": {"avg_age": {"avg": {"field": "age"}}, "tophits": {"top_hits": {}}},
            }
        },
    ),
    (
        "terms:(company_id~5 tophits:_~3)",
        {
            "terms_company_id": {
                "terms": {"field": "company_id", "size": 5},
                "aggs": {"tophits": {"top_hits": {"size": 3}}},
            }
        },
    ),
    (
        "terms:(company_id -avg:age +max:score)",
        {
            "terms_company_id": {
                "terms": {
                    "field": "company_id",
                    "order": [{"avg_age": "desc"}, {"max_score": "asc"}],
                },
                "aggs": {
                    "avg_age": {"avg": {"field": "age"}},
                    "max_score": {"max": {"field": "score"}},
                },
            }
        },
    ),
    (
        "date:(created_utc~1M terms:(company_id cardinality:email))",
        {
            "date_created_utc": {
                "date_histogram": {"field": "created_utc", "calendar_interval": "1M"},
                "aggs": {
                    "terms_company_id": {
                        "terms": {"field": "company_id"},
                        "aggs": {"cardinality_email": {"cardinality": {"field": "email"}}},
                    }
                },
            }
        },
    ),
    (
        "missing:(email avg:age)",
        {
            "missing_email": {
                "missing": {"field": "email"},
                "aggs": {"avg_age": {"avg": {"field": "age"}}},
            }
        },
    ),
    # nested fields: one nested_{path} wrapper per level
    (
        "terms:reviews.rating min:reviews.rating max:reviews.rating",
        {
            "nested_reviews": {
                "nested": {"path": "reviews"},
                "aggs": {
                    "terms_reviews.rating": {"terms": {"field": "reviews.rating"}},
                    "min_reviews.rating": {"min": {"field": "reviews.rating"}},
                    "max_reviews.rating": {"max": {"field": "reviews.rating"}},
                },
            }
        },
    ),
    (
        "terms:reviews.author avg:age terms:reviews.replies.by",
        {
            "nested_reviews": {
                "nested": {"path": "reviews"},
                "aggs": {
                    "terms_reviews.author": {"terms": {"field": "reviews.author"}},
                    "nested_reviews.replies": {
                        "nested": {"path": "reviews.replies"},
                        "aggs": {
                            "terms_reviews.replies.by": {"terms": {"field": "reviews.replies.by"}}
                        },
                    },
                },
            },
            "avg_age": {"avg": {"field": "age"}},
        },
    ),
    (
        "terms:(reviews.author @include:emp1 @include:emp2)",
        {
            "nested_reviews": {
                "nested": {"path": "reviews"},
                "aggs": {
                    "terms_reviews.author": {
                        "terms": {"field": "reviews.author", "include": ["emp1", "emp2"]}
                    }
                },
            }
        },
    ),
    (
        "terms:(company_id avg:reviews.rating)",
        {
            "terms_company_id": {
                "terms": {"field": "company_id"},
                "aggs": {
                    "nested_reviews": {
                        "nested": {"path": "reviews"},
                        "aggs": {"avg_reviews.rating": {"avg": {"field": "reviews.rating"}}},
                    }
                },
            }
        },
    ),
    (
        "terms:(reviews.author avg:reviews.rating cardinality:company_id)",
        {
            "nested_reviews": {
                "nested": {"path": "reviews"},
                "aggs": {
                    "terms_reviews.author": {
                        "terms": {"field": "reviews.author"},
                        "aggs": {
                            "avg_reviews.rating": {"avg": {"field": "reviews.rating"}},
                            "reverse_nested": {
                                "reverse_nested": {},
                                "aggs": {
                                    "cardinality_company_id": {
                                        "cardinality": {"field": "company_id"}
                                    }
                                },
                            },
                        },
                    }
                },
            }
        },
    ),
    (
        "terms:(reviews.replies.by terms:reviews.author)",
        {
            "nested_reviews": {
                "nested": {"path": "reviews"},
                "aggs": {
                    "nested_reviews.replies": {
                        "nested": {"path": "reviews.replies"},
                        "aggs": {
                            "terms_reviews.replies.by": {
                                "terms": {"field": "reviews.replies.by"},
                                "aggs": {
                                    "reverse_nested_reviews": {
                                        "reverse_nested": {"path": "reviews"},
                                        "aggs": {
                                            "terms_reviews.author": {
                                                "terms": {"field": "reviews.author"}
                                            }
                                        },
                                    }
                                },
                            }
                        },
                    }
                },
            }
        },
    ),
]


@pytest.mark.parametrize(("expr", "expected"), GOLDEN, ids=[g[0] or "<empty>" for g in GOLDEN])
def test_golden(expr: str, expected: dict[str, Any]) -> None:
    assert compile_aggregations(expr, CATALOG) == expected


def test_none_compiles_to_nothing() -> None:
    assert compile_aggregations(None, CATALOG) == {}


ERRORS: list[tuple[str, str | None, int, str]] = [
    ("foo:age", None, 0, "Unknown aggregation 'foo'"),
    ("avg:nope", "nope", 4, "Unknown field 'nope'"),
    ("terms:nmae", "nmae", 6, "did you mean 'name'"),
    ("avg:email", "email", 4, "needs a numeric or date field"),
    ("sum:name", "name", 4, "needs a numeric or date field"),
    ("terms:bio", "bio", 6, "no keyword subfield"),
    ("cardinality:bio", "bio", 12, "no keyword subfield"),
    ("terms:address", "address", 6, "is an object"),
    ("date:age", "age", 5, "needs a date field"),
    ("date:created_utc~2M", None, 17, "Invalid interval"),
    ("date:created_utc~fortnight", None, 17, "Invalid interval"),
    ("date:created_utc~0d", None, 17, "Invalid interval"),
    ("terms:email~0", None, 12, "size"),
    ("terms:email~x", None, 12, "size"),
    ("terms:email^x", None, 12, "min_doc_count"),
    ("avg:age~3", None, 8, "'~' is not valid on avg"),
    ("avg:age^3", None, 8, "'^' is not valid on avg"),
    ("percentiles:age~50,x", None, 16, "percentiles"),
    ("percentiles:age~101", None, 16, "percentiles"),
    ("tophits:_", None, 0, "only allowed inside a bucket aggregation"),
    ("terms:(email tophits:age)", None, 21, "tophits:_"),
    ("avg:(age max:age)", None, 9, "takes no sub-aggregations"),
    ("avg:(age @include:x)", None, 9, "only valid in terms"),
    ("terms:(email @what:x)", None, 13, "Unknown option @what"),
    ("terms:(email @min:x)", None, 13, "@min"),
    ("-avg:age", None, 1, "orders the buckets of a terms aggregation"),
    ("terms:(email -terms:age)", None, 14, "single-value metrics"),
    ("date:(created_utc -avg:age)", None, 19, "only terms buckets"),
    ("terms:(email -avg:reviews.rating)", None, 14, "nested field"),
    ("avg:age avg:age", None, 8, "Duplicate aggregation name 'avg_age'"),
    ("terms", None, 5, "expected ':'"),
    ("terms:", None, 6, "expected a field name"),
    ("terms:(email", None, 12, "expected ')'"),
    ("terms:email)", None, 11, "unbalanced ')'"),
    ("terms:(email avg:age))", None, 21, "unbalanced ')'"),
    ("terms:email:x", None, 11, "unexpected ':'"),
    ('terms:(email @include:"x)', None, 22, "unterminated quote"),
]


@pytest.mark.parametrize(("expr", "field", "position", "words"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(expr: str, field: str | None, position: int, words: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_aggregations(expr, CATALOG)
    assert words in str(info.value)
    assert info.value.field == field
    assert info.value.position == position
    assert info.value.expression == expr


def test_bounds() -> None:
    with pytest.raises(QueryValidationError, match="too long"):
        compile_aggregations("avg:age " * 2000, CATALOG)
    with pytest.raises(QueryValidationError, match="nested deeper"):
        compile_aggregations("terms:(email " * 40 + ")" * 40, CATALOG)


AGG_TOKENS = [
    "terms", "avg", "date", "tophits", "missing", "percentiles", "nope", ":", "(", ")", "~",
    "^", "@include", "@exclude", "@min", "-", "+", "email", "age", "created_utc", "name",
    "reviews.rating", "_", "1M", "5m", "20", '"', "x",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.lists(
            st.tuples(st.sampled_from(AGG_TOKENS), st.sampled_from(["", " "])), max_size=20
        ).map(lambda parts: "".join(a + b for a, b in parts)),
    )
)
def test_any_text_compiles_or_raises_query_validation_error(text: str) -> None:
    try:
        compile_aggregations(text, CATALOG)
    except QueryValidationError as err:
        assert err.position is None or 0 <= err.position <= len(text)
