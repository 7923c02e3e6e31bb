"""The fence alias of a physical index, and which writes name it (no server)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

import esmapper as em
from esmapper.indexes import IndexSpec
from esmapper.indexes.spec import fence_name, is_fence


class Item(em.Document, em.Versioned):
    class Index:
        name = "items"
        version = 2

    n: int = 0


class Plain(em.Document):
    class Index:
        name = "plain"
        kind = "plain"


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        version = 2


def _spec(model: type) -> IndexSpec:
    return IndexSpec(model.__esmapper__, "p-")  # type: ignore[attr-defined]


def test_the_fence_of_a_physical_index_is_its_name_dot_fence() -> None:
    assert fence_name("p-items-v1") == "p-items-v1.fence"
    assert is_fence("p-items-v1.fence") and not is_fence("p-items-v1")


@pytest.mark.parametrize(
    ("model", "read_from", "fence"),
    [
        (Item, "p-items-v1", "p-items-v1.fence"),  # any version: the one it was read from
        (Item, "p-items-v2", "p-items-v2.fence"),
        (Item, "p-items", None),  # an alias: no physical index known
        (Item, None, None),  # a document never read
        (Item, "p-other-v1", None),
        (Plain, "p-plain", None),  # a plain model has no version bump, so no fence
        (Log, "p-logs-v1-2026.03.10", "p-logs-v1-2026.03.10.fence"),
        (Log, "p-logs-2026.03.10", None),  # a dated alias
    ],
)
def test_fence_of_names_only_the_models_own_physical_indexes(
    model: type, read_from: str | None, fence: str | None
) -> None:
    assert _spec(model).fence_of(read_from) == fence


def test_a_conditioned_write_goes_to_the_fence_of_the_index_its_version_came_from() -> None:
    items, logs, plain = _spec(Item), _spec(Log), _spec(Plain)
    assert items.conditioned_target("p-items", "p-items-v1") == "p-items-v1.fence"
    assert items.conditioned_target("p-items", None) == "p-items"
    assert plain.conditioned_target("p-plain", "p-plain") == "p-plain"
    at = dt.datetime(2026, 3, 10, tzinfo=dt.timezone.utc)
    assert logs.conditioned_target(logs.dated_alias(at), "p-logs-v1-2026.03.10") == (
        "p-logs-v1-2026.03.10.fence"
    )


def test_a_fence_is_one_of_the_models_aliases_for_the_write_guard() -> None:
    items, logs = _spec(Item), _spec(Log)
    assert items.write_name("p-items-v1.fence") == "p-items-v1.fence"
    assert items.is_alias("p-items-v1.fence")
    assert logs.write_name("p-logs-v2-2026.03.10.fence") == "p-logs-v2-2026.03.10.fence"
    assert logs.is_alias("p-logs-v2-2026.03.10.fence")
    assert not items.is_alias("p-other-v1.fence")
    with pytest.raises(ValueError, match=re.escape("cannot go to 'p-other-v1.fence'")):
        items.write_name("p-other-v1.fence")
