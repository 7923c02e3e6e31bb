"""The migration state when the answer to a write is lost (dropped before the server got
it, dropped after the server applied it, or cut short): read back, never a failed run."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.migrations import MigrationRecord, MigrationResult, StateStore
from esmapper.testing.faults import FaultProxy

from .conftest import Employee, records
from .test_runner import Calls, migration

LOST = ["drop_before", "drop_after", "truncate"]
STATE = r"-esmapper-migrations$"  # behind the test prefix
RECORD = r"-esmapper-migrations/_doc/"


def lose(proxy: FaultProxy, how: str, path: str, method: str) -> None:
    if how == "truncate":
        proxy.truncate_response(path=path, method=method)
    else:
        proxy.drop_connection(path=path, method=method, after_forwarding=how == "drop_after")


def resent(how: str) -> int:
    """Requests sent: a second one only when reading back showed the first was not applied."""
    return 2 if how == "drop_before" else 1


@pytest.mark.parametrize("how", LOST)
def test_lost_answers_to_the_state_writes_are_read_back(
    how: str, proxy: FaultProxy, index_prefix: str
) -> None:
    with em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix) as mapper:
        store = StateStore(mapper.client, index_prefix=index_prefix)
        lose(proxy, how, STATE, "PUT")
        store.ensure()
        assert store.exists()
        assert proxy.count(STATE, method="PUT") == resent(how)

        record = MigrationRecord(id="1", kind="versioned", version=1, attempts=1)
        lose(proxy, how, RECORD, "PUT")
        store.save(record)
        assert store.load() == {"1": record}
        assert proxy.count(RECORD, method="PUT") == resent(how)

        lose(proxy, how, RECORD, "DELETE")
        assert store.delete("1") is True
        assert store.load() == {}
        assert proxy.count(RECORD, method="DELETE") == resent(how)
        assert store.delete("1") is False


@pytest.mark.parametrize("how", LOST)
def test_a_migration_run_survives_lost_answers_to_its_first_writes(
    how: str, proxy: FaultProxy, index_prefix: str
) -> None:
    calls: Calls = []
    lose(proxy, how, STATE, "PUT")  # creating the state index
    lose(proxy, how, r"-esmapper-locks/_doc/migrations$", "PUT")  # taking the lock
    lose(proxy, how, RECORD, "PUT")  # the "started" record
    with em.Mapper(
        proxy.url,
        models=[Employee],
        index_prefix=index_prefix,
        migrations=[migration(calls, 1)],
    ) as mapper:
        mapper.configure_indexes()
        assert mapper.migrate() == MigrationResult.SUCCESS
        assert proxy.pending_faults == 0
        assert calls == [("versioned1", 1)]  # ran once
        assert records(mapper)["1"].completed
