"""``esmapper._outcomes.send`` without a server: what it refuses before sending anything."""

from __future__ import annotations

import datetime as dt

import pytest

import esmapper as em
from esmapper._outcomes import send
from esmapper._pending import PendingWrite
from esmapper.bulk import BulkAction, BulkOp

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


class Item(em.Document):
    class Index:
        name = "items"

    name: str = ""


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"

    message: str = ""


@pytest.mark.parametrize("op", ["index", "create", "update", "delete"])
@pytest.mark.parametrize(
    ("model", "physical", "alias"),
    [(Item, "items-v1", "items"), (Log, "logs-v1-2026.03.10", "logs-2026.03.10")],
)
def test_a_document_write_naming_a_physical_index_is_refused_before_anything_is_sent(
    op: BulkOp, model: type, physical: str, alias: str
) -> None:
    """The guard behind ``IndexSpec.write_name``: a path that forgot to map its target to
    the alias is a programming error, caught before the write could bring back an index a
    reindex deleted. (Nothing listens on the URL: a request would fail differently.)"""
    with em.Mapper("http://127.0.0.1:9", models=[model], max_retries=0) as mapper:
        info = model.__esmapper__  # type: ignore[attr-defined]
        body = None if op == "delete" else {"doc": {}} if op == "update" else {"name": "x"}  # type: ignore[dict-item]
        action = BulkAction(
            op=op, index=physical, id="a", body=body, ref=PendingWrite("patch", None, info, id="a")
        )
        with pytest.raises(ValueError, match=f"names the physical index '{physical}'") as caught:
            send(mapper.services, [action], refresh=None)
        assert f"go through '{alias}'" in str(caught.value)


def test_a_document_write_to_another_models_index_is_refused() -> None:
    with em.Mapper("http://127.0.0.1:9", models=[Item], max_retries=0) as mapper:
        info = Item.__esmapper__  # type: ignore[attr-defined]
        action = BulkAction(
            op="index", index="logs", id="a", body={}, ref=PendingWrite("patch", None, info, id="a")
        )
        with pytest.raises(ValueError, match="a document write cannot go to 'logs'"):
            send(mapper.services, [action], refresh=None)
