"""Why a cluster is not green (esmapper._cluster_shards.classify): replicas no node can
hold, replicas that could be placed, primaries not active."""

from __future__ import annotations

from typing import Any

from esmapper._cluster_shards import classify


def _index(
    shards: int,
    replicas: int,
    *,
    primaries: int | None = None,
    status: str | None = None,
    **counts: int,
) -> Any:
    active_primaries = shards if primaries is None else primaries
    return {
        "status": status or ("red" if active_primaries < shards else "yellow"),
        "number_of_shards": shards,
        "number_of_replicas": replicas,
        "active_primary_shards": active_primaries,
        "unassigned_shards": counts.get("unassigned", 0),
        "initializing_shards": counts.get("initializing", 0),
    }


def test_one_node_replicas_cannot_exist() -> None:
    indices = {"a": _index(2, 1, unassigned=2), "b": _index(1, 2, unassigned=2)}
    summary = classify({"number_of_data_nodes": 1}, indices)
    assert [i.index for i in summary.unplaceable] == ["a", "b"]
    assert summary.placeable == () and summary.primaries == ()
    assert [i.unplaceable for i in summary.unplaceable] == [2, 2]


def test_replicas_the_nodes_could_hold_are_placeable() -> None:
    # three nodes hold a primary and two replicas of each shard: nothing excuses these
    summary = classify({"number_of_data_nodes": 3}, {"a": _index(2, 1, unassigned=1)})
    assert [i.index for i in summary.placeable] == ["a"] and summary.unplaceable == ()
    # two nodes, two replicas: one copy per shard cannot exist, the second one could
    two = classify({"number_of_data_nodes": 2}, {"a": _index(1, 2, unassigned=2)})
    assert [i.index for i in two.placeable] == ["a"]
    assert classify({"number_of_data_nodes": 2}, {"a": _index(1, 2, unassigned=1)}).unplaceable


def test_initializing_copies_are_not_excused() -> None:
    summary = classify({"number_of_data_nodes": 1}, {"a": _index(1, 1, initializing=1)})
    assert [i.index for i in summary.placeable] == ["a"]


def test_inactive_primaries_come_first_and_green_indexes_are_left_out() -> None:
    indices = {
        "down": _index(3, 1, primaries=1, unassigned=4),
        "fine": _index(1, 0, status="green"),
    }
    summary = classify({"number_of_nodes": 1}, indices)
    assert summary.data_nodes == 1
    ((down,),) = (summary.primaries,)
    assert (down.index, down.inactive_primaries) == ("down", 2)
    assert summary.placeable == summary.unplaceable == ()


def test_the_applications_indexes_come_first() -> None:
    indices = {name: _index(1, 1, unassigned=1) for name in ("a-other", "z-mine-v1", "b")}
    summary = classify({"number_of_data_nodes": 1}, indices, lambda n: n.startswith("z-mine"))
    assert [i.index for i in summary.unplaceable] == ["z-mine-v1", "a-other", "b"]
