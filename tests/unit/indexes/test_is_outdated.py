"""``is_outdated``: the one rule configure_indexes, plan and reindex_outdated share."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.indexes import IndexSpec
from esmapper.indexes.configure import is_outdated


class Item(em.Document):
    class Index:
        name = "items"
        version = 3

    n: int = 0


class Plain(em.Document):
    class Index:
        name = "plains"
        kind = "plain"

    n: int = 0


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        version = 2

    message: str = ""


def spec(model: type) -> IndexSpec:
    return IndexSpec(model.__esmapper__, "p-")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("current", "outdated"),
    [
        (None, False),  # no alias yet: configure creates the current version
        ("p-items-v3", False),
        ("p-items-v2", True),
        ("p-items-v1", True),
        ("p-items-v4", True),  # another version than the model's: reindex refuses it, loudly
    ],
)
def test_versioned(current: str | None, outdated: bool) -> None:
    assert spec(Item).physical_name() == "p-items-v3"
    assert is_outdated(spec(Item), current=current, lowest=None) is outdated


@pytest.mark.parametrize(("lowest", "outdated"), [(None, False), (1, True), (2, False), (3, False)])
def test_time_series_compares_the_lowest_live_partition(lowest: int | None, outdated: bool) -> None:
    assert is_outdated(spec(Log), current=None, lowest=lowest) is outdated


def test_plain_models_are_never_outdated() -> None:
    plain = spec(Plain)
    assert is_outdated(plain, current=None, lowest=None) is False
    assert is_outdated(plain, current="something-else", lowest=1) is False
