"""Slots race-free between threads and processes; unknown outcomes read back; the field
mapping invalidated across processes through a shared cache client."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.unit.cli.apps import subprocess_env

from .models import Employee
from .shared_cache import FileCache

ROOT = Path(__file__).resolve().parents[3]


def all_definitions(fields: em.CustomFieldRepository, tenant: str) -> list[Any]:
    found = fields.find_by_tenant(tenant, soft_deletes="all", consistency="immediate")
    return list(found)


def assert_unique_slots(definitions: list[Any]) -> None:
    by_type: dict[str, list[int]] = {}
    for d in definitions:
        by_type.setdefault(d.index_type, []).append(d.index_slot)
    for slots in by_type.values():  # lowest free from 1, nothing deleted: 1..n
        assert sorted(slots) == list(range(1, len(slots) + 1))


def test_add_field_from_8_threads(fields: em.CustomFieldRepository) -> None:
    barrier = threading.Barrier(8)
    results: dict[int, list[tuple[str, str | None, int]]] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        specs = [(f"t{n}-a", "int"), (f"t{n}-b", "string"), ("Shared1", "int"),
                 ("shared2", "string"), (f"t{n}-c", "int"), ("SHARED3", "int")]  # fmt: skip
        random.Random(n).shuffle(specs)
        barrier.wait()
        try:
            results[n] = [
                (name, d.id, d.index_slot)
                for name, kind in specs
                for d in [fields.add_field("acme", name, kind)]
            ]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    stored = all_definitions(fields, "acme")
    assert len(stored) == 8 * 3 + 3  # no lost definition, shared names once
    assert_unique_slots(stored)
    by_name = {d.name.lower(): d.id for d in stored}
    for returned in results.values():  # every caller got the stored definition
        assert all(by_name[name.lower()] == id for name, id, _slot in returned)


def test_create_only_slots_need_no_lock(fields: em.CustomFieldRepository) -> None:
    """Without the tenant lock (names unchecked), concurrent creators still never share a
    slot: a create that conflicts takes the next free one."""
    barrier = threading.Barrier(8)
    options = fields.options()
    errors: list[BaseException] = []

    def run(n: int) -> None:
        barrier.wait()
        try:
            item = em.CustomFieldDefinition(
                entity_type="Employee", tenant_key="acme", name=f"f{n}", index_type="int"
            )
            fields._add_tenant("acme", [item], options)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    stored = all_definitions(fields, "acme")
    assert len(stored) == 8
    assert_unique_slots(stored)


def test_a_slot_taken_meanwhile_is_skipped(
    fields: em.CustomFieldRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields.add_field("acme", "Level", "int")
    monkeypatch.setattr(fields._mappings, "load", lambda tenant, **kw: [])  # it does not see slot 1
    rank = fields.add_field("acme", "Rank", "int")
    assert rank.index_slot == 2


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.custom_fields.worker", *args],
        cwd=ROOT,
        env=subprocess_env(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_add_field_from_2_processes(
    es_url: str, index_prefix: str, fields: em.CustomFieldRepository, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    shared = [f"Shared{i}:int" for i in range(5)]
    workers = []
    for p in range(2):
        specs = [f"p{p}-f{i}:int" for i in range(10)] + shared
        random.Random(p).shuffle(specs)
        workers.append(_worker("add", es_url, index_prefix, "acme", str(go), *specs))
    for w in workers:
        assert w.stdout is not None
        assert w.stdout.readline().strip() == "ready", w.stderr.read() if w.stderr else ""
    go.touch()
    outputs = []
    for w in workers:
        out, err = w.communicate(timeout=180)
        assert w.returncode == 0, err
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    stored = all_definitions(fields, "acme")
    assert len(stored) == 25  # 2 x 10 own names + 5 shared ones, once each
    assert_unique_slots(stored)
    by_name = {d.name: d.id for d in stored}
    for returned in outputs:
        assert all(by_name[name] == id for name, id, _slot in returned)
    assert Counter(d.name for d in stored).most_common(1)[0][1] == 1


def test_a_lost_create_answer_is_read_back_not_resent_blindly(
    es_url: str, index_prefix: str
) -> None:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        fields = mapper.custom_fields(Employee)
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)  # applied, answer lost
        level = fields.add_field("acme", "Level", "int")
        proxy.drop_connection(path=r"/_bulk$")  # not applied: read back, then sent again
        rank = fields.add_field("acme", "Rank", "int")
        assert (level.index_slot, rank.index_slot) == (1, 2)
        stored = all_definitions(fields, "acme")
        assert sorted((d.name, d.index_slot) for d in stored) == [("Level", 1), ("Rank", 2)]


def test_a_change_in_another_process_invalidates_the_cached_mapping(
    es_url: str, index_prefix: str, tmp_path: Path
) -> None:
    cache = FileCache(str(tmp_path / "cache"))
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix, cache=cache) as mapper:
        mapper.configure_indexes()
        fields = mapper.custom_fields(Employee)
        repo = mapper.repository(Employee)
        fields.add_field("acme", "Level", "int")
        repo.add(Employee(company_id="acme", custom_fields={"Level": 5}), consistency="wait")
        assert repo.count("level:5", tenant="acme") == 1  # the mapping is cached now
        hits = cache.stats.hits
        assert repo.count("level:5", tenant="acme") == 1
        assert cache.stats.hits > hits

        worker = _worker("rename", es_url, index_prefix, str(tmp_path / "cache"), "acme",
                         "Level", "Grade")  # fmt: skip
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        assert json.loads(out) == ["Grade", 1]

        # this process sees the rename at once: the other one dropped the shared entry
        assert repo.count("grade:5", tenant="acme") == 1
        with pytest.raises(em.QueryValidationError, match="Unknown field 'level'"):
            repo.count("level:5", tenant="acme")
        assert set(fields.get_field_mapping("acme")) == {"grade"}


def test_a_write_rechecks_a_stale_mapping_for_names_it_does_not_know(
    es_url: str, index_prefix: str, mapper: em.Mapper
) -> None:
    """A mapper whose cache client another mapper does not share still indexes a field
    the other defined: a write reloads a cached mapping older than ``recheck_after``
    seconds (an hour, then 0 here)."""
    repo = mapper.repository(Employee)
    fields = mapper.custom_fields(Employee)
    fields.recheck_after = 3600.0
    fields.add_field("acme", "Level", "int")
    repo.add(Employee(company_id="acme", custom_fields={"Level": 1}))  # mapping cached
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix) as other:
        other.custom_fields(Employee).add_field("acme", "Rank", "int")  # its own cache
    kept = repo.add(Employee(company_id="acme", custom_fields={"Rank": 3}))
    assert kept.idx == {}  # a fresh-enough mapping is trusted
    fields.recheck_after = 0.0
    seen = repo.add(Employee(company_id="acme", custom_fields={"Rank": 3}))
    assert seen.idx == {"int-2": 3}


def test_a_write_after_another_process_retyped_a_field_uses_the_new_slot(
    es_url: str, index_prefix: str, mapper: em.Mapper
) -> None:
    """Process A has the mapping cached; process B (not sharing A's cache) soft-deletes
    Level (int-1) and adds Level as keyword (keyword-1). Once A's mapping is older than
    ``recheck_after``, A's writes of Level go to keyword-1, even though A knew the name."""
    repo = mapper.repository(Employee)
    fields = mapper.custom_fields(Employee)
    fields.recheck_after = 0.2
    fields.add_field("acme", "Level", "int")
    repo.add(Employee(name="warm", company_id="acme", custom_fields={"Level": 1}))  # cached
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix) as other:
        theirs = other.custom_fields(Employee)
        theirs.remove_field("acme", "Level")
        theirs.add_field("acme", "Level", "keyword")
    time.sleep(0.3)  # past recheck_after (a wait, not a timed assertion)
    doc = repo.add(
        Employee(name="new", company_id="acme", custom_fields={"Level": "7"}),
        consistency="immediate",
    )
    assert doc.idx == {"keyword-1": "7"}
