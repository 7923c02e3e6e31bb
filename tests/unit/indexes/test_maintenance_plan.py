"""Which partitions maintain() deletes and which aliases it fixes (no server)."""

from __future__ import annotations

import datetime as dt

import esmapper as em
from esmapper.indexes import IndexSpec
from esmapper.indexes.maintenance import _plan
from esmapper.indexes.timeseries import Partition, parse_partition

UTC = dt.timezone.utc


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        version = 2
        max_age = dt.timedelta(days=7)


def test_plan() -> None:
    spec = IndexSpec(Log.__esmapper__, "p-")  # type: ignore[attr-defined]

    def part(name: str) -> Partition:
        partition = parse_partition(spec, name)
        assert partition is not None
        return partition

    partitions = {
        part("p-logs-v1-2026.03.01"): {"p-logs", "p-logs-2026.03.01"},  # expired
        # live (holds dated), made before fence aliases existed: it gets its fence
        part("p-logs-v1-2026.03.09"): {"p-logs", "p-logs-2026.03.09"},
        # a leftover of another version: no alias, no fence (a write at a version read
        # from it must conflict)
        part("p-logs-v2-2026.03.09"): {"p-logs", "p-logs-v2-2026.03.09.fence"},
        part("p-logs-v2-2026.03.10"): set(),  # created without aliases (e.g. by a template)
    }
    expired, actions = _plan(spec, partitions, dt.datetime(2026, 3, 10, 12, tzinfo=UTC))
    assert [p.index for p in expired] == ["p-logs-v1-2026.03.01"]
    assert actions == [
        {"add": {"index": "p-logs-v1-2026.03.09", "alias": "p-logs-v1-2026.03.09.fence"}},
        {"remove": {"index": "p-logs-v2-2026.03.09", "alias": "p-logs"}},
        {"remove": {"index": "p-logs-v2-2026.03.09", "alias": "p-logs-v2-2026.03.09.fence"}},
        {"add": {"index": "p-logs-v2-2026.03.10", "alias": "p-logs"}},
        {"add": {"index": "p-logs-v2-2026.03.10", "alias": "p-logs-2026.03.10"}},
        {"add": {"index": "p-logs-v2-2026.03.10", "alias": "p-logs-v2-2026.03.10.fence"}},
    ]
