"""The id reconciliation of a version bump (``_reindex_pass.delete_extras``) with routed
copies: a child of a join moved to a parent on another shard while the bump ran leaves its
first copy on the old parent's shard of the new index beside the one the catch-up wrote
(Elasticsearch keeps ids unique per shard). The listings are given (the local server keeps
one copy per id and leaves ``_routing`` out of hits, so it cannot show two)."""

from __future__ import annotations

from typing import Any

import pytest

from esmapper.ids import Id, routing_of
from esmapper.indexes import _reindex_pass


def _reconcile(
    monkeypatch: pytest.MonkeyPatch, old: list[str], new: list[str]
) -> list[tuple[str, str | None]]:
    listed = {"old": old, "new": new}
    deleted: list[tuple[str, str | None]] = []

    def ids(client: Any, index: str) -> Any:
        return iter(listed[index])

    def delete_ids(client: Any, index: str, ids: list[str], *, spec: Any) -> None:
        deleted.extend((str.__str__(i), routing_of(i)) for i in ids)

    monkeypatch.setattr(_reindex_pass, "_ids", ids)
    monkeypatch.setattr(_reindex_pass, "delete_ids", delete_ids)
    removed = _reindex_pass.delete_extras(object(), "old", "new", spec=None)  # type: ignore[arg-type]
    assert removed == len(deleted)
    return deleted


def test_a_child_moved_across_shards_leaves_no_second_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = ["c0", "c1", Id("m0", routing="c1"), Id("m1", routing="c0")]
    new = ["c0", "c1", Id("m0", routing="c0"), Id("m0", routing="c1"), Id("m1", routing="c0")]
    assert _reconcile(monkeypatch, old, new) == [("m0", "c0")]


def test_an_id_gone_from_the_old_index_is_deleted_with_every_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = ["c0"]
    new = ["c0", "gone", Id("m0", routing="c0"), Id("m0", routing="c1")]
    assert _reconcile(monkeypatch, old, new) == [("gone", None), ("m0", "c0"), ("m0", "c1")]


def test_a_single_copy_under_another_routing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reindex script that set another routing: the copy is the document's only one, and
    hits without ``_routing`` (a server leaving it out) are one copy each."""
    old = [Id("a", routing="x"), "b", Id("c", routing="x")]
    new = [Id("a", routing="y"), Id("b", routing="y"), "c"]
    assert _reconcile(monkeypatch, old, new) == []
