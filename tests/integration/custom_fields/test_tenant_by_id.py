"""``tenant=`` on reads by id and on writes: a document of another tenant is not there for
a read with ``tenant=`` (as a search filtered by the tenant would not find it), and a write
with ``tenant=`` of another tenant's document is refused before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee, Ticket


class Plain(em.Document):
    class Index:
        name = "cf_plain_by_id"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = ""


@pytest.fixture
def two(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> list[Employee]:
    fields.add_field("acme", "Level", "int")
    return repo.add(
        [
            Employee(name="a", company_id="acme", custom_fields={"Level": 1}),
            Employee(name="g", company_id="globex", custom_fields={"Level": 2}),
        ],
        consistency="immediate",
    )


def ids(docs: list[Any]) -> list[str]:
    return [d.id for d in docs]


def test_get_and_get_many_with_tenant_see_only_the_tenants_documents(
    repo: em.Repository[Employee], two: list[Employee]
) -> None:
    a, g = two
    assert a.id is not None and g.id is not None
    assert repo.get(a.id, tenant="acme") == a
    assert repo.get(a.id, tenant="globex") is None
    assert repo.get(a.id, tenant="acme", cache=True) == a  # filled the cache
    assert repo.get(a.id, tenant="globex", cache=True) is None  # served from the cache
    assert ids(repo.get_many([g.id, a.id], tenant="acme")) == [a.id]
    assert ids(repo.get_many([g.id, a.id])) == [g.id, a.id]
    assert repo.exists(a.id, tenant="acme") and not repo.exists(a.id, tenant="globex")
    # as a search filtered by tenant would say
    assert repo.count(f"id:{g.id}", tenant="acme") == 0


def test_a_composite_tenant_key_counts(mapper: em.Mapper) -> None:
    tickets = mapper.repository(Ticket)
    t = tickets.add(Ticket(company_id="acme", kind="bug"))
    assert t.id is not None
    assert tickets.get(t.id, tenant="acme-bug") == t
    assert tickets.get(t.id, tenant="acme") is None


def test_session_reads_with_tenant_also_hide_documents_it_holds(
    mapper: em.Mapper, two: list[Employee]
) -> None:
    a, g = two
    assert a.id is not None and g.id is not None
    with mapper.session() as session:
        held = session.get(Employee, a.id)
        assert held is not None
        assert session.get(Employee, a.id, tenant="globex") is None  # held, still hidden
        assert session.get(Employee, a.id, tenant="acme") is held
        assert session.get(Employee, g.id, tenant="acme") is None
        assert ids(session.get_many(Employee, [a.id, g.id], tenant="globex")) == [g.id]
        [partial] = session.find(Employee, f"id:{g.id}", includes=["name"]).documents
        # a document held in part is completed whatever its tenant, then filtered
        assert session.get(Employee, g.id, tenant="acme") is None
        assert session.get(Employee, g.id, tenant="globex") is partial
        assert partial.company_id == "globex"


def test_a_save_with_another_tenant_is_refused_before_sending(
    mapper: em.Mapper, repo: em.Repository[Employee], two: list[Employee]
) -> None:
    a, g = two
    a.name = "changed"
    with pytest.raises(em.DocumentValidationError, match="belongs to tenant 'acme'") as info:
        repo.save(a, tenant="globex")
    assert info.value.field == "tenant" and list(info.value.ids) == [a.id]
    g.name = "changed too"
    with pytest.raises(em.DocumentValidationError, match="'globex'"):
        repo.save([a, g], tenant="acme")  # one of them: none is written
    assert [d.name for d in repo.get_many(ids(two))] == ["a", "g"]
    repo.save(a, tenant="acme")
    assert (got := repo.get(str(a.id))) is not None and got.name == "changed"
    with pytest.raises(em.DocumentValidationError, match=r"belongs to tenant '' \(none\)"):
        repo.add(Employee(name="n"), tenant="acme")
    with pytest.raises(em.DocumentValidationError, match="add"):
        repo.add(Employee(name="x", company_id="acme"), tenant="globex")
    assert repo.count("name:x OR name:n", consistency="immediate") == 0


def test_tenant_on_a_model_without_custom_fields_is_refused(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[Plain], index_prefix=index_prefix) as m:
        plain = m.repository(Plain)
        for call in (
            lambda: plain.get("x", tenant="acme"),
            lambda: plain.get_many(["x"], tenant="acme"),
            lambda: plain.save(Plain(id="x"), tenant="acme"),
        ):
            with pytest.raises(em.QueryValidationError, match="has none"):
                call()
        assert not m.client.indices.exists(index=m.spec(Plain).alias)  # nothing sent
