"""The mapping grows with the largest tenant, not the number of tenants;
a reindex keeps idx consistent."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import esmapper as em

from .models import Employee, PercentType

TYPES = ["string", "keyword", "int", "long", "float", "double", "bool", "date", "percent", "int"]
VALUES: dict[str, Any] = {
    "string": "some words", "keyword": "K", "int": 7, "long": 2**40, "float": 1.5,
    "double": 2.25, "bool": True, "date": "2025-01-02T03:04:05Z", "percent": 120,
}  # fmt: skip


def count_fields(properties: Mapping[str, Any]) -> int:
    """Mappers as Elasticsearch counts them for index.mapping.total_fields.limit: objects,
    leaves and multi-fields."""
    total = 0
    for spec in properties.values():
        total += 1 + len(spec.get("fields", {}))
        total += count_fields(spec.get("properties", {}))
    return total


def test_1000_fields_across_100_tenants_keep_the_mapping_under_150_fields(
    mapper: em.Mapper, fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    began = time.monotonic()
    for t in range(100):
        tenant = f"tenant-{t:03d}"
        fields.add(
            [
                em.CustomFieldDefinition(
                    tenant_key=tenant, name=f"{tenant}-field-{i}", index_type=kind
                )
                for i, kind in enumerate(TYPES)
            ]
        )
    docs = [
        Employee(
            name=f"e{t}",
            company_id=f"tenant-{t:03d}",
            custom_fields={f"tenant-{t:03d}-field-{i}": VALUES[k] for i, k in enumerate(TYPES)},
        )
        for t in range(100)
    ]
    repo.add(docs, consistency="immediate")
    elapsed = time.monotonic() - began

    alias = mapper.spec(em.CustomFieldDefinition).alias
    mapper.client.indices.refresh(index=alias)
    assert mapper.client.count(index=alias)["count"] == 1000
    mapping = mapper.client.indices.get_mapping(index=repo.spec.alias).body
    properties = next(iter(mapping.values()))["mappings"]["properties"]
    total = count_fields(properties)
    slots = sorted(properties["idx"]["properties"])
    assert slots == [
        "bool-1", "date-1", "double-1", "float-1", "int-1", "int-2", "keyword-1", "long-1",
        "percent-1", "string-1", "tenant",
    ]  # fmt: skip
    assert total < 150, total
    print(f"\n1,000 custom fields of 100 tenants: {total} mapped fields, {elapsed:.1f}s")

    # each tenant queries its own names, and sees only its own document
    for t in (0, 42, 99):
        tenant = f"tenant-{t:03d}"
        found = repo.find(f"{tenant}-field-2:7 AND {tenant}-field-8:100", tenant=tenant)
        assert [d.name for d in found] == [f"e{t}"]


def make_model(version: int, scripts: dict[int, str] | None = None) -> type:
    """``Employee`` (the entity type is the class name) at index version ``version``."""
    number, by_version = version, scripts or {}

    class Employee(em.Document, em.HasDates, em.HasCustomFields):
        class Index:
            name = "cf_reindexed"
            version = number
            tenant_field = "company_id"
            custom_field_types = [*em.standard_field_types(), PercentType()]  # noqa: RUF012
            reindex_scripts = by_version
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

        company_id: str = em.field(em.Keyword(), default="")

    return Employee


@pytest.fixture
def make(es_url: str, index_prefix: str) -> Iterator[Any]:
    opened: list[em.Mapper] = []

    def build(model: type) -> em.Mapper:
        mapper = em.Mapper(es_url, models=[model], index_prefix=index_prefix)
        opened.append(mapper)
        mapper.configure_indexes()
        return mapper

    yield build
    for mapper in opened:
        mapper.close()


@pytest.mark.parametrize("scripted", [False, True])
def test_a_reindex_keeps_idx_consistent(make: Any, scripted: bool) -> None:
    v1 = make_model(1)
    old = make(v1)
    old.custom_fields(v1).add_field("acme", "Level", "int")
    old.custom_fields(v1).add_field("acme", "Score", "percent")
    old.repository(v1).add(
        [v1(company_id="acme", custom_fields={"Level": n, "Score": 10 * n}) for n in range(5)]
    )
    script = "ctx._source.custom_fields.Level = ctx._source.custom_fields.Level * 100"
    v2 = make_model(2, {2: script} if scripted else None)
    new = make(v2)
    result = em.reindex(new, v2)
    assert result.status == "reindexed"
    repo = new.repository(v2)
    # definitions are per tenant, not per index version: the same slots answer
    level = 300 if scripted else 3
    assert repo.count(f"level:{level}", tenant="acme", consistency="immediate") == 1
    assert repo.count("score:>=30", tenant="acme") == 2
    found = repo.find(tenant="acme", sort="-level", limit=1).documents
    assert found[0].idx["int-1"] == 4 * (100 if scripted else 1)
    mapping = new.client.indices.get_mapping(index=repo.spec.alias).body
    assert "int-1" in next(iter(mapping.values()))["mappings"]["properties"]["idx"]["properties"]


class Killed(BaseException):
    """The process dies here (not an exception the code could handle)."""


def _killed_after_the_swap(make: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[em.Mapper, type]:
    """A scripted reindex of a custom-field model whose process dies after the alias swap,
    before ``idx`` is rebuilt: the swapped index holds the script's values, ``idx`` the old
    ones."""
    v1 = make_model(1)
    old = make(v1)
    old.custom_fields(v1).add_field("acme", "Level", "int")
    old.repository(v1).add([v1(company_id="acme", custom_fields={"Level": n}) for n in range(5)])
    script = "ctx._source.custom_fields.Level = ctx._source.custom_fields.Level * 100"
    v2 = make_model(2, {2: script})
    new = make(v2)

    def die(self: Any, *args: Any, **kwargs: Any) -> int:
        raise Killed

    with monkeypatch.context() as patched:
        patched.setattr(em.CustomFieldRepository, "rebuild_idx", die)
        with pytest.raises(Killed):
            em.reindex(new, v2)
    repo = new.repository(v2)
    assert new.client.indices.get_alias(name=repo.spec.alias).body.keys() == {
        repo.spec.physical_name()
    }
    assert repo.count("level:300", tenant="acme", consistency="immediate") == 0  # stale
    return new, v2


def test_a_reindex_killed_before_rebuilding_idx_rebuilds_it_on_the_rerun(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mapper, model = _killed_after_the_swap(make, monkeypatch)
    assert em.reindex(mapper, model).status == "up_to_date"
    repo: em.Repository[Any] = mapper.repository(model)
    assert repo.count("level:300", tenant="acme", consistency="immediate") == 1
    assert repo.count("level:3", tenant="acme") == 0


def test_migrate_finishes_the_idx_rebuild_a_killed_reindex_owed(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mapper, model = _killed_after_the_swap(make, monkeypatch)
    (planned,) = em.plan(mapper)
    assert (planned.action, planned.target) == ("rebuild_idx", mapper.spec(model).alias)
    report = em.run_migrations(mapper)
    assert report.result is em.MigrationResult.SUCCESS
    assert [s.action for s in report.steps] == ["rebuild_idx"]
    repo: em.Repository[Any] = mapper.repository(model)
    assert repo.count("level:300", tenant="acme", consistency="immediate") == 1
    # done: the next run owes nothing
    assert em.run_migrations(mapper).steps == []
    assert em.plan(mapper) == []


def test_the_owed_marks_are_cleared_only_under_the_reindex_lock(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_meta`` is written whole: clearing the mark while another reindex holds
    ``reindex:<alias>`` (and may be writing its block marker there) could erase that
    marker. With the lock held elsewhere, ``idx`` is rebuilt and the mark stays for the
    next run; once the lock is free, the mark goes."""
    from esmapper.indexes._idx_owed import owed_idx_rebuilds, settle_idx_rebuild
    from esmapper.locks import LockProvider

    mapper, model = _killed_after_the_swap(make, monkeypatch)
    alias = mapper.spec(model).alias
    locks = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    with locks.acquire(f"reindex:{alias}", heartbeat=False):  # another run's
        assert settle_idx_rebuild(mapper.services, model) == 4  # rebuilt at once (Level 0 stays 0)
        assert owed_idx_rebuilds(mapper.client, alias) == [mapper.spec(model).physical_name()]
    repo: em.Repository[Any] = mapper.repository(model)
    assert repo.count("level:300", tenant="acme", consistency="immediate") == 1
    assert settle_idx_rebuild(mapper.services, model) == 0  # nothing stale is left to write
    assert owed_idx_rebuilds(mapper.client, alias) == []
