"""The proof that nothing was written to a bump's old index (``_reindex_quiet``): equal
figures of the same primaries prove it; anything a reset, a failover or a partial answer
could explain does not."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from elasticsearch import ConnectionError as TransportConnectionError

from esmapper.indexes._reindex_quiet import unchanged, write_marks, written_since


def _shard(node: str = "n1", seq: int = 7, indexed: int = 8, deleted: int = 1) -> dict[str, Any]:
    return {
        "routing": {"state": "STARTED", "primary": True, "node": node, "relocating_node": None},
        "indexing": {"index_total": indexed, "delete_total": deleted},
        "seq_no": {"max_seq_no": seq, "local_checkpoint": seq, "global_checkpoint": seq},
        "commit": {"user_data": {"history_uuid": "h"}},
    }


def _stats(*shards: dict[str, Any], failed: int = 0, uuid: str | None = "u1") -> dict[str, Any]:
    def replica(primary: dict[str, Any]) -> dict[str, Any]:
        return {**primary, "routing": {"state": "STARTED", "primary": False, "node": "n2"}}

    entry: dict[str, Any] = {"shards": {str(i): [s, replica(s)] for i, s in enumerate(shards)}}
    if uuid is not None:
        entry["uuid"] = uuid
    return {"_shards": {"failed": failed}, "indices": {"old": entry}}


class _Client:
    def __init__(self, body: dict[str, Any] | Exception) -> None:
        self.indices = self
        self.body = body

    def stats(self, **_: Any) -> Any:
        if isinstance(self.body, Exception):
            raise self.body
        return type("Answer", (), {"body": copy.deepcopy(self.body)})()


def _marks(body: dict[str, Any] | Exception) -> Any:
    return write_marks(_Client(body), "old")  # type: ignore[arg-type]


def test_the_same_figures_of_the_same_primaries_prove_nothing_was_written() -> None:
    before = _marks(_stats(_shard(), _shard(seq=3)))
    assert before.seq_nos == {"0": 7, "1": 3}
    assert unchanged(before, _marks(_stats(_shard(), _shard(seq=3))))


@pytest.mark.parametrize(
    "after",
    [
        _stats(_shard(indexed=9), _shard(seq=3)),  # a write
        _stats(_shard(deleted=2), _shard(seq=3)),  # a delete
        _stats(_shard(seq=8), _shard(seq=3)),  # an operation (a failed document's no-op)
        _stats(_shard(indexed=0, deleted=0), _shard(seq=3)),  # restarted: counts from zero
        _stats(_shard(node="n2"), _shard(seq=3)),  # a replica promoted
        _stats(_shard()),  # a shard missing
        _stats(_shard(), _shard(seq=3), failed=1),  # a shard did not answer
        _stats(_shard(), _shard(seq=3), uuid="u2"),  # another index under the name
        _stats(_shard(), _shard(seq=3), uuid=None),  # no uuid: nothing names the index
    ],
)
def test_figures_that_differ_or_cannot_tell_prove_nothing(after: dict[str, Any]) -> None:
    before = _marks(_stats(_shard(), _shard(seq=3)))
    assert not unchanged(before, _marks(after))


def test_a_relocating_or_unstarted_primary_proves_nothing() -> None:
    moving = _shard()
    moving["routing"]["relocating_node"] = "n3"
    assert _marks(_stats(moving)).shards is None
    assert not unchanged(_marks(_stats(moving)), _marks(_stats(moving)))
    assert _marks(_stats(moving)).seq_nos == {"0": 7}  # the floor stays known


def test_a_failed_stats_request_is_unknown() -> None:
    failed = _marks(TransportConnectionError("down"))
    assert failed.shards is None and failed.seq_nos is None
    assert not unchanged(failed, failed)
    assert not unchanged(None, _marks(_stats(_shard())))


def _behind(shard: dict[str, Any], checkpoint: str) -> dict[str, Any]:
    shard["seq_no"][checkpoint] -= 1
    return shard


@pytest.mark.parametrize("checkpoint", ["local_checkpoint", "global_checkpoint"])
def test_a_write_not_yet_on_every_copy_proves_nothing(checkpoint: str) -> None:
    # the primary counts a write before its replicas apply it: a refresh then does not
    # show it to a copy reading a replica, yet the later reads count the same
    lagging = _stats(_behind(_shard(), checkpoint))
    assert _marks(lagging).shards is None
    assert not unchanged(_marks(lagging), _marks(_stats(_shard())))
    assert _marks(lagging).seq_nos == {"0": 7}  # the floor stays known


def test_a_replica_answered_behind_its_primary_proves_nothing() -> None:
    body = _stats(_shard())
    body["indices"]["old"]["shards"]["0"][1]["seq_no"] = {"max_seq_no": 6, "local_checkpoint": 6}
    assert _marks(body).shards is None
    assert _marks(_stats(_shard())).shards is not None


def _index_level(indexed: int, deleted: int, *, failed: int = 0, uuid: str = "u1") -> Any:
    primaries = {"indexing": {"index_total": indexed, "delete_total": deleted}}
    entry = {"uuid": uuid, "primaries": primaries}
    return {"_shards": {"failed": failed}, "indices": {"old": entry}}


def test_the_index_level_hint_says_nothing_was_written_when_the_sums_are_equal() -> None:
    before = _marks(_stats(_shard(indexed=8, deleted=1), _shard(indexed=5, deleted=0)))
    assert before.operations == 14
    assert not written_since(_Client(_index_level(13, 1)), "old", before)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "after",
    [
        _index_level(14, 1),  # a write
        _index_level(13, 2),  # a delete
        _index_level(13, 1, failed=1),  # a shard did not answer
        _index_level(13, 1, uuid="u2"),  # another index under the name
        {"_shards": {"failed": 0}, "indices": {"old": {"uuid": "u1"}}},  # no figures
        TransportConnectionError("down"),
    ],
)
def test_the_index_level_hint_says_written_when_it_cannot_tell(after: Any) -> None:
    before = _marks(_stats(_shard(indexed=8, deleted=1), _shard(indexed=5, deleted=0)))
    assert written_since(_Client(after), "old", before)  # type: ignore[arg-type]


def test_the_hint_without_a_proof_before_the_copy_says_written() -> None:
    unproved = _marks(_stats(_shard(), failed=1))
    assert unproved.operations is None
    assert written_since(_Client(_index_level(0, 0)), "old", unproved)  # type: ignore[arg-type]
    assert written_since(_Client(_index_level(0, 0)), "old", None)  # type: ignore[arg-type]
