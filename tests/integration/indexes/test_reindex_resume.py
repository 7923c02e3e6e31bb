"""A reindex killed with ``kill -9`` and run again reuses the index it was building: the
rerun copies only what is missing or changed, and the new index ends with exactly the old
one's documents at their latest versions (0 lost, 0 resurrected, 0 stale). A changed script
or mapping, or an old index made again under its name, means a full copy."""

from __future__ import annotations

import datetime as dt
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, ReindexResult, reindex
from esmapper.indexes._reindex_resume import read_record
from esmapper.model.dates import format_datetime
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper
from tests.integration.pausing import Child, children, linux_only

from .models import SETTINGS, ItemV1, ItemV2, ItemV2Scripted, PlainV1, PlainV2
from .test_partition_reindex import Log1, Log2Plain

pytestmark = linux_only

WORKER = "tests.integration.indexes.reindex_resume_worker"
NO_MARGIN = dt.timedelta(0)
FIVE_MINUTES = dt.timedelta(minutes=5)


def _seed(make_mapper: MakeMapper, model: type[Any], count: int) -> em.Mapper:
    mapper = make_mapper(model, configure=True)
    mapper.repository(model).add(
        [model(id=f"d{i:04}", n=i) for i in range(count)], consistency="immediate"
    )
    return mapper


def _killed(tmp_path: Path, es_url: str, index_prefix: str, model: str, point: str) -> None:
    """Run the worker until it holds at ``point``, then ``kill -9`` it."""
    with children() as started:
        child = Child(WORKER, tmp_path, point, es_url, index_prefix, model, point)
        started.append(child)
        child.wait_paused()
        child.proc.kill()
        child.proc.communicate()


def _change(mapper: em.Mapper, model: type[Any], es: Elasticsearch, old: str) -> dict[str, int]:
    """Between the runs: 5 documents updated, 3 removed, 4 added; returns what the old index
    holds now (id -> n)."""
    repo = mapper.repository(model)
    for i in range(10, 15):
        doc = repo.get(f"d{i:04}")
        assert doc is not None
        doc.n = 1000 + i
        repo.save(doc)
    repo.remove([f"d{i:04}" for i in range(20, 23)])
    repo.add([model(id=f"x{i}", n=2000 + i) for i in range(4)], consistency="immediate")
    return _stored(es, old)


def _stored(es: Elasticsearch, index: str) -> dict[str, int]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=10_000)["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


def _settled(es: Elasticsearch, index: str, expected: dict[str, int]) -> None:
    """0 lost, 0 resurrected, 0 stale."""
    stored = _stored(es, index)
    lost = sorted(set(expected) - set(stored))
    resurrected = sorted(set(stored) - set(expected))
    stale = sorted(i for i in expected if i in stored and stored[i] != expected[i])
    assert (lost, resurrected, stale) == ([], [], [])


def _rerun(mapper: em.Mapper, model: type[Any], **options: Any) -> tuple[ReindexResult, list[str]]:
    messages: list[str] = []

    def progress(report: ReindexProgress) -> None:
        if report.message:
            messages.append(f"{report.phase}: {report.message}")

    result = reindex(mapper, model, progress=progress, catch_up_margin=NO_MARGIN, **options)
    return result, messages


def test_a_rerun_after_a_kill_past_the_copy_copies_only_what_changed_since(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 200)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")
    record = read_record(es_client, v2)
    assert record is not None and record.completed and record.source == v1
    es_client.indices.refresh(index=v2)
    assert es_client.count(index=v2)["count"] == 200  # what the killed run copied

    expected = _change(old, ItemV1, es_client, v1)
    # the new version of the application starts (configure_indexes puts the mapping on the
    # half-built v2: the record in its ``_meta`` stays), then reindexes
    result, messages = _rerun(make_mapper(ItemV2, configure=True), ItemV2)

    assert result.status == "reindexed" and result.swapped and result.old_deleted
    assert result.resumed_from == record.started
    # the rerun read the 9 documents written since the killed run's copy began, and wrote
    # them (5 updated, 4 added); the 3 removed ones were deleted from the copy
    assert f"copy: Resuming {v1} -> {v2} from documents changed since" in "\n".join(messages)
    assert "copy: Total: 9 Copied: 9 VersionConflicts: 0 Failures: 0" in messages
    assert (result.copied, result.caught_up, result.removed) == (9, 0, 3)
    _settled(es_client, v2, expected)
    assert sorted(es_client.indices.get_alias(name=f"{index_prefix}items").body) == [v2]
    assert not es_client.indices.exists(index=v1)


def test_a_rerun_after_a_kill_during_the_copy_stops_its_task_and_writes_only_the_rest(
    tmp_path: Path, make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 300)
    gate = cluster.tasks.hold()  # the copy's task waits at the proxy: it outlives the kill
    _killed(tmp_path, cluster.url, index_prefix, "ItemV2", "copying")
    assert gate.wait_reached() and cluster.tasks.running == 1
    record = read_record(es_client, v2)
    assert record is not None and not record.completed  # interrupted mid-copy
    # what the killed run's pass had written before the kill: the first half, as read then
    es_client.reindex(
        source={"index": v1, "query": {"range": {"n": {"lt": 150}}}},
        dest={"index": v2, "version_type": "external"},
        refresh=True,
    )
    expected = _change(old, ItemV1, es_client, v1)  # 3 of the copied half removed since

    result, messages = _rerun(make_mapper(ItemV2, url=cluster.url), ItemV2)

    # the killed run's task was cancelled before anything was reused: it never wrote
    assert cluster.tasks.cancels == 1 and cluster.tasks.running == 0
    assert result.status == "reindexed" and result.resumed_from == record.started
    assert f"copy: Resuming {v1} -> {v2} from the copy interrupted" in "\n".join(messages)
    # every document read (301), written only the 150 never copied, the 5 updated and the
    # 4 added; the 3 removed were deleted from the copy
    assert "copy: Total: 301 Copied: 159 VersionConflicts: 142 Failures: 0" in messages
    assert (result.copied, result.caught_up, result.removed) == (159, 0, 3)
    _settled(es_client, v2, expected)


def test_a_changed_script_between_the_runs_means_a_full_copy(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 50)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")  # copied without a script
    expected = _change(old, ItemV1, es_client, v1)

    result, messages = _rerun(make_mapper(ItemV2Scripted), ItemV2Scripted)

    assert result.resumed_from is None
    assert not any("Resuming" in m for m in messages)
    assert "the reindex script, pipeline, mapping or settings changed" in caplog.text
    assert result.copied == len(expected) == 51  # everything, through the script
    _settled(es_client, v2, expected)
    hits = es_client.search(index=v2, size=100)["hits"]["hits"]
    assert all(h["_source"]["label"] == f"item-{h['_source']['n']}" for h in hits)
    assert read_record(es_client, v2) is not None


class ItemV2Wider(em.Document, em.HasDates, em.Versioned):
    """ItemV2 with another mapping (a ``note`` field): a target built for ItemV2 is not it."""

    class Index:
        name = "items"
        version = 2
        settings = SETTINGS

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Long(), default=0)
    label: str = em.field(em.Keyword(), default="")
    note: str = em.field(em.Text(), default="")


def test_a_changed_mapping_between_the_runs_means_a_full_copy(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v2 = f"{index_prefix}items-v2"
    _seed(make_mapper, ItemV1, 50)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")

    result, _ = _rerun(make_mapper(ItemV2Wider), ItemV2Wider)

    assert (result.resumed_from, result.copied, result.new_count) == (None, 50, 50)
    mapping = es_client.indices.get_mapping(index=v2)[v2]["mappings"]
    assert mapping["properties"]["note"]["type"] == "text"


def test_an_old_index_made_again_under_its_name_means_a_full_copy(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    _seed(make_mapper, ItemV1, 50)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")
    es_client.indices.delete(index=v1)  # and made again, with other documents
    again = _seed(make_mapper, ItemV1, 20)
    again.repository(ItemV1).add([ItemV1(id="fresh", n=7)], consistency="immediate")
    expected = _stored(es_client, v1)

    result, _ = _rerun(make_mapper(ItemV2), ItemV2)

    assert result.resumed_from is None and result.copied == 21
    assert f"{v1} was deleted and created again since it was copied" in caplog.text
    _settled(es_client, v2, expected)  # none of the first v1's documents 20..49


def test_a_model_without_dates_resumes_by_comparing_every_document(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}plain_items-v1", f"{index_prefix}plain_items-v2"
    old = _seed(make_mapper, PlainV1, 100)
    _killed(tmp_path, es_url, index_prefix, "PlainV2", "copied")
    expected = _change(old, PlainV1, es_client, v1)

    result, messages = _rerun(make_mapper(PlainV2), PlainV2)

    assert result.resumed_from is not None
    assert f"copy: Resuming {v1} -> {v2} from the copy completed" in "\n".join(messages)
    # every document read, only the 5 updated and 4 added written (external versions)
    assert "copy: Total: 101 Copied: 9 VersionConflicts: 92 Failures: 0" in messages
    assert (result.copied, result.removed) == (9, 3)
    _settled(es_client, v2, expected)


def test_writers_during_the_resumed_rerun_lose_nothing(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 200)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")
    base = _change(old, ItemV1, es_client, v1)
    ids = sorted(base)

    mapper = make_mapper(ItemV2)
    repo = mapper.repository(ItemV2)
    latest: dict[str, int] = {}
    removed: set[str] = set()
    stop, errors = threading.Event(), list[Exception]()
    progressed = threading.Condition()
    finished = [0]

    def write(step: int, rnd: random.Random) -> None:
        if step % 5 == 0:
            doc = repo.add(ItemV2(id=f"w{step}", n=step))
            ids.append(doc.id)
            latest[doc.id] = step
            return
        id = rnd.choice(ids)
        if step % 7 == 0 and id not in removed:
            repo.remove(id)
            removed.add(id)
            latest.pop(id, None)
            return
        doc = repo.get(id)
        if doc is not None:
            doc.n = step
            repo.save(doc)
            latest[id] = step

    def writer() -> None:
        rnd, step = random.Random(11), 0
        try:
            while not stop.is_set():
                step += 1
                try:
                    write(step, rnd)
                except em.VersionConflictError:
                    pass  # read from v1, saved after the swap: re-read next time
                except em.EsmapperError as exc:
                    if "cluster_block_exception" not in str(exc):
                        raise
                with progressed:
                    finished[0] += 1
                    progressed.notify_all()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            with progressed:
                finished[0] += 1_000_000
                progressed.notify_all()

    def let_the_writer_work(writes: int) -> None:
        with progressed:
            target = finished[0] + writes
            assert progressed.wait_for(lambda: finished[0] >= target, 60)

    def progress(report: ReindexProgress) -> None:
        if report.phase in ("prepare", "copy", "catch_up") and report.message:
            let_the_writer_work(3)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        # the default catch-up margin: a write stamped before a pass's start and applied
        # after its refresh is caught up only within it (the killed run had no writers)
        result = reindex(mapper, ItemV2, progress=progress)
        let_the_writer_work(3)  # after the swap
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert result.status == "reindexed" and result.resumed_from is not None
    assert result.copied < len(base)  # the delta, not every document
    assert len(latest) >= 10, "the writer barely ran"
    expected = {i: n for i, n in {**base, **latest}.items() if i not in removed}
    _settled(es_client, v2, expected)


def test_a_partition_left_by_a_killed_run_is_resumed_and_the_others_copied(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    p, now = index_prefix, dt.datetime.now(dt.timezone.utc)
    old = make_mapper(Log1)
    repo = old.repository(Log1)
    days = [now - dt.timedelta(days=2), now - dt.timedelta(days=1)]
    docs = [
        Log1(id=f"{day}-{i}", message=f"m{i}", created_utc=at)
        for day, at in enumerate(days)
        for i in range(10)
    ]
    repo.add(docs, consistency="immediate")
    first, second = (f"{p}tlogs-v{{}}-{at:%Y.%m.%d}" for at in days)
    _killed(tmp_path, es_url, index_prefix, "Log2Plain", "copied")  # after the first's copy
    es_client.indices.refresh(index=first.format(2))
    assert es_client.count(index=first.format(2))["count"] == 10
    assert not es_client.indices.exists(index=second.format(2))
    # between the runs, in the first partition: one updated, one removed, one added
    doc = repo.get("0-3")
    assert doc is not None
    doc.message = "changed"
    repo.save(doc, consistency="immediate")
    repo.remove("0-4", consistency="immediate")
    repo.add(Log1(id="0-new", message="added", created_utc=days[0]), consistency="immediate")
    expected = {
        d.id: ("changed" if d.id == "0-3" else d.message) for d in docs if d.id != "0-4"
    } | {"0-new": "added"}

    result, _ = _rerun(make_mapper(Log2Plain), Log2Plain)

    resumed, copied = result.partitions
    assert resumed.old_index == first.format(1) and resumed.resumed_from is not None
    assert (resumed.copied, resumed.removed) == (2, 1)  # the updated and the added one
    assert (copied.resumed_from, copied.copied) == (None, 10)
    assert result.resumed_from == resumed.resumed_from
    es_client.indices.refresh(index=f"{p}tlogs")
    hits = es_client.search(index=f"{p}tlogs", size=100)["hits"]["hits"]
    assert {h["_id"]: h["_source"]["message"] for h in hits} == expected
    assert {h["_index"] for h in hits} == {first.format(2), second.format(2)}


def test_a_killed_runs_task_is_stopped_before_a_full_copy_too(
    tmp_path: Path, make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    _seed(make_mapper, ItemV1, 40)
    gate = cluster.tasks.hold()
    _killed(tmp_path, cluster.url, index_prefix, "ItemV2", "copying")  # its task outlives it
    assert gate.wait_reached() and cluster.tasks.running == 1
    es_client.reindex(source={"index": v1}, dest={"index": v2}, refresh=True)  # half done
    es_client.delete(index=v1, id="d0007", refresh=True)  # must not come back

    # another script: v2 is deleted and built again, but only once the old task is gone (it
    # would write the documents it read, d0007 included, into the new v2)
    result, _ = _rerun(make_mapper(ItemV2Scripted, url=cluster.url), ItemV2Scripted)

    assert cluster.tasks.cancels == 1 and cluster.tasks.running == 0
    assert (result.resumed_from, result.copied) == (None, 39)
    _settled(es_client, v2, {f"d{i:04}": i for i in range(40) if i != 7})


def test_the_resumed_pass_takes_the_reruns_catch_up_margin(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    """The killed run recorded its copy's start with its own margin (0 here); the rerun's
    margin (the default minute) is what its catch-up passes allow for writers' clocks
    behind the reindexer's: the resumed pass, the first catch-up of the rerun, allows it
    too. A write stamped 30 s before the copy began and applied after it would otherwise
    be lost (a normal run with the same margin catches it up)."""
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 30)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")  # margin 0
    record = read_record(es_client, v2)
    assert record is not None and record.completed
    # an application server whose clock is 30 s behind writes after the copy
    stamp = format_datetime(record.started - dt.timedelta(seconds=30))
    doc = {"name": "late", "n": 99, "created_utc": stamp, "updated_utc": stamp}
    es_client.index(index=v1, id="skewed", document=doc, refresh=True)
    expected = _stored(es_client, v1)
    assert "skewed" in expected and old is not None

    # the rerun comes 5 minutes later (its own catch-up passes start after the write)
    later = make_mapper(ItemV2, clock=lambda: dt.datetime.now(dt.timezone.utc) + FIVE_MINUTES)
    result = reindex(later, ItemV2)  # the default catch-up margin

    assert result.resumed_from == record.started
    _settled(es_client, v2, expected)


def test_a_document_written_between_the_runs_with_an_old_updated_date_is_copied(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    """Between the runs (minutes, days: longer than any copy) an import writes documents
    that keep their own updated date (a restore, a migration from another store, a patch
    whose caller gave one). The resumed pass selects by date *or* by ``_seq_no`` above the
    recorded ``max_seq_no`` (every write since the copy began has one), so neither such a
    date nor a clock far behind loses a document the interrupted copy never saw."""
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    _seed(make_mapper, ItemV1, 30)
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")
    stamp = "2020-01-01T00:00:00Z"
    imported = {"name": "imported", "n": 7, "created_utc": stamp, "updated_utc": stamp}
    es_client.index(index=v1, id="imported", document=imported, refresh=True)
    changed = es_client.get(index=v1, id="d0003")["_source"] | {"n": 3003}
    es_client.index(index=v1, id="d0003", document=changed, refresh=True)  # date kept too
    expected = _stored(es_client, v1)

    result, messages = _rerun(make_mapper(ItemV2), ItemV2)

    assert result.resumed_from is not None
    assert "copy: Total: 2 Copied: 2 VersionConflicts: 0 Failures: 0" in messages
    _settled(es_client, v2, expected)


def test_a_document_removed_and_imported_again_between_the_runs_replaces_its_copy(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, es_client: Elasticsearch,
    index_prefix: str,
) -> None:  # fmt: skip
    """Removed and written again under its id between the runs, by an import that keeps an
    old updated date: it restarts at ``_version`` 1 (below its copy's), so the passes skip
    it, and the stale-copy comparison must find it by its ``_seq_no`` alone, not narrowed
    to recent dates as within one run."""
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    old = _seed(make_mapper, ItemV1, 20)
    repo = old.repository(ItemV1)
    for n in (105, 205):  # the copy will carry _version 3
        doc = repo.get("d0005")
        assert doc is not None
        doc.n = n
        repo.save(doc, consistency="immediate")
    _killed(tmp_path, es_url, index_prefix, "ItemV2", "copied")
    es_client.delete(index=v1, id="d0005", refresh=True)
    stamp = "2020-01-01T00:00:00Z"
    imported = {"name": "imported", "n": 5005, "created_utc": stamp, "updated_utc": stamp}
    es_client.index(index=v1, id="d0005", document=imported, refresh=True)
    assert es_client.get(index=v1, id="d0005")["_version"] == 1  # (no tombstone kept)
    expected = _stored(es_client, v1)

    result, _ = _rerun(make_mapper(ItemV2), ItemV2)

    assert result.resumed_from is not None
    _settled(es_client, v2, expected)
