"""Snapshot jobs against the test server: create and wait, names, locks, lost answers,
cleanup by age that never deletes the newest successful snapshot."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from elasticsearch import Elasticsearch

from esmapper.jobs import CleanupSnapshotsJob, JobError, SnapshotJob, SnapshotProgress
from esmapper.locks import LockProvider
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import ItemV1

UTC = dt.timezone.utc


def _names(es_client: Elasticsearch, repository: str) -> list[str]:
    body = es_client.snapshot.get(repository=repository, snapshot="_all").body
    return sorted(s["snapshot"] for s in body["snapshots"])


def test_a_snapshot_of_the_models_is_taken_and_waited_for(
    make_mapper: MakeMapper, repository: str, index_prefix: str, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(ItemV1)
    mapper.repository(ItemV1).add([ItemV1(name="a"), ItemV1(name="b")], consistency="immediate")
    seen: list[SnapshotProgress] = []
    result = SnapshotJob(mapper, repository, progress=seen.append).run()
    assert result.is_success, result
    info = result.details
    assert info.state == "SUCCESS" and info.name.startswith("snapshot-")
    assert info.indices == (f"{index_prefix}items-v1",)  # the alias resolved; no state index yet
    assert info.metadata == {"taken_by": "esmapper"}
    assert seen[-1].state == "SUCCESS" and seen[-1].percent == 100
    assert _names(es_client, repository) == [info.name]


def test_a_taken_name_fails_and_is_never_overwritten(
    make_mapper: MakeMapper, repository: str
) -> None:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    first = SnapshotJob(mapper, repository, name_pattern="fixed-name").run()
    assert first.is_success, first
    again = SnapshotJob(mapper, repository, name_pattern="fixed-name").run()
    assert again.is_failed and isinstance(again.error, JobError)
    assert "a snapshot named 'fixed-name' already exists" in again.message


def test_an_unknown_repository_fails_the_run_with_the_remedy(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(ItemV1)
    for job in (
        SnapshotJob(mapper, "no-such-repository"),
        CleanupSnapshotsJob(mapper, "no-such-repository", max_age=dt.timedelta(days=1)),
    ):
        result = job.run()
        assert result.is_failed
        assert "unknown snapshot repository 'no-such-repository': register it first" in (
            result.message
        )


def test_a_held_lock_skips_the_run(
    make_mapper: MakeMapper, repository: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(ItemV1)
    locks = LockProvider(es_client, index_prefix=index_prefix)
    with locks.acquire(f"snapshots:{repository}"):
        result = SnapshotJob(mapper, repository).run()
        cleanup = CleanupSnapshotsJob(mapper, repository, max_age=dt.timedelta(0)).run()
    for skipped in (result, cleanup):
        assert skipped.is_success and skipped.skipped
        assert f"lock 'snapshots:{repository}' is held by another process" in skipped.message
    assert _names(es_client, repository) == []


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_lost_answer_to_the_create_is_read_back(
    make_mapper: MakeMapper,
    repository: str,
    es_url: str,
    es_client: Elasticsearch,
    applied: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(ItemV1, url=proxy.url)
        mapper.configure_indexes()
        path = rf"^/_snapshot/{repository}/lost$"
        proxy.drop_connection(path=path, method="PUT", after_forwarding=applied)
        with caplog.at_level(logging.WARNING, logger="esmapper.jobs"):
            result = SnapshotJob(mapper, repository, name_pattern="lost").run()
        assert result.is_success, result
        # applied: read back and not resent; not applied: read back and sent once more
        assert proxy.count(path, method="PUT") == (1 if applied else 2)
    assert _names(es_client, repository) == ["lost"]
    # the warning is the job's, where a user filtering esmapper.jobs looks for it
    [lost] = [r for r in caplog.records if "the answer was lost" in r.getMessage()]
    assert lost.name == "esmapper.jobs.snapshot-create"
    assert ("read back: it was applied" if applied else "resending") in lost.getMessage()


def test_cleanup_deletes_old_snapshots_but_never_the_newest_successful_one(
    make_mapper: MakeMapper, repository: str, es_client: Elasticsearch, es_url: str
) -> None:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    for name in ("s1", "s2", "s3"):
        assert SnapshotJob(mapper, repository, name_pattern=name).run().is_success
    month = dt.timedelta(days=30)
    now = dt.datetime.now(UTC)
    young = CleanupSnapshotsJob(mapper, repository, max_age=month).run()
    assert young.is_success and young.message == f"deleted 0 of 3 snapshots in {repository}"

    later = make_mapper(ItemV1, clock=FakeClock(now + dt.timedelta(days=40)))
    dry = CleanupSnapshotsJob(later, repository, max_age=month, keep=2, dry_run=True).run()
    assert [s.name for s in dry.details.deleted] == ["s1"]
    assert dry.message == f"would delete 1 of 3 snapshots in {repository}"
    assert _names(es_client, repository) == ["s1", "s2", "s3"]

    with FaultProxy(es_url, lifetime=120) as proxy:  # a lost answer to a delete: read back
        lost = make_mapper(ItemV1, clock=FakeClock(now + dt.timedelta(days=40)), url=proxy.url)
        proxy.drop_connection(path=rf"/_snapshot/{repository}/s1$", method="DELETE",
                              after_forwarding=True)  # fmt: skip
        result = CleanupSnapshotsJob(lost, repository, max_age=month, keep=0).run()
    assert result.is_success, result
    assert [s.name for s in result.details.deleted] == ["s1", "s2"]
    assert [(s.name, why) for s, why in result.details.kept] == [
        ("s3", "the newest successful snapshot")
    ]
    assert _names(es_client, repository) == ["s3"]


def _name_error(repository: str, name: str, error: str, why: str) -> dict[str, object]:
    """A 400 as Elasticsearch words it: the type, and the reason that says why."""
    cause = {"type": error, "reason": f"[{repository}:{name}] {why}"}
    return {"error": {"root_cause": [cause], **cause}, "status": 400}


def test_a_taken_name_is_recognised_by_the_reason_too(
    make_mapper: MakeMapper, repository: str, es_url: str
) -> None:
    # Elasticsearch versions answer a taken name as invalid_snapshot_name_exception, with
    # the reason "snapshot with the same name already exists" (the type alone says less)
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(ItemV1, url=proxy.url)
        mapper.configure_indexes()
        taken = _name_error(
            repository,
            "taken",
            "invalid_snapshot_name_exception",
            "Invalid snapshot name [taken], snapshot with the same name already exists",
        )
        proxy.reply_status(400, path=rf"^/_snapshot/{repository}/taken$", body=taken)
        result = SnapshotJob(mapper, repository, name_pattern="taken").run()
    assert result.is_failed and isinstance(result.error, JobError)
    assert "a snapshot named 'taken' already exists" in result.message


def test_a_resend_answered_in_progress_is_our_first_create(
    make_mapper: MakeMapper, repository: str, es_url: str
) -> None:
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(ItemV1, url=proxy.url)
        mapper.configure_indexes()
        path = rf"^/_snapshot/{repository}/mine$"
        proxy.drop_connection(path=path, method="PUT")
        running = _name_error(
            repository,
            "mine",
            "invalid_snapshot_name_exception",
            "Invalid snapshot name [mine], snapshot with the same name is already in-progress",
        )
        proxy.reply_status(400, path=path, method="PUT", body=running)
        result = SnapshotJob(mapper, repository, name_pattern="mine", wait=False).run()
        assert result.is_success, result
        assert proxy.count(path, method="PUT") == 2


def test_an_invalid_name_after_a_lost_answer_is_not_taken_for_ours(
    make_mapper: MakeMapper, repository: str, es_url: str
) -> None:
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(ItemV1, url=proxy.url)
        mapper.configure_indexes()
        path = rf"^/_snapshot/{repository}/bad$"
        proxy.drop_connection(path=path, method="PUT")
        invalid = _name_error(
            repository,
            "bad",
            "invalid_snapshot_name_exception",
            "Invalid snapshot name [bad], must be lowercase",
        )
        proxy.reply_status(400, path=path, method="PUT", body=invalid)
        result = SnapshotJob(mapper, repository, name_pattern="bad", wait=False).run()
    assert result.is_failed
    assert "must be lowercase" in result.message
