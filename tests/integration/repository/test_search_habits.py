"""What a user coming from elasticsearch.dsl reaches for, on the server: relevance on
soft-delete models, limit=0, search_after from any sorted page, sort dicts, A() and dict
aggregations, results[0], highlight, the unknown-keyword error, aggregate(filter, ...) and
the query signals."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from elasticsearch.dsl import A

import esmapper as em
from esmapper import signals
from tests.integration.conftest import MakeMapper

from .models import Employee


class Plain(em.Document):
    """The same searchable name as Employee, without soft deletes (or any trait)."""

    class Index:
        name = "plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")


# least relevant for "apple" first, so that index order is the wrong answer
FRUIT = [
    ("low", "apple crumble with pears, plums, cherries, figs and a pinch of cinnamon"),
    ("none", "banana bread"),
    ("mid", "apple tart with apple"),
    ("best", "apple apple apple"),
]


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Employee, Plain, configure=True)


@pytest.fixture
def staff(employees: em.Repository[Employee]) -> list[Employee]:
    """18 employees, three of each age from 20 to 25 (ties for the id tiebreaker)."""
    docs = [
        Employee(
            id=f"e{i:02d}",
            name=f"Person {i:02d}",
            age=20 + i // 3,
            company_id="acme" if i % 3 else "initech",
            hired=datetime(2024, 1, 1 + i, tzinfo=timezone.utc) if i % 2 else None,
        )
        for i in range(18)
    ]
    return employees.add(docs, consistency="wait")


def by_age_desc_then_id(staff: list[Employee]) -> list[str]:
    return [d.id for d in sorted(staff, key=lambda d: (-d.age, d.id))]  # type: ignore[arg-type]


# -- relevance -----------------------------------------------------------------------------


def test_a_soft_delete_model_ranks_a_bare_term_search_like_a_plain_one(
    mapper: em.Mapper, employees: em.Repository[Employee]
) -> None:
    plain = mapper.repository(Plain)
    employees.add([Employee(id=i, name=n) for i, n in FRUIT], consistency="wait")
    plain.add([Plain(id=i, name=n) for i, n in FRUIT], consistency="wait")

    soft_hits, plain_hits = employees.find("apple").hits, plain.find("apple").hits

    assert [h.id for h in soft_hits] == [h.id for h in plain_hits] == ["best", "mid", "low"]
    assert [h.score for h in soft_hits] == pytest.approx([h.score for h in plain_hits])
    scores = [h.score or 0.0 for h in soft_hits]
    assert scores[-1] > 0 and scores == sorted(scores, reverse=True)


def test_soft_deleted_documents_stay_out_without_flattening_the_scores(
    employees: em.Repository[Employee],
) -> None:
    employees.add([Employee(id=i, name=n) for i, n in FRUIT], consistency="wait")
    best = employees.get("best")
    assert best is not None
    best.is_deleted = True
    employees.save(best)  # no refresh: the recently-deleted hint hides it (must_not)

    hits = employees.find("apple").hits

    assert [h.id for h in hits] == ["mid", "low"]
    assert (hits[0].score or 0.0) > (hits[1].score or 0.0) > 0


# -- limit=0 -----------------------------------------------------------------------------


@pytest.mark.parametrize("paging", [{}, {"search_after": True}])
def test_limit_zero_counts_and_aggregates_and_has_no_next_page(
    employees: em.Repository[Employee], staff: list[Employee], paging: dict[str, Any]
) -> None:
    results = employees.find(aggregations="terms:company_id", limit=0, **paging)

    assert (len(results), results.total, results.has_more) == (0, 18, False)
    assert results.next_page() is False
    companies = results.aggregations.terms("terms_company_id")
    assert {b.key: b.total for b in companies.buckets} == {"acme": 12, "initech": 6}
    # elasticsearch.dsl's name for a bucket's count reads the same number
    assert [b.doc_count for b in companies.buckets] == [b.total for b in companies.buckets]


# -- search_after from any sorted page ------------------------------------------------------


def test_the_last_hit_of_a_sorted_page_continues_with_search_after(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    first = employees.find(sort="-age", limit=10)
    assert first.hits[-1].sort == [first.hits[-1].document.age, first.hits[-1].id]

    rest = employees.find(sort="-age", search_after=first.hits[-1].sort, limit=100)
    by_token = employees.find(sort="-age", search_after=first.search_after_token, limit=100)

    assert [d.id for d in first] + [d.id for d in rest] == by_age_desc_then_id(staff)
    assert [d.id for d in by_token] == [d.id for d in rest]


def test_page_paging_of_a_sorted_search_is_in_tiebreaker_order(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    results = employees.find(sort={"age": "desc"}, limit=4)
    ids = [d.id for d in results]
    while results.next_page():
        ids += [d.id for d in results]
    assert ids == by_age_desc_then_id(staff)


def test_search_after_values_that_do_not_fit_the_sort_are_refused_before_sending(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    with pytest.raises(em.QueryValidationError, match=r"1 value.*2 key") as info:
        employees.find(sort="-age", search_after=[22])
    assert info.value.field == "search_after"


# -- sort dicts -----------------------------------------------------------------------------


def test_dsl_sort_dicts_sort_like_the_expression(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    expected = [d.id for d in employees.find(sort="-age", limit=100)]
    assert [d.id for d in employees.find(sort=[{"age": "desc"}], limit=100)] == expected
    ascending = employees.find(sort={"age": "asc"}, limit=100)
    assert [d.age for d in ascending] == sorted(d.age for d in staff)

    hired = employees.find(sort={"hired": {"order": "desc", "missing": "_last"}}, limit=100)
    dates = [d.hired for d in hired]
    assert dates[9:] == [None] * 9
    assert dates[:9] == sorted(dates[:9], reverse=True)  # type: ignore[type-var]


@pytest.mark.parametrize("sort", [5, [("age", "desc")], {"age": "down"}, {"agee": "asc"}])
def test_a_bad_sort_is_refused(employees: em.Repository[Employee], sort: Any) -> None:
    with pytest.raises(em.QueryValidationError, match="sort"):
        employees.find(sort=sort)


# -- dsl aggregations -----------------------------------------------------------------------


def test_an_aggregation_object_is_read_back_like_the_expression(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    from_object = employees.find(aggregations=A("terms", field="company_id"), limit=0)
    from_text = employees.find(aggregations="terms:company_id", limit=0)

    terms = from_object.aggregations.terms("terms_company_id")
    assert terms is not None and terms.keys() == ["acme", "initech"]
    assert terms == from_text.aggregations.terms("terms_company_id")


def test_named_aggregations_objects_and_dicts_have_typed_results(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    aggs = employees.find(
        aggregations={
            "by_company": A("terms", field="company_id").metric("oldest", "max", field="age"),
            "mean_age": {"avg": {"field": "age"}},
            "names": A("terms", field="name", size=2),  # a text field: its keyword subfield
        },
        limit=0,
    ).aggregations

    by_company = aggs.terms("by_company")
    assert by_company is not None
    assert {b.key: b.aggregations.value("oldest") for b in by_company.buckets} == {
        "acme": 25,
        "initech": 25,
    }
    assert aggs.value("mean_age") == pytest.approx(sum(d.age for d in staff) / 18)
    names = aggs.terms("names")
    assert names is not None and names.keys() == ["Person 00", "Person 01"]


def test_an_unknown_field_in_an_aggregation_object_is_named(
    employees: em.Repository[Employee],
) -> None:
    with pytest.raises(em.QueryValidationError) as info:
        employees.find(aggregations={"x": A("terms", field="compnay_id")})
    assert info.value.field == "compnay_id"
    assert "did you mean 'company_id'" in str(info.value)


# -- results[0], highlight, unknown keywords -------------------------------------------------


def test_results_index_and_slice_into_the_documents(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    results = employees.find(sort="age id", limit=5)
    assert results[0] is results.documents[0] and results[0].id == "e00"
    assert [d.id for d in results[1:3]] == ["e01", "e02"]
    assert results[-1].id == "e04"


def test_highlight_puts_the_fragments_on_each_hit(employees: em.Repository[Employee]) -> None:
    employees.add([Employee(id=i, name=n) for i, n in FRUIT], consistency="wait")

    hits = employees.find("apple", highlight=["name"]).hits

    assert hits[0].highlight == {"name": ["<em>apple</em> <em>apple</em> <em>apple</em>"]}
    assert all("<em>apple</em>" in h.highlight["name"][0] for h in hits)


def test_highlight_fields_are_checked(employees: em.Repository[Employee]) -> None:
    with pytest.raises(em.QueryValidationError, match="highlight a text or keyword") as info:
        employees.find("apple", highlight="age")
    assert info.value.field == "age"


def test_an_unknown_keyword_lists_every_keyword_of_the_call(
    employees: em.Repository[Employee],
) -> None:
    with pytest.raises(TypeError) as info:
        employees.find("apple", sortt="-age")  # type: ignore[call-arg]
    message = str(info.value)
    assert message.startswith("find() got unknown keyword(s): sortt;")
    for name in ("sort", "limit", "highlight", "search_after", "consistency", "soft_deletes"):
        assert name in message


# -- aggregate: the filter first -------------------------------------------------------------


def test_aggregate_takes_the_filter_first_like_find(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    acme = employees.aggregate("company_id:acme", aggregations="terms:company_id max:age")
    assert acme.terms("terms_company_id").keys() == ["acme"]  # type: ignore[union-attr]
    everyone = employees.aggregate(aggregations=A("cardinality", field="company_id"))
    assert everyone.value("cardinality_company_id") == 2


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("terms:company_id", "age:>3"), {}), (("terms:company_id",), {})],
)
def test_aggregate_in_the_old_order_says_what_changed(
    employees: em.Repository[Employee], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError, match=r"aggregate\(filter, aggregations="):
        employees.aggregate(*args, **kwargs)


# -- before_query / after_query ---------------------------------------------------------------


@pytest.fixture
def queries() -> Iterator[list[tuple[str, Any, dict[str, Any]]]]:
    seen: list[tuple[str, Any, dict[str, Any]]] = []

    def before(sender: Any, **kwargs: Any) -> None:
        seen.append(("before", sender, kwargs))

    def after(sender: Any, **kwargs: Any) -> None:
        seen.append(("after", sender, kwargs))

    with (
        signals.before_query.connected_to(before, sender=Employee),
        signals.after_query.connected_to(after, sender=Employee),
    ):
        yield seen


def test_query_signals_carry_the_compiled_body_the_options_and_the_model(
    employees: em.Repository[Employee],
    staff: list[Employee],
    queries: list[tuple[str, Any, dict[str, Any]]],
) -> None:
    employees.find("age:>=24", sort="-age", limit=3, soft_deletes="all")

    assert [(when, sender) for when, sender, _ in queries] == [
        ("before", Employee),
        ("after", Employee),
    ]
    context = queries[0][2]["query"]
    assert isinstance(context, em.QueryContext)
    assert context.model is Employee
    assert context.index == employees.spec.read_target
    assert context.options.soft_deletes == "all"
    assert context.body["sort"] == [{"age": {"order": "desc"}}, {"id": {"order": "asc"}}]
    assert context.body["query"] == {"range": {"age": {"gte": 24}}}
    assert context.body["size"] == 3
    after = queries[1][2]
    assert after["query"] is context
    assert [h["_id"] for h in after["result"]["hits"]["hits"]] == ["e15", "e16", "e17"]


def test_a_before_query_receiver_may_change_what_is_sent(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    def only_acme(sender: Any, query: em.QueryContext, **kwargs: Any) -> None:
        query.body["query"] = {
            "bool": {"must": [query.body["query"]], "filter": [{"term": {"company_id": "acme"}}]}
        }

    with signals.before_query.connected_to(only_acme, sender=Employee):
        assert employees.count() == 12
        assert {d.company_id for d in employees.find(limit=100)} == {"acme"}
    assert employees.count() == 18


def test_a_single_bucket_count_reads_as_total_and_doc_count(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    results = employees.find(aggregations="missing:hired", limit=0)
    missing = results.aggregations.missing("missing_hired")
    assert missing is not None
    expected = employees.count("_missing_:hired", consistency="immediate")
    assert expected > 0
    assert missing.total == missing.doc_count == expected


# -- typed field references (the SQLAlchemy habit) ----------------------------------------------


def test_find_sorts_and_selects_by_typed_field_references(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    # typed as FieldRef by the mypy plugin (esmapper.contrib.mypy, enabled in setup.cfg)
    by_refs = employees.find(
        sort=[-Employee.age, Employee.name], includes=[Employee.name, Employee.age], limit=5
    )
    by_names = employees.find(sort="-age name", includes=["name", "age"], limit=5)
    assert [d.id for d in by_refs.documents] == [d.id for d in by_names.documents]
    assert [d.age for d in by_refs.documents] == [25, 25, 25, 24, 24]
    assert by_refs.documents[0].company_id == ""  # not loaded: only name, age and id
    assert by_refs.documents[0].name == by_names.documents[0].name != ""


def test_find_refuses_a_ref_of_another_model(employees: em.Repository[Employee]) -> None:
    with pytest.raises(em.QueryValidationError, match="a field of Plain, in a search of Employee"):
        employees.find(sort=-Plain.name)


# -- top hits: documents of the model, from aggregate() as from find() --------------------------


def test_aggregate_gives_top_hits_as_models_like_find(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    expression = "terms:(company_id tophits:_~2)"
    from_aggregate = employees.aggregate("age:>=24", aggregations=expression)
    from_find = employees.find("age:>=24", aggregations=expression, limit=0).aggregations
    for aggs in (from_aggregate, from_find):
        companies = aggs.terms("terms_company_id")
        assert companies is not None
        top = companies.buckets[0].aggregations.top_hits()
        assert top is not None and len(top.documents) == 2
        assert all(isinstance(doc, Employee) for doc in top.documents)
        assert {doc.id for doc in top.documents} <= {e.id for e in staff if e.age >= 24}
        assert [doc.id for doc in top.documents] == [hit["_id"] for hit in top.hits]
    assert len(from_aggregate.terms("terms_company_id").buckets) == 2  # type: ignore[union-attr]


def test_a_top_hit_with_a_filtered_source_saves_only_what_changed(
    employees: em.Repository[Employee],
) -> None:
    employees.add(
        Employee(id="a", name="Ann", email="ann@example.com", company_id="c1", age=30),
        consistency="wait",
    )
    # the aggregation's own body filters the hit's _source: the search cannot see it
    top_hits = {"top_hits": {"_source": ["name"], "size": 1}}
    aggs = employees.aggregate(
        aggregations={"by": {"terms": {"field": "company_id"}, "aggs": {"top": top_hits}}}
    )
    doc = aggs["by"].buckets[0].aggregations["top"].documents[0]  # type: ignore[union-attr]
    assert (doc.name, doc.email) == ("Ann", "")  # email not loaded: the default
    doc.name = "Anna"
    employees.save(doc, consistency="wait")
    stored = employees.get("a", cache=False)
    assert stored is not None
    # a partial update of the changed field: not the defaults over what was not loaded
    assert (stored.name, stored.email, stored.company_id, stored.age) == (
        "Anna",
        "ann@example.com",
        "c1",
        30,
    )


# -- _missing_ / _exists_: an empty string is no value (the reference's FieldEmpty) --------------


def test_missing_matches_absent_and_empty_strings_and_exists_the_rest(
    mapper: em.Mapper, employees: em.Repository[Employee], index_prefix: str
) -> None:
    employees.add(
        [
            Employee(id="blank", name="", email=""),
            Employee(id="full", name="Ann Lee", email="ann@example.com"),
        ]
    )
    # a document stored without the fields at all (written by another program)
    alias = f"{index_prefix}employees"
    mapper.client.index(
        index=alias, id="absent", document={"age": 1, "is_deleted": False}, refresh=True
    )

    def ids(expression: str) -> set[str | None]:
        return {d.id for d in employees.find(expression, limit=10)}

    assert ids("_missing_:email") == {"blank", "absent"}
    assert ids("_exists_:email") == ids("email:*") == {"full"}
    assert ids("_missing_:name") == {"blank", "absent"}  # text: told apart on name.keyword
    assert ids("NOT _missing_:name") == {"full"}
    assert employees.count("_missing_:email OR _exists_:email") == 3


def test_a_list_holding_an_empty_string_and_a_value_has_a_value(
    employees: em.Repository[Employee],
) -> None:
    employees.add(
        [
            Employee(id="mixed", tags=["x", ""]),
            Employee(id="blank", tags=[""]),
            Employee(id="none", tags=[]),
        ],
        consistency="wait",
    )

    def ids(expression: str) -> set[str | None]:
        return {d.id for d in employees.find(expression, limit=10)}

    # "" is no value, but "x" is one: the document has a value (not every value is "")
    assert ids("_exists_:tags") == ids("tags:*") == {"mixed"}
    assert ids("_missing_:tags") == {"blank", "none"}


# -- search_after on _doc / _score outside a point in time: a warning -------------------


@pytest.mark.parametrize("sort", ["_doc", "-_score", "age _doc"])
def test_live_search_after_on_doc_or_score_logs_a_warning(
    employees: em.Repository[Employee],
    staff: list[Employee],
    sort: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="esmapper.query"):
        results = employees.find(sort=sort, search_after=True, limit=5)
    assert len(results) == 5  # the search runs
    warned = [r for r in caplog.records if "outside a point in time" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelname == "WARNING"
    assert sort.rsplit(maxsplit=1)[-1].lstrip("-") in warned[0].getMessage()


@pytest.mark.parametrize(
    "keywords",
    [
        {"sort": "_doc", "snapshot": "1m"},  # a point in time: stable
        {"sort": "-age", "search_after": True},  # fields (and the id tiebreaker)
        {"sort": "_score"},  # no search_after paging
        {"search_after": True},
    ],
)
def test_no_warning_where_the_values_are_stable(
    employees: em.Repository[Employee],
    staff: list[Employee],
    keywords: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="esmapper.query"):
        employees.find(limit=5, **keywords)
    assert not [r for r in caplog.records if "outside a point in time" in r.getMessage()]
