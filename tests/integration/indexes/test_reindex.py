"""Version upgrades: reindex under load, failures, the lock, scripts, reindex_outdated."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexError, ReindexProgress, reindex, reindex_outdated
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2, ItemV2Broken, ItemV2Scripted, PlainV1, PlainV2


def _targets(client: Elasticsearch, alias: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(name=alias).body)


def _seed(make_mapper: MakeMapper, model: type[Any], count: int, **values: Any) -> list[str]:
    mapper = make_mapper(model)
    mapper.configure_indexes()
    docs = mapper.repository(model).add([model(n=i, **values) for i in range(count)])
    return [d.id for d in docs]


def _is_blocked_write(exc: em.EsmapperError) -> bool:
    """A write refused by the old index's write block (until the bulk writer retries them)."""
    failures = getattr(exc, "failures", None) or []
    types = {exc.error_type} | {getattr(f, "error_type", None) for f in failures}
    return "cluster_block_exception" in types


def test_writes_during_a_reindex_all_reach_the_new_index(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, ItemV1, 2000, name="seed")
    mapper = make_mapper(ItemV2)
    (state,) = mapper.configure_indexes()
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    assert (state.action, state.current_index) == ("outdated", v1)  # configure never reindexes
    assert _targets(es_client, alias) == [v1]

    repo = mapper.repository(ItemV2)
    latest: dict[str, int] = {}
    stop, errors = threading.Event(), list[Exception]()

    def write(step: int, rnd: random.Random) -> None:
        if step % 3 == 0:
            doc = repo.add(ItemV2(name=f"new{step}", n=step))
            ids.append(doc.id)
            latest[doc.id] = step
            return
        id = rnd.choice(ids)
        doc = repo.get(id)
        if doc is not None:
            doc.n = step
            repo.save(doc)
            latest[id] = step

    # the writer counts the writes it started and finished; the reindex's progress
    # callback waits on those counts (not on time) to let the writer work between phases
    progressed = threading.Condition()
    counts = {"started": 0, "finished": 0, "held": 0}

    def count(key: str) -> None:
        with progressed:
            counts[key] += 1
            progressed.notify_all()

    def let_the_writer_work(key: str, writes: int) -> None:
        """Until the writer has ``key`` (started, finished, held) ``writes`` more writes, or
        failed."""
        with progressed:
            target = counts[key] + writes
            done = progressed.wait_for(lambda: counts[key] >= target or bool(errors), 60)
        assert done, f"the writer {key} no write in 60 s"

    def writer() -> None:
        rnd, step = random.Random(7), 0
        try:
            while not stop.is_set():
                step += 1
                count("started")
                try:
                    write(step, rnd)
                except em.VersionConflictError:
                    pass  # read from v1, saved to v2 after the swap: re-read next time
                except em.EsmapperError as exc:
                    if not _is_blocked_write(exc):
                        errors.append(exc)
                        return
                    time.sleep(0.01)  # a back-off before writing again, not a wait on a thread
                count("finished")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            count("finished")  # wakes a waiting progress callback after a failure too

    def back_off(seconds: float) -> None:
        count("held")  # the bulk writer waits on a write refused by the old index's block
        time.sleep(seconds)  # then sends it again: the writer's own back-off

    mapper.writer.sleep = back_off
    phases: list[str] = []

    def progress(report: ReindexProgress) -> None:
        if report.phase not in phases:
            phases.append(report.phase)
        if report.phase in ("prepare", "copy", "catch_up") and report.message:
            let_the_writer_work("finished", 3)  # writes between the phases
        if report.phase == "final_catch_up" and report.message:
            # a write refused by the write-blocked old index, just before the swap: the
            # bulk writer holds it (backs off and sends it again) until the swap
            let_the_writer_work("held", 1)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        result = reindex(mapper, ItemV2, progress=progress)
        let_the_writer_work("finished", 3)  # writes after the swap
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert phases == [
        "prepare",
        "copy",
        "catch_up",
        "final_catch_up",
        "verify",
        "swap",
        "delete_old",
        "done",
    ]
    assert result.status == "reindexed" and result.swapped and result.old_deleted
    assert result.copied >= 2000 and result.new_count >= result.old_count >= 2000
    assert _targets(es_client, alias) == [v2]
    assert not es_client.indices.exists(index=v1)
    # the pacing above guarantees writes in every phase (3 per progress message, 3 after
    # the swap), not a number of writes: how many fit depends on the machine
    assert len(latest) >= 10, "the writer barely ran"

    es_client.indices.refresh(index=v2)
    docs = es_client.mget(index=v2, ids=sorted(latest))["docs"]
    stored = {d["_id"]: d["_source"]["n"] for d in docs if d.get("found")}
    assert stored == latest
    assert es_client.count(index=v2)["count"] == len(set(ids))


def test_a_failing_script_leaves_the_old_index_serving(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 20, name="seed")
    mapper = make_mapper(ItemV2Broken)
    mapper.configure_indexes()
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"

    with pytest.raises(ReindexError) as caught:
        reindex(mapper, ItemV2Broken)
    assert isinstance(caught.value, em.MigrationError)
    assert caught.value.result.status == "failed" and not caught.value.result.swapped
    assert caught.value.failures
    assert _targets(es_client, alias) == [v1]
    assert not es_client.indices.exists(index=v2)
    assert es_client.count(index=v1)["count"] == 20
    # still writable through the alias (no write block left behind)
    repo = mapper.repository(ItemV2Broken)
    repo.add(ItemV2Broken(name="after", n=1), consistency="immediate")
    assert repo.count() == 21


def test_a_second_concurrent_reindex_of_the_alias_raises_lock_error(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 20, name="seed")
    mapper = make_mapper(ItemV2)
    entered, release = threading.Event(), threading.Event()

    def hold(report: ReindexProgress) -> None:
        if report.phase == "prepare":
            entered.set()
            assert release.wait(10)

    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(reindex(mapper, ItemV2, progress=hold)))
    first.start()
    try:
        assert entered.wait(10)
        with pytest.raises(em.LockError):
            reindex(mapper, ItemV2, lock_wait=dt.timedelta(0))
    finally:
        release.set()
        first.join()
    assert results[0].status == "reindexed"
    # once the first one finished, a rerun sees the work done and writes nothing
    again = reindex(mapper, ItemV2, lock_wait=dt.timedelta(0))
    assert again.status == "up_to_date"
    assert _targets(es_client, f"{index_prefix}items") == [f"{index_prefix}items-v2"]


def test_the_reindex_script_transforms_the_documents(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 5, name="seed")
    mapper = make_mapper(ItemV2Scripted)
    reports: list[ReindexProgress] = []
    result = reindex(mapper, ItemV2Scripted, progress=reports.append)
    assert result.status == "reindexed"
    assert reports[-1].percent == 100 and reports[-1].phase == "done"
    assert [r.percent for r in reports] == sorted(r.percent for r in reports)
    labels = {d.n: d.label for d in mapper.repository(ItemV2Scripted).find(limit=10)}
    assert labels == {i: f"item-{i}" for i in range(5)}


def test_deletes_during_the_reindex_are_applied_and_models_without_dates_work(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, PlainV1, 30)
    mapper = make_mapper(PlainV2)
    repo = mapper.repository(PlainV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # after the copy, before the block
            repo.remove(ids[:5])
            repo.add(PlainV2(id="late", n=99))

    result = reindex(mapper, PlainV2, progress=during)
    assert (result.status, result.removed, result.old_count, result.new_count) == (
        "reindexed",
        5,
        26,
        26,
    )
    v2 = f"{index_prefix}plain_items-v2"
    assert es_client.get(index=v2, id="late")["_source"]["n"] == 99
    assert not es_client.options(ignore_status=404).get(index=v2, id=ids[0])["found"]


def test_reindex_outdated_reindexes_only_outdated_versioned_models(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 3, name="seed")
    _seed(make_mapper, PlainV2, 3)  # already at its current version
    mapper = make_mapper(ItemV2, PlainV2)
    mapper.configure_indexes()
    results = reindex_outdated(mapper)
    assert [(r.model, r.old_index, r.new_index) for r in results] == [
        ("ItemV2", f"{index_prefix}items-v1", f"{index_prefix}items-v2")
    ]
    assert reindex_outdated(mapper) == []
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged"] * 2


def test_reindex_outdated_reports_each_model_before_and_after(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 2, name="seed")
    mapper = make_mapper(PlainV2, ItemV2)
    mapper.configure_indexes()
    events: list[tuple[str, str, str | None]] = []
    results = reindex_outdated(
        mapper,
        starting=lambda model, spec, current: events.append(("start", spec.alias, current)),
        done=lambda model, result: events.append(("done", model.__name__, result.status)),
    )
    assert events == [
        ("start", f"{index_prefix}items", f"{index_prefix}items-v1"),
        ("done", "ItemV2", "reindexed"),
    ]
    assert [r.copied for r in results] == [2]


def test_reindex_outdated_stops_at_the_first_failure_after_reporting_its_start(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    _seed(make_mapper, ItemV1, 2, name="seed")
    mapper = make_mapper(ItemV2)
    mapper.configure_indexes()
    started: list[str] = []

    def refuse(report: ReindexProgress) -> None:
        raise RuntimeError(f"stop at {report.phase}")

    with pytest.raises(RuntimeError, match="stop at"):
        reindex_outdated(
            mapper,
            progress=refuse,
            starting=lambda model, spec, current: started.append(model.__name__),
            done=lambda model, result: pytest.fail("a failed reindex is not done"),
        )
    assert started == ["ItemV2"]
    with pytest.raises(ValueError, match="batch_size"):  # checked before any request
        reindex_outdated(mapper, batch_size=0, starting=lambda *a: pytest.fail("started"))


def _index_names(client: Elasticsearch, prefix: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(index=f"{prefix}*").body)


@pytest.mark.parametrize("version_check", [True, False])
def test_a_patch_read_before_a_reindex_is_written_through_the_alias_not_the_old_index(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, version_check: bool
) -> None:
    """``patch(id, ActionPatch)`` reads the document from ``items-v1``; a reindex to v2
    swaps and deletes v1 before the write. Named physically, the write would make the
    server create ``items-v1`` again (guessed mappings, behind no alias) and store the
    patch where no read finds it. Through the alias it reaches v2: the version read from v1
    answers 409 there (a conflict, nothing lost; unless the copy happens to be at the same
    seq_no and primary term, then it is that version's copy and the patch applies), or
    without the check it is stored in v2."""
    old = make_mapper(ItemV1)
    new = make_mapper(ItemV2)
    repo = old.repository(ItemV1)
    item = repo.add(ItemV1(name="a", n=1), consistency="wait")

    def bump(doc: Any) -> bool:
        reindex(new, ItemV2)  # another process upgrades meanwhile (swap + delete v1)
        doc.n = 2
        return True

    try:
        repo.patch(item.id, em.ActionPatch(bump), version_check=version_check)
        patched = True
    except em.VersionConflictError:  # the copy in v2 is at another (seq_no, primary_term)
        assert version_check
        patched = False
    assert f"{index_prefix}items-v1" not in _index_names(es_client, index_prefix)
    got = new.repository(ItemV2).get(item.id)
    assert got is not None and got.n == (2 if patched else 1)
