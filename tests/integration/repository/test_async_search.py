"""Async search (issue 30, item 2): ``repo.async_search`` submits the search
``find`` would send as ``POST /<alias>/_async_search``, reads it later by id, asks its
status, deletes it; each page is a ``FindResults`` with ``async_id``/``is_running``.

The local server has no async search: these tests run through a ``ClusterProxy``, which
answers the async search API as Elasticsearch does (each search run as a ``_search``:
:mod:`esmapper.testing._real_async_search`); the ``real_es`` tests at the end run the same
round trip on a real cluster."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import esmapper as em
from esmapper.testing._spec_check import load_checker
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .models import Employee

AGES = {"e1": 25, "e2": 35, "e3": 45, "e4": 55}


@pytest.fixture
def staff(make_mapper: MakeMapper, cluster: ClusterProxy) -> em.Repository[Employee]:
    seeded = make_mapper(Employee, configure=True).repository(Employee)
    seeded.add(
        [Employee(id=i, name=f"emp {i}", age=age) for i, age in AGES.items()],
        consistency="immediate",
    )
    seeded.remove("e4", consistency="immediate")  # soft deleted: hidden from searches
    return make_mapper(Employee, url=cluster.url).repository(Employee)


def test_a_search_done_within_the_wait_is_a_page_like_find(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    results = staff.async_search.submit("age:>30", sort="-age", wait="5s")
    assert [e.id for e in results] == ["e3", "e2"]  # e4 is soft deleted
    assert [e.id for e in results] == [e.id for e in staff.find("age:>30", sort="-age")]
    assert isinstance(results[0], Employee) and results[0].age == 45
    assert results.total == 2 and not results.is_running and not results.partial
    assert results.async_id is None  # done within the wait, not kept
    assert cluster.async_searches.kept == []
    [(method, path, params)] = cluster.async_searches.params
    assert (method, path) == ("POST", f"/{staff.spec.alias}/_async_search")
    assert params["wait_for_completion_timeout"] == "5s"
    assert "keep_alive" not in params and "keep_on_completion" not in params


def test_a_running_search_is_read_later_by_its_id(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    cluster.async_searches.hold()
    running = staff.async_search.submit("age:>30", sort="age", wait="0s", keep_alive="1h")
    assert running.is_running and running.async_id is not None
    assert list(running) == [] and not running.has_more  # no hits before the end
    status = staff.async_search.status(running)
    assert status.is_running and status.is_partial and status.completion_status is None
    assert status.expires_at is not None and status.expires_at > dt.datetime.now(dt.timezone.utc)
    cluster.async_searches.finish()
    done = staff.async_search.get(running)
    assert [e.id for e in done] == ["e2", "e3"] and not done.is_running
    assert done.async_id == running.async_id  # kept until deleted or expired
    finished = staff.async_search.status(running.async_id)
    assert not finished.is_running and finished.completion_status == 200
    assert finished.shards.complete
    staff.async_search.delete(done)
    assert cluster.async_searches.kept == []
    with pytest.raises(em.AsyncSearchNotFoundError) as gone:
        staff.async_search.get(running.async_id)
    assert gone.value.async_id == running.async_id
    assert "no async search" in str(gone.value) and "submit the search again" in str(gone.value)


def test_an_id_is_read_with_the_keywords_it_was_submitted_with(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    kept = staff.async_search.submit(
        "age:>20", sort="age", limit=2, includes=["age"], keep_on_completion=True
    )
    assert kept.async_id is not None and [e.id for e in kept] == ["e1", "e2"]
    again = staff.async_search.get(kept.async_id, limit=2, sort="age", includes=["age"])
    assert [(e.id, e.age) for e in again] == [("e1", 25), ("e2", 35)] and again.has_more
    assert again.next_page() is False  # one page per async search
    assert again.search_after_token is not None  # submit the next page with it
    following = staff.async_search.submit(
        "age:>20", sort="age", limit=2, search_after=again.search_after_token
    )
    assert [e.id for e in following] == ["e3"]


def test_an_id_read_without_its_source_filter_never_saves_a_whole_document(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    kept = staff.async_search.submit("age:>30", sort="age", includes=["age"],
                                     keep_on_completion=True)  # fmt: skip
    assert kept.async_id is not None
    # the submit's includes are not repeated: the hits hold part of each document all the same
    [e2, _] = staff.async_search.get(kept.async_id, sort="age")
    assert e2.id == "e2" and e2.name == ""  # not read
    e2.age = 36
    staff.save(e2, consistency="immediate")  # writes the changed field only
    stored = staff.get("e2")
    assert stored is not None and (stored.name, stored.age) == ("emp e2", 36)


def test_an_id_read_with_a_smaller_limit_than_submitted_is_refused(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    kept = staff.async_search.submit("*", sort="age", limit=3, keep_on_completion=True)
    assert kept.async_id is not None and len(kept) == 3
    with pytest.raises(em.QueryValidationError, match="limit") as raised:
        staff.async_search.get(kept.async_id, sort="age", limit=1)
    assert "the keywords it was submitted with" in str(raised.value)


def test_get_with_delete_forgets_a_finished_search(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    cluster.async_searches.hold()
    running = staff.async_search.submit("*")
    still = staff.async_search.get(running, delete=True)
    assert still.is_running and cluster.async_searches.kept == [running.async_id]
    cluster.async_searches.finish()
    done = staff.async_search.get(running, delete=True, wait="2s", keep_alive="10m")
    assert sorted(e.id for e in done) == ["e1", "e2", "e3"]
    assert cluster.async_searches.kept == []
    get = [p for m, _, p in cluster.async_searches.params if m == "GET"][-1]
    assert get == {"wait_for_completion_timeout": "2s", "keep_alive": "10m"}


def test_an_expired_or_unknown_id_is_a_clear_error(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    cluster.async_searches.hold()
    running = staff.async_search.submit("*")
    cluster.async_searches.expire(running.async_id or "")
    for call in (staff.async_search.get, staff.async_search.status, staff.async_search.delete):
        with pytest.raises(em.AsyncSearchNotFoundError) as raised:
            call(running)
        assert raised.value.error_type == "resource_not_found_exception"


def test_an_id_the_cluster_cannot_decode_is_not_found_either(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    # Elasticsearch answers 400 "invalid id: [...]" for an id it did not make (not 404)
    for call in (staff.async_search.get, staff.async_search.status, staff.async_search.delete):
        with pytest.raises(em.AsyncSearchNotFoundError) as raised:
            call("not-an-id")
        assert raised.value.async_id == "not-an-id"
        assert raised.value.error_type == "illegal_argument_exception"


def test_a_misread_get_with_delete_keeps_the_search(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    kept = staff.async_search.submit("*", sort="age", limit=3, keep_on_completion=True)
    with pytest.raises(em.QueryValidationError):
        staff.async_search.get(kept.async_id or "", sort="age", limit=1, delete=True)
    assert cluster.async_searches.kept == [kept.async_id]  # read it again, right this time
    again = staff.async_search.get(kept.async_id or "", sort="age", limit=3, delete=True)
    assert len(again) == 3 and cluster.async_searches.kept == []


def test_shard_failures_are_refused_as_find_refuses_them(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    cluster.fail_shards(path="_search")
    with pytest.raises(em.PartialResultsError) as raised:
        staff.async_search.submit("*", keep_on_completion=True)
    page = raised.value.results
    assert isinstance(page, em.FindResults) and page.partial and page.async_id is not None
    assert "partial_results=True" in str(raised.value)
    cluster.fail_shards(path="_search")
    taken = staff.async_search.submit("*", partial_results=True)
    assert taken.partial and taken.shards is not None and taken.shards.failed == 1
    assert cluster.async_searches.params[-1][2]["allow_partial_search_results"] == "true"


def test_a_missing_index_is_an_empty_page(make_mapper: MakeMapper, cluster: ClusterProxy) -> None:
    repo = make_mapper(Employee, url=cluster.url).repository(Employee)
    results = repo.async_search.submit("*")
    assert list(results) == [] and results.total == 0 and results.async_id is None


def test_aggregations_and_signals_go_through_the_search_core(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    seen: list[object] = []

    def after(sender: type, **kw: object) -> None:
        seen.append(kw["result"])

    em.signals.after_query.connect(after, sender=Employee)
    try:
        results = staff.async_search.submit(limit=0, aggregations="max:age")
    finally:
        em.signals.after_query.disconnect(after, sender=Employee)
    assert results.aggregations["max_age"].value == 45  # the soft-deleted 55 is hidden
    [answer] = seen
    assert isinstance(answer, dict) and "hits" in answer  # the search answer, not the wrapper


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"wait": "soon"}, "wait"),
        ({"keep_alive": "500ms"}, "keep_alive"),
        ({"keep_alive": 5}, "keep_alive"),
        ({"snapshot": True}, "snapshot"),
        ({"cache_key": "k"}, "cache_key"),
        ({"keep_on_completion": "yes"}, "keep_on_completion"),
    ],
)
def test_bad_arguments_are_refused_before_sending(
    staff: em.Repository[Employee], cluster: ClusterProxy, arguments: dict[str, Any], field: str
) -> None:
    with pytest.raises(em.QueryValidationError) as raised:
        staff.async_search.submit("*", **arguments)
    assert raised.value.field == field and field in str(raised.value)
    assert cluster.async_searches.params == []


def test_a_page_or_id_that_names_no_async_search_is_refused(
    staff: em.Repository[Employee],
) -> None:
    plain = staff.find("*")
    with pytest.raises(em.QueryValidationError, match="no async search id"):
        staff.async_search.get(plain)
    with pytest.raises(em.QueryValidationError, match="non-empty string"):
        staff.async_search.status("")


def test_timedelta_durations_are_sent_as_elasticsearch_durations(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    staff.async_search.submit(
        wait=dt.timedelta(milliseconds=1500), keep_alive=dt.timedelta(hours=2)
    )
    params = cluster.async_searches.params[-1][2]
    assert params["wait_for_completion_timeout"] == "1500ms"
    assert params["keep_alive"] == "7200s"


# -- a real cluster ----------------------------------------------------------------------


@pytest.mark.real_es
def test_the_round_trip_on_a_real_cluster(make_mapper: MakeMapper) -> None:
    repo = make_mapper(Employee, configure=True).repository(Employee)
    repo.add([Employee(id=i, age=a) for i, a in AGES.items()], consistency="immediate")
    submitted = repo.async_search.submit(
        "age:>30", sort="age", wait="10s", keep_alive="5m", keep_on_completion=True
    )
    assert submitted.async_id is not None and not submitted.is_running
    assert [e.id for e in submitted] == ["e2", "e3", "e4"]
    status = repo.async_search.status(submitted)
    assert not status.is_running and status.completion_status == 200
    again = repo.async_search.get(submitted, keep_alive="2m", delete=True)
    assert [e.id for e in again] == ["e2", "e3", "e4"]
    with pytest.raises(em.AsyncSearchNotFoundError):
        repo.async_search.get(submitted.async_id)


@pytest.mark.real_es
def test_a_search_not_done_within_wait_zero_is_running_or_done(make_mapper: MakeMapper) -> None:
    repo = make_mapper(Employee, configure=True).repository(Employee)
    repo.add([Employee(id=i, age=a) for i, a in AGES.items()], consistency="immediate")
    first = repo.async_search.submit("*", wait="0s", keep_on_completion=True)
    assert first.async_id is not None
    done = repo.async_search.get(first, wait="10s")
    assert not done.is_running and done.total == len(AGES)
    repo.async_search.delete(done)


@pytest.mark.real_es
def test_an_unknown_or_undecodable_id_is_not_found_on_a_real_cluster(
    make_mapper: MakeMapper,
) -> None:
    repo = make_mapper(Employee, configure=True).repository(Employee)
    kept = repo.async_search.submit("*", keep_on_completion=True)
    assert kept.async_id is not None
    repo.async_search.delete(kept)
    for gone in (kept.async_id, "not-an-id"):  # 404, then 400 "invalid id"
        with pytest.raises(em.AsyncSearchNotFoundError):
            repo.async_search.status(gone)


# -- the requests against the Elasticsearch API specification ----------------------------


def test_every_request_matches_the_specification(
    staff: em.Repository[Employee], cluster: ClusterProxy
) -> None:
    checker = load_checker(Path(__file__).parents[3] / "tools" / "es_spec")
    cluster.async_searches.hold()
    running = staff.async_search.submit(
        "age:>30", sort="-age", limit=5, includes=["age"], aggregations="max:age",
        highlight=["name"], wait="1s", keep_alive="1h", keep_on_completion=True,
    )  # fmt: skip
    staff.async_search.status(running)
    cluster.async_searches.finish()
    staff.async_search.get(running, wait="2s", keep_alive="30m")
    staff.async_search.delete(running)
    sent = cluster.async_searches.requests
    assert [(r["method"], r["path"].rsplit("/", 2)[-2:][0]) for r in sent] == [
        ("POST", staff.spec.alias),
        ("GET", "status"),
        ("GET", "_async_search"),
        ("DELETE", "_async_search"),
    ]
    assert sent[0]["body"]["query"]["bool"]["filter"]  # the soft-delete clause
    assert checker.check(sent, branches="8.18,8.19,9.x") == []
    wrong = [{**sent[0], "params": {**sent[0]["params"], "keep_on_completion": "maybe"}}]
    assert checker.check(wrong, branches="8.18,8.19,9.x")  # the check can fail
