"""Re-keying when the answer to a write is lost (dropped before the server got it, dropped
after the server applied it, or cut short): the document is read back, never resent
blindly, and after the run it exists exactly once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.rekey import RekeyPlan, rekey
from esmapper.testing.faults import FaultProxy

from .test_rekey import Inbox, msg, put, stored

LOST = ["drop_before", "drop_after", "truncate"]
OLD, NEW = "acme_7_H", "acme:7:H"
OLD_PATH, NEW_PATH = r"/_doc/acme_7_H$", r"/_doc/acme%3A7%3AH$"


@pytest.fixture
def mapper(proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch) -> Iterator[em.Mapper]:
    """A mapper talking through the proxy, with one document to move (OLD -> NEW)."""
    with em.Mapper(proxy.url, models=[Inbox], index_prefix=index_prefix) as m:
        m.configure_indexes()
        put(es_client, m.spec(Inbox).physical_name(), OLD, **msg("acme", "7", "H"), body="v1")
        proxy.reset_counts()
        yield m


def lose(proxy: FaultProxy, how: str, path: str, method: str) -> None:
    if how == "truncate":
        proxy.truncate_response(path=path, method=method)
    else:
        proxy.drop_connection(path=path, method=method, after_forwarding=how == "drop_after")


def bodies(es: Elasticsearch, mapper: em.Mapper) -> dict[str, str]:
    """Every stored document: id -> body."""
    return {id_: source["body"] for id_, (_, _, source) in stored(es, mapper).items()}


@pytest.mark.parametrize("how", LOST)
def test_a_lost_create_is_read_back(
    how: str, mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    lose(proxy, how, r"/_create/", "PUT")

    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None)

    assert proxy.count(r"/_create/", method="PUT") == 1  # never resent blindly
    if how == "drop_before":  # not created: reported, the old document left in place
        assert (report.rewritten, report.failed) == (0, 1)
        assert "it is not there; acme_7_H left in place; rerun" in report.lines[-1]
        assert bodies(es_client, mapper) == {OLD: "v1"}
        rerun = rekey(mapper, Inbox, apply=True, echo=lambda _: None)
        assert (rerun.rewritten, rerun.failed) == (1, 0)
    else:  # created: the move goes on with the version read back
        assert (report.rewritten, report.failed) == (1, 0)
    assert bodies(es_client, mapper) == {NEW: "v1"}


@pytest.mark.parametrize("how", LOST)
def test_a_lost_delete_of_the_old_id_is_read_back_not_compensated(
    how: str, mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    lose(proxy, how, OLD_PATH, "DELETE")

    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None)

    assert report.lines == [f"REWRITE {OLD} -> {NEW}"]
    assert (report.rewritten, report.failed) == (1, 0)
    assert bodies(es_client, mapper) == {NEW: "v1"}  # exactly once, under the new id
    # resent (still conditional) only when reading back showed it was not applied
    assert proxy.count(OLD_PATH, method="DELETE") == (2 if how == "drop_before" else 1)
    assert proxy.count(NEW_PATH, method="DELETE") == 0  # no compensation


@pytest.mark.parametrize("how", LOST)
def test_a_lost_compensation_is_read_back(
    how: str, mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    physical = mapper.spec(Inbox).physical_name()
    lose(proxy, how, NEW_PATH, "DELETE")

    def concurrent_writer(plan: RekeyPlan) -> None:
        es_client.update(index=physical, id=plan.old_id, doc={"body": "v2"})

    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None, _before_delete=concurrent_writer)

    assert report.lines == [
        f"REWRITE {OLD} -> {NEW}",
        f"FAILED 409: {OLD} changed concurrently; rerun",
    ]
    assert (report.rewritten, report.failed) == (0, 1)
    assert bodies(es_client, mapper) == {OLD: "v2"}  # exactly once: the new copy is gone
    assert proxy.count(NEW_PATH, method="DELETE") == (2 if how == "drop_before" else 1)
