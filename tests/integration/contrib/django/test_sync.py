"""esmapper.contrib.django.sync: a row is written to Elasticsearch after its database commit
(never for a rolled-back one), and two writers of one row never leave the document stale:
the write reads the row again after the document's version, and starts again on a
conflict."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.db import connections, transaction
from django.db.models.deletion import Collector
from django.db.models.signals import post_delete, post_save
from django.test import Client, override_settings
from django.test.utils import isolate_apps

import esmapper as em
from esmapper.contrib.django import Sync, sync

from .documents import Note, RowDoc
from .rows.models import JITTER, ProxyRow, Row, SpecialRow, Unrelated

ROOT = Path(__file__).resolve().parents[4]

pytestmark = pytest.mark.django_db(transaction=True)  # real commits; threads


class Converter:
    """``convert`` for the tests: counts its calls per title, and may hold one call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.hold: dict[str, tuple[threading.Event, threading.Event]] = {}

    def __call__(self, row: Row) -> RowDoc | None:
        self.calls.append(row.title)
        held = self.hold.pop(row.title, None)
        if held is not None:
            reached, release = held
            reached.set()
            assert release.wait(60)
        if row.title.startswith("boom"):
            raise ValueError(f"cannot convert {row.title!r}")
        if row.hidden:
            return None
        return RowDoc(title=row.title, counter=row.counter)


@pytest.fixture
def converter() -> Converter:
    return Converter()


@pytest.fixture
def synced(esmapper_django_mapper: em.Mapper, converter: Converter) -> Iterator[Sync[RowDoc]]:
    link = sync(Row, to=RowDoc, convert=converter, consistency="eventual")
    yield link
    link.disconnect()


def es(mapper: em.Mapper, pk: int) -> RowDoc | None:
    return mapper.repository(RowDoc).get(str(pk), cache=False)


def test_saves_and_deletes_are_written_after_the_commit(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper
) -> None:
    row = Row.objects.create(title="a", counter=1)
    assert es(esmapper_django_mapper, row.pk).title == "a"
    row.title = "b"
    row.save()
    assert es(esmapper_django_mapper, row.pk).title == "b"
    row.hidden = True  # convert says: no document
    row.save()
    assert es(esmapper_django_mapper, row.pk) is None
    row.hidden = False
    row.save()
    pk = row.pk
    row.delete()
    assert es(esmapper_django_mapper, pk) is None


def test_a_rolled_back_transaction_writes_nothing(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        row = Row.objects.create(title="never")
        assert es(esmapper_django_mapper, row.pk) is None  # not before the commit
        raise RuntimeError("rolled back")
    assert not Row.objects.exists()
    assert es(esmapper_django_mapper, row.pk) is None and converter.calls == []
    with transaction.atomic():
        kept = Row.objects.create(title="kept")
        assert es(esmapper_django_mapper, kept.pk) is None  # written once committed
    assert es(esmapper_django_mapper, kept.pk).title == "kept"


def test_a_write_that_read_the_row_before_another_commit_is_done_again(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    """The trap: A reads the row (v1); B commits v2 and writes it; A then writes v1. A's
    write is conditioned on the version it read first, so it fails and reads v2."""
    row = Row.objects.create(title="v0")
    reached, release = threading.Event(), threading.Event()
    converter.hold["v1"] = (reached, release)
    Row.objects.filter(pk=row.pk).update(title="v1")  # no signal: A is written by hand

    def writer_a() -> None:
        try:
            synced.write([row.pk])
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        a = pool.submit(writer_a)
        assert reached.wait(60)  # A has read v1 and is about to write it
        row.refresh_from_db()
        row.title = "v2"
        row.save()  # B: committed and written
        assert es(esmapper_django_mapper, row.pk).title == "v2"
        release.set()
        a.result(60)
    assert es(esmapper_django_mapper, row.pk).title == "v2"
    assert converter.calls.count("v2") >= 2  # B's write, and A's again after its conflict


def test_concurrent_savers_never_leave_the_document_stale(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    row = Row.objects.create(title="start")
    JITTER.set()  # each write's read of the row waits a little before and after it
    rounds, writers, stale = 25, 3, []

    def save(round: int, writer: int, ready: threading.Barrier) -> None:
        try:
            ready.wait()
            with transaction.atomic():
                mine = Row.objects.select_for_update().get(pk=row.pk)
                mine.counter += 1
                mine.title = f"r{round}w{writer}"
                mine.save()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(writers) as pool:
        for round in range(rounds):
            ready = threading.Barrier(writers, timeout=60)
            done = [pool.submit(save, round, w, ready) for w in range(writers)]
            for future in done:
                future.result(120)
            row.refresh_from_db()
            doc = es(esmapper_django_mapper, row.pk)
            if (doc.title, doc.counter) != (row.title, row.counter):
                stale.append((round, doc.title, row.title))
    JITTER.clear()
    assert row.counter == rounds * writers
    assert stale == []


def test_in_a_request_the_rows_are_written_when_its_session_ends(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    client = Client(raise_request_exception=False)
    assert client.get("/rows/7?title=first").status_code == 200
    assert es(esmapper_django_mapper, 7).title == "first"
    # the view raises: ATOMIC_REQUESTS rolls the database back, so nothing is written
    assert client.get("/rows/7?title=lost&then=fail").status_code == 500
    assert Row.objects.get(pk=7).title == "first"
    assert es(esmapper_django_mapper, 7).title == "first" and "lost" not in converter.calls
    # a 400 rolls the esmapper session back, but the database committed the row: written
    assert client.get("/rows/7?title=kept&then=refuse").status_code == 400
    assert Row.objects.get(pk=7).title == "kept"
    assert es(esmapper_django_mapper, 7).title == "kept"


def test_sync_needs_a_versioned_model() -> None:
    class Plain(em.Document):
        class Index:
            name = "plain_rows"

    with pytest.raises(TypeError, match=r"em\.Versioned"):
        sync(Row, to=Plain, convert=lambda row: None)
    with pytest.raises(TypeError, match="Django model"):
        sync(Note, to=RowDoc, convert=lambda row: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="soon"):
        sync(Row, to=RowDoc, convert=lambda row: None, consistency="soon")


def test_a_second_sync_of_a_pair_replaces_the_first(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    again = Converter()
    replacing = sync(Row, to=RowDoc, convert=again)
    try:
        row = Row.objects.create(title="once")
        # by the new one only: its create, and the check after it
        assert converter.calls == [] and again.calls == ["once", "once"]
        assert es(esmapper_django_mapper, row.pk).title == "once"
    finally:
        replacing.disconnect()


def test_backfill_writes_rows_saved_without_signals(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper
) -> None:
    Row.objects.bulk_create([Row(pk=pk, title=f"bulk {pk}") for pk in (11, 12)])
    assert es(esmapper_django_mapper, 11) is None  # bulk_create sends no signal
    assert synced.backfill() == 2
    titles: dict[str, Any] = {
        d.id: d.title for d in esmapper_django_mapper.repository(RowDoc).get_many(["11", "12"])
    }
    assert titles == {"11": "bulk 11", "12": "bulk 12"}


def test_a_delete_racing_a_stale_create_leaves_no_document(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper, converter: Converter
) -> None:
    """A finds no document and reads the row; the row is deleted and B's write finds no
    document and no row, so it sends nothing; then A creates the document of a deleted row.
    A's create is checked after it lands, so the document does not outlive the row."""
    Row.objects.bulk_create([Row(pk=21, title="stale")])  # no signal: no document yet
    reached, release = threading.Event(), threading.Event()
    converter.hold["stale"] = (reached, release)

    def writer_a() -> None:
        try:
            synced.write([21])
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        a = pool.submit(writer_a)
        assert reached.wait(60)  # A read "no document", then the row
        Row.objects.get(pk=21).delete()  # B: committed, written (nothing to delete)
        assert es(esmapper_django_mapper, 21) is None
        release.set()
        a.result(60)
    assert not Row.objects.filter(pk=21).exists()
    assert es(esmapper_django_mapper, 21) is None  # not resurrected


def test_saves_through_a_proxy_or_a_child_model_are_mirrored(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper
) -> None:
    proxied = ProxyRow.objects.create(title="through a proxy")
    assert es(esmapper_django_mapper, proxied.pk).title == "through a proxy"
    proxied.title = "changed through a proxy"
    proxied.save()
    assert es(esmapper_django_mapper, proxied.pk).title == "changed through a proxy"
    child = SpecialRow.objects.create(title="a child's row", note="x")
    assert es(esmapper_django_mapper, child.pk).title == "a child's row"
    pks = (proxied.pk, child.pk)
    proxied.delete()
    child.delete()
    assert [es(esmapper_django_mapper, pk) for pk in pks] == [None, None]


def test_a_failing_write_after_the_commit_is_logged_not_raised(
    synced: Sync[RowDoc],
    esmapper_django_mapper: em.Mapper,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database committed: a failing mirror write (``convert`` raising, Elasticsearch
    down) neither fails the code that saved nor drops the transaction's other on_commit
    callbacks; it is logged with the keys to write again."""
    others: list[str] = []
    with caplog.at_level(logging.ERROR, logger="esmapper.contrib.django"):
        with transaction.atomic():
            row = Row.objects.create(title="boom outside")
            transaction.on_commit(lambda: others.append("ran"))
        assert others == ["ran"]
        assert Row.objects.filter(pk=row.pk).exists()
        assert es(esmapper_django_mapper, row.pk) is None
        client = Client(raise_request_exception=False)
        assert client.get("/rows/31?title=boom+inside").status_code == 200  # all committed
    assert Row.objects.get(pk=31).title == "boom inside"
    failures = [r for r in caplog.records if r.name.startswith("esmapper.contrib.django")]
    assert len(failures) == 2, caplog.text
    assert f"[{row.pk}]" in failures[0].getMessage() and "[31]" in failures[1].getMessage()
    assert "rows.Row" in failures[0].getMessage()
    assert all(r.exc_info and r.exc_info[0] is ValueError for r in failures)
    Row.objects.filter(pk=row.pk).update(title="fine now")
    synced.write([row.pk])  # the recovery the log names; a direct write raises its errors
    assert es(esmapper_django_mapper, row.pk).title == "fine now"
    with pytest.raises(ValueError, match="boom"):
        synced.write([31])


class ReadsFromOther:
    """A router sending reads to a replica (``other``) and writes to ``default``."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        return "other"

    def db_for_write(self, model: type, **hints: Any) -> str:
        return "default"


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_writes_read_the_rows_from_their_own_database(
    synced: Sync[RowDoc], esmapper_django_mapper: em.Mapper
) -> None:
    """``backfill`` of another database's queryset reads its rows there, and ``write``
    without ``using`` reads where the model is written (a read replica may lag behind the
    commit the write follows), never where a router sends reads."""
    Row.objects.using("other").bulk_create([Row(pk=41, title="in other")])
    assert synced.backfill(Row.objects.using("other")) == 1
    assert es(esmapper_django_mapper, 41).title == "in other"
    Row.objects.bulk_create([Row(pk=42, title="on the primary")])
    with override_settings(DATABASE_ROUTERS=[ReadsFromOther()]):
        synced.write([42])
    assert es(esmapper_django_mapper, 42).title == "on the primary"


def test_two_processes_saving_and_deleting_one_row_leave_its_document_current(
    esmapper_django_mapper: em.Mapper, es_url: str
) -> None:
    """Two writer processes (each its own mapper and database connection): one saves the
    row over and over, the other deletes it and creates it again (the conflict, duplicate
    and not-found retries across processes); after each round the document is the row, or
    both are gone. The exact interleavings are pinned by the threaded tests above: this one
    samples only each round's end, and did not catch the reads swapped."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.integration.contrib.django.settings",
        "ESMAPPER_DJANGO_TEST_DB": connections["default"].settings_dict["NAME"],
        "ESMAPPER_URL": es_url,
        "ESMAPPER_INDEX_PREFIX": esmapper_django_mapper.index_prefix,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    stale = []
    for round in range(2):
        writers = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.integration.contrib.django.saver", "61", "12", who],
                env=env,
                cwd=ROOT,
                stderr=subprocess.PIPE,
                text=True,
            )
            for who in ("save", "delete")
        ]
        for writer in writers:
            _, errors = writer.communicate(timeout=300)
            assert writer.returncode == 0, errors
        row = Row.objects.filter(pk=61).first()
        doc = es(esmapper_django_mapper, 61)
        wanted = None if row is None else (row.title, row.counter)
        if (None if doc is None else (doc.title, doc.counter)) != wanted:
            stale.append((round, doc, wanted))
    assert stale == []


def test_other_models_keep_their_fast_deletes(synced: Sync[RowDoc]) -> None:
    """sync(Row) listens to Row and its subclasses only: a receiver for every sender would
    make every model's QuerySet.delete() fetch its rows to send signals to it."""
    assert post_delete.has_listeners(Row) and post_delete.has_listeners(ProxyRow)
    assert not post_delete.has_listeners(Unrelated)
    assert not post_save.has_listeners(Unrelated)
    assert Collector(using="default").can_fast_delete(Unrelated.objects.all())

    with isolate_apps("tests.integration.contrib.django.rows"):

        class LaterRow(Row):  # a subclass defined after sync(): followed too
            class Meta:
                app_label = "rows"
                proxy = True

        assert post_save.has_listeners(LaterRow)
