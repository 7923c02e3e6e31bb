"""A reindex run paused past its lease (after its last renewal) while another run takes the
lock over: the paused run's alias swap is refused by the server, nothing it does afterwards
touches the other run's work, and no write is lost.

The pause is simulated deterministically: the swap step of each run is held on an event
(the run has renewed its lock right before it, as a stopped process would have), and the
paused run's lease is ended by deleting its lock document (what an expiry allows another
run to do: take the lock over)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import (
    ReindexError,
    ReindexResult,
    _ensure,
    _reindex_fence,
    _reindex_run,
    reindex,
)
from esmapper.indexes._fence import fence_name
from esmapper.indexes._reindex_pass import delete_extras
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2


def _targets(client: Elasticsearch, alias: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(name=alias).body)


def _run(outcome: dict[str, Any], key: str, mapper: em.Mapper) -> threading.Thread:
    def body() -> None:
        try:
            outcome[key] = reindex(mapper, ItemV2)
        except BaseException as exc:
            outcome[key] = exc

    thread = threading.Thread(target=body, name=f"reindex-{key}")
    thread.start()
    return thread


def test_a_run_paused_past_its_lease_cannot_swap_onto_the_new_holders_index(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed = make_mapper(ItemV1, configure=True)
    seed.repository(ItemV1).add([ItemV1(name="seed", n=i) for i in range(20)])
    first, second, writer = (make_mapper(ItemV2) for _ in range(3))
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"

    first_paused, first_resume = threading.Event(), threading.Event()
    second_paused, second_resume = threading.Event(), threading.Event()
    real_swap = _reindex_run._swap

    def swap(run: _reindex_run.Run) -> None:
        if run.ctx is first.services:
            first_paused.set()
            assert first_resume.wait(60)
        elif run.ctx is second.services:
            second_paused.set()
            assert second_resume.wait(60)
        real_swap(run)

    monkeypatch.setattr(_reindex_run, "_swap", swap)
    outcome: dict[str, Any] = {}
    paused = _run(outcome, "first", first)
    assert first_paused.wait(60)
    # the first run's lease ends while it is stopped: the second takes the lock over and
    # gets as far as its own swap (the old index write-blocked, its copy complete)
    es_client.delete(index=f"{index_prefix}esmapper-locks", id=f"reindex:{alias}", refresh=True)
    taking_over = _run(outcome, "second", second)
    assert second_paused.wait(60)

    first_resume.set()  # the stopped run wakes up and sends its swap
    paused.join(60)
    assert isinstance(outcome["first"], ReindexError), outcome["first"]
    assert "refused" in str(outcome["first"])
    assert _targets(es_client, alias) == [v1]  # nothing moved
    assert es_client.indices.exists(index=v2)  # the second run's index is untouched

    added: list[Any] = []
    write = threading.Thread(  # waits out the write block, lands after the swap
        target=lambda: added.append(writer.repository(ItemV2).add(ItemV2(name="meanwhile", n=99)))
    )
    write.start()
    second_resume.set()
    taking_over.join(60)
    write.join(60)

    assert isinstance(outcome["second"], ReindexResult), outcome["second"]
    assert outcome["second"].status == "reindexed"
    assert _targets(es_client, alias) == [v2]
    assert not es_client.indices.exists(index=v1)
    repo = writer.repository(ItemV2)
    assert repo.count(consistency="immediate") == 21
    assert repo.get(added[0].id) is not None
    aliases = es_client.indices.get_alias(index=v2).body[v2]["aliases"]
    assert sorted(aliases) == sorted([alias, fence_name(v2)])  # no run marker left


@pytest.mark.parametrize("delete_old", [True, False], ids=["old-deleted", "old-kept"])
def test_a_first_write_racing_a_version_bump_goes_to_the_new_index(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    delete_old: bool,
) -> None:
    """A process's first write reads the alias (v1), then a reindex swaps it to v2 (and
    deletes v1, or keeps it) before the write checks v1's fence: the write lands in v2
    (it got a 404 adding the fence to the deleted v1), and the replaced v1 gets no fence
    back (a write conditioned on a version read from it must stay refused)."""
    seed = make_mapper(ItemV1, configure=True)
    seed.repository(ItemV1).add(ItemV1(name="seed", n=0), consistency="immediate")
    bump, writer = make_mapper(ItemV2), make_mapper(ItemV2)
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    real = _ensure.alias_targets
    bumped: list[ReindexResult] = []

    def alias_targets(client: Elasticsearch, alias: str) -> list[str]:
        targets = real(client, alias)
        if not bumped:  # the version bump completes right after the write read the alias
            bumped.append(reindex(bump, ItemV2, delete_old=delete_old))
        return targets

    monkeypatch.setattr(_ensure, "alias_targets", alias_targets)
    added = writer.repository(ItemV2).add(ItemV2(name="meanwhile", n=1), consistency="immediate")

    assert bumped[0].status == "reindexed"
    assert _targets(es_client, f"{index_prefix}items") == [v2]
    assert es_client.get(index=v2, id=added.id)["found"]
    assert writer.repository(ItemV2).count(consistency="immediate") == 2
    assert bool(es_client.indices.exists(index=v1)) is not delete_old
    if not delete_old:
        assert fence_name(v1) not in es_client.indices.get_alias(index=v1).body[v1]["aliases"]


def test_a_failed_run_that_lost_its_target_does_not_delete_it(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rollback deletes only the target the run still holds (its marker on it)."""
    seed = make_mapper(ItemV1, configure=True)
    seed.repository(ItemV1).add([ItemV1(name="seed", n=i) for i in range(5)])
    mapper = make_mapper(ItemV2)
    alias, v2 = f"{index_prefix}items", f"{index_prefix}items-v2"

    def hijack(run: _reindex_run.Run) -> None:
        # another run reclaims the target (moving the markers) and the swap then fails
        # while this run still holds its lock
        es_client.indices.update_aliases(
            actions=[
                {"remove": {"index": v2, "alias": run.marker}},
                {"add": {"index": v2, "alias": f"{v2}.reindex-run-other"}},
            ]
        )
        raise RuntimeError("failed after the target was taken over")

    monkeypatch.setattr(_reindex_run, "_swap", hijack)
    with pytest.raises(RuntimeError):
        reindex(mapper, ItemV2)
    assert es_client.indices.exists(index=v2)
    assert _targets(es_client, alias) == [f"{index_prefix}items-v1"]


def test_document_deletes_of_a_run_whose_marker_is_gone_are_refused(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    """Deletes go through the run's marker alias: once another run took the target over
    they find no index (and create none) instead of deleting from the other run's index."""
    old, new = f"{index_prefix}fence-old", f"{index_prefix}fence-new"
    es_client.indices.create(index=old)
    es_client.indices.create(index=new)
    es_client.index(index=new, id="gone-from-old", document={"n": 1}, refresh=True)
    mine = _reindex_fence.new_marker(new)
    _reindex_fence.claim(es_client, new, mine)
    _reindex_fence.claim(es_client, new, _reindex_fence.new_marker(new))  # taken over

    with pytest.raises(em.LockError):
        delete_extras(es_client, old, new, spec=None, through=mine)
    assert es_client.count(index=new)["count"] == 1
    assert not es_client.indices.exists(index=mine)
    alias = f"{index_prefix}fence"
    assert not _reindex_fence.drop_target(es_client, new, mine, [alias], alias)
    assert es_client.indices.exists(index=new)


def test_no_rollback_or_leftover_delete_removes_an_index_an_alias_points_at(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    new, alias = f"{index_prefix}fence-new", f"{index_prefix}fence"
    es_client.indices.create(index=new)
    marker = _reindex_fence.new_marker(new)
    _reindex_fence.claim(es_client, new, marker)
    es_client.indices.put_alias(index=new, name=alias)  # moved there by hand meanwhile

    assert not _reindex_fence.drop_target(es_client, new, marker, [alias], alias)
    with pytest.raises(em.IndexConfigurationError, match="serves"):
        _reindex_fence.delete_unclaimed(es_client, new, [alias], alias)
    assert es_client.indices.exists(index=new)


@pytest.mark.parametrize("step", ["rollback", "leftover"])
def test_a_delete_whose_read_preceded_a_swap_onto_its_target_is_refused_by_the_server(
    step: str, es_client: Elasticsearch, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alias moves onto the target between every read of the deleting run and its
    delete request (a run paused there): the request itself carries the condition, so
    nothing is deleted. It names no other action on the index it deletes (Elasticsearch
    applies ``remove_index`` first and refuses any other action on that index)."""
    old, new, alias = (f"{index_prefix}fence-{n}" for n in ("old", "new", "w"))
    es_client.indices.create(index=old, aliases={alias: {}})
    es_client.indices.create(index=new)
    es_client.index(index=new, id="a", document={"n": 1}, refresh=True)
    marker = _reindex_fence.new_marker(new)
    _reindex_fence.claim(es_client, new, marker)
    real = _reindex_fence._aliases_request
    sent: list[list[dict[str, Any]]] = []

    def request(client: Elasticsearch, actions: list[dict[str, Any]], what: str) -> None:
        if any("remove_index" in a for a in actions):
            sent.append(actions)
            es_client.indices.update_aliases(  # another run's swap lands just now
                actions=[
                    {"remove": {"index": old, "alias": alias}},
                    {"add": {"index": new, "alias": alias}},
                ]
            )
        real(client, actions, what)

    monkeypatch.setattr(_reindex_fence, "_aliases_request", request)
    if step == "rollback":
        assert not _reindex_fence.drop_target(es_client, new, marker, [alias], alias)
    else:
        with pytest.raises(em.LockError):
            _reindex_fence.delete_unclaimed(es_client, new, [alias], alias)
    assert es_client.indices.exists(index=new)  # the index the alias names is kept
    assert es_client.count(index=alias)["count"] == 1
    (actions,) = sent
    assert [a for a in actions if new in str(a)] == [{"remove_index": {"index": new}}]
