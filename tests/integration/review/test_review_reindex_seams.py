"""Review: writes that name a physical index (not an alias) racing a reindex's swap."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import reindex
from tests.integration.indexes.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import DailyLog, DailyLogV2, ItemV1, ItemV2

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


def _indexes(client: Elasticsearch, prefix: str) -> dict[str, list[str]]:
    body = client.options(ignore_status=404).indices.get_alias(index=f"{prefix}*").body
    return {i: sorted(e["aliases"]) for i, e in sorted(body.items()) if "error" not in body}


@pytest.mark.parametrize("version_check", [True, False])
def test_action_patch_by_id_racing_a_versioned_reindex_lands_behind_the_alias(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, version_check: bool
) -> None:
    """``patch(id, ActionPatch)`` reads the document (``_index``: items-v1) and writes an
    ``index`` action to that *physical* name. If the reindex to v2 swaps and deletes v1 in
    between, the write names a missing index without ``require_alias``: the server
    auto-creates ``items-v1`` (guessed mappings, behind no alias) and stores the patch
    there, where no read ever finds it."""
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
    except em.EsmapperError:
        pass  # refusing is fine; storing it where nobody reads is not
    assert _indexes(es_client, index_prefix).get(f"{index_prefix}items-v1") is None, (
        _indexes(es_client, index_prefix)
    )
    got = new.repository(ItemV2).get(item.id)
    assert got is not None and got.n in (1, 2)


def test_patch_all_action_patch_racing_a_partition_reindex(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """Same for ``patch_all``: each hit's write goes to ``hit.index`` (the physical
    partition ``logs-v1-2026.03.10``), not the dated alias every other time-series write
    uses since ix13a."""
    clock = FakeClock(NOW)
    old = make_mapper(DailyLog, clock=clock)
    new = make_mapper(DailyLogV2, clock=clock)
    repo = old.repository(DailyLog)
    repo.add([DailyLog(message=f"m{i}", created_utc=NOW) for i in range(3)], consistency="wait")
    ran = []

    def bump(doc: Any) -> bool:
        if not ran:
            ran.append(reindex(new, DailyLogV2))
        doc.message = doc.message + "!"
        return True

    try:
        repo.patch_all("*", em.ActionPatch(bump), consistency="wait")
    except em.EsmapperError:
        pass
    names = _indexes(es_client, index_prefix)
    assert f"{index_prefix}logs-v1-2026.03.10" not in names, names
    assert new.repository(DailyLogV2).count(consistency="immediate") == 3
