"""``mapper.delete_indexes``: every index, partition, alias and template of a model, by
exact name, never another model's; lost answers are read back."""

from __future__ import annotations

import datetime as dt

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes.deletion import IndexDeletion
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .fences import without_fence
from .models import SETTINGS, DailyLog, DailyLogV2, ItemV1

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


class Book(em.Document):
    class Index:
        name = "books"
        version = 2
        settings = SETTINGS
        cache = dt.timedelta(minutes=5)

    title: str = ""


class BookArchive(em.Document):
    """Shares the prefix ``books``: its indexes must survive deleting Book's."""

    class Index:
        name = "books-archive"
        settings = SETTINGS

    title: str = ""


class OddlyNamed(em.Document):
    """A plain index named like a version of Book's: owned by this model, not by Book."""

    class Index:
        name = "books-v7"
        kind = "plain"
        settings = SETTINGS

    title: str = ""


def _names(client: Elasticsearch, prefix: str) -> list[str]:
    body = client.indices.get(index=f"{prefix}*", allow_no_indices=True).body
    names = (name.removeprefix(prefix) for name in body)
    return sorted(n for n in names if n != "esmapper-locks")  # configure_indexes()' lock


def _aliases(client: Elasticsearch, prefix: str) -> dict[str, list[str]]:
    body = client.options(ignore_status=404).indices.get_alias(index=f"{prefix}*").body
    return {
        name.removeprefix(prefix): [
            a.removeprefix(prefix) for a in without_fence(name, entry["aliases"])
        ]
        for name, entry in sorted(body.items())
        if entry["aliases"]
    }


def _templates(client: Elasticsearch, prefix: str) -> list[str]:
    body = client.options(ignore_status=404).indices.get_index_template(name=f"{prefix}*").body
    return sorted(t["name"].removeprefix(prefix) for t in body.get("index_templates", []))


def test_every_version_and_the_alias_go_and_a_prefix_sharing_model_stays(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    mapper = make_mapper(Book, BookArchive, OddlyNamed)
    mapper.configure_indexes()
    es_client.indices.create(index=f"{p}books-v1", settings=SETTINGS)  # a leftover version
    mapper.repository(Book).add(Book(title="b"), consistency="immediate")
    mapper.repository(BookArchive).add(BookArchive(title="a"), consistency="immediate")
    mapper.repository(OddlyNamed).add(OddlyNamed(title="o"), consistency="immediate")

    dry = mapper.delete_indexes([Book], dry_run=True)
    assert dry == [
        IndexDeletion(
            "Book", f"{p}books", (f"{p}books-v1", f"{p}books-v2"), (f"{p}books",), dry_run=True
        )
    ]
    assert "books-v2" in _names(es_client, p)  # a dry run deletes nothing

    (report,) = mapper.delete_indexes([Book])

    assert report.indexes == (f"{p}books-v1", f"{p}books-v2") and not report.dry_run
    assert report.aliases == (f"{p}books",) and report.templates == ()
    assert _names(es_client, p) == ["books-archive-v1", "books-v7"]
    assert _aliases(es_client, p) == {"books-archive-v1": ["books-archive"]}
    assert mapper.repository(BookArchive).count() == 1
    assert mapper.repository(OddlyNamed).count() == 1
    # deleting again finds nothing: not an error
    assert mapper.delete_indexes([Book]) == [IndexDeletion("Book", f"{p}books")]
    # and the model can be set up again from scratch
    mapper.configure_indexes([Book])
    assert mapper.repository(Book).count() == 0


def test_the_cached_documents_of_a_deleted_model_are_dropped(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Book)
    mapper.configure_indexes()
    repo = mapper.repository(Book)
    book = repo.add(Book(title="cached"), consistency="immediate")
    assert repo.get(book.id) is not None  # now cached (Index.cache)

    mapper.delete_indexes([Book])

    mapper.configure_indexes()
    assert repo.get(book.id) is None


def test_time_series_partitions_of_every_version_dated_aliases_and_templates_go(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    old = make_mapper(DailyLog, clock=FakeClock(NOW))
    old.configure_indexes()
    old.repository(DailyLog).add(DailyLog(created_utc=NOW), consistency="immediate")
    mapper = make_mapper(DailyLogV2, clock=FakeClock(NOW))
    mapper.configure_indexes()
    repo = mapper.repository(DailyLogV2)
    repo.add(DailyLogV2(created_utc=NOW - dt.timedelta(days=1)), consistency="immediate")
    # a concrete index squatting a dated alias's name (a write that found no partition)
    es_client.indices.create(index=f"{p}logs-2026.03.01", settings=SETTINGS)
    # an index that is not the model's but carries its umbrella alias
    es_client.indices.create(index=f"{p}other", settings=SETTINGS, aliases={f"{p}logs": {}})

    (report,) = mapper.delete_indexes([DailyLogV2])

    assert report.indexes == (
        f"{p}logs-2026.03.01",
        f"{p}logs-v1-2026.03.10",
        f"{p}logs-v2-2026.03.09",
    )
    assert report.aliases == (f"{p}logs", f"{p}logs-2026.03.09", f"{p}logs-2026.03.10")
    assert report.detached == ((f"{p}logs", f"{p}other"),)
    assert report.templates == (f"{p}logs-v1-template", f"{p}logs-v2-template")
    assert _names(es_client, p) == ["other"]
    assert _aliases(es_client, p) == {}
    assert _templates(es_client, p) == []
    # the partition this process had ensured is created again by the next write
    mapper.configure_indexes([DailyLogV2])
    repo.add(DailyLogV2(created_utc=NOW - dt.timedelta(days=1)), consistency="immediate")
    assert repo.count() == 1
    assert _aliases(es_client, p)["logs-v2-2026.03.09"] == ["logs", "logs-2026.03.09"]


@pytest.mark.parametrize("how", ["drop_before", "drop_after", "truncate"])
def test_a_lost_answer_to_a_delete_is_read_back(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    p = index_prefix
    make_mapper(Book, BookArchive).configure_indexes()
    mapper = make_mapper(Book, BookArchive, url=proxy.url)
    path = rf"^/{p}books-v2$"
    if how == "truncate":
        proxy.truncate_response(path=path, method="DELETE")
    else:
        proxy.drop_connection(path=path, method="DELETE", after_forwarding=how == "drop_after")

    (report,) = mapper.delete_indexes([Book])

    assert report.indexes == (f"{p}books-v2",)
    assert _names(es_client, p) == ["books-archive-v1"]
    # sent again only when reading back showed it was not applied
    assert proxy.count(path, method="DELETE") == (2 if how == "drop_before" else 1)


def test_a_lost_answer_to_a_template_delete_is_read_back(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    make_mapper(DailyLog).configure_indexes()
    mapper = make_mapper(DailyLog, url=proxy.url)
    path = rf"^/_index_template/{index_prefix}logs-v1-template$"
    proxy.drop_connection(path=path, method="DELETE", after_forwarding=True)

    (report,) = mapper.delete_indexes([DailyLog])

    assert report.templates == (f"{index_prefix}logs-v1-template",)
    assert _templates(es_client, index_prefix) == []
    assert proxy.count(path, method="DELETE") == 1


def test_a_time_series_model_writes_again_after_another_mapper_deleted_its_indexes(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """``writer`` cached today's partition; ``admin`` (another mapper or process) deletes
    every index of the model. ``writer``'s next add is refused by the vanished dated alias
    (``require_alias``); the period is forgotten, its partition made again and the add sent
    once more (it used to fail with the same 404 forever)."""
    clock = FakeClock(NOW)
    writer = make_mapper(DailyLog, clock=clock)
    admin = make_mapper(DailyLog, clock=clock)
    repo = writer.repository(DailyLog)
    repo.add(DailyLog(message="before", created_utc=NOW))  # partition cached by `writer`

    admin.delete_indexes([DailyLog])

    doc = repo.add(DailyLog(message="after", created_utc=NOW), consistency="immediate")
    got = repo.get(doc.id)
    assert got is not None and got.message == "after"
    assert [d.message for d in repo.find().documents] == ["after"]


def test_a_versioned_model_writes_again_after_another_mapper_deleted_its_indexes(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    writer = make_mapper(ItemV1)
    admin = make_mapper(ItemV1)
    repo = writer.repository(ItemV1)
    repo.add(ItemV1(name="a"))
    admin.delete_indexes([ItemV1])
    doc = repo.add(ItemV1(name="b"), consistency="immediate")
    assert [d.id for d in repo.find().documents] == [doc.id]
    assert es_client.indices.get_alias(name=f"{index_prefix}items").body.keys() == {
        f"{index_prefix}items-v1"
    }
