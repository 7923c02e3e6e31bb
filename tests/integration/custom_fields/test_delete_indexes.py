"""``mapper.delete_indexes`` and the custom-field definitions index: it goes along when
every custom-field model of the mapper is deleted (and nobody else's definitions are in
it), it stays otherwise."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from tests.unit.cli.apps import subprocess_env

from .models import Employee, Ticket
from .virtual_models import Contact


class Plain(em.Document):
    class Index:
        name = "cf_plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = ""


def exists(client: Elasticsearch, alias: str) -> bool:
    return bool(client.indices.exists_alias(name=alias))


@pytest.fixture
def dmapper(es_url: str, index_prefix: str) -> em.Mapper:
    m = em.Mapper(es_url, models=[Employee, Ticket, Plain], index_prefix=index_prefix)
    m.configure_indexes()
    m.custom_fields(Employee).add_field("acme", "Level", "int")
    m.custom_fields(Ticket).add_field("acme-bug", "Severity", "int")
    return m


def test_deleting_one_of_two_custom_field_models_keeps_the_definitions(
    dmapper: em.Mapper,
) -> None:
    reports = dmapper.delete_indexes([Employee])
    assert [r.model for r in reports] == ["Employee"]
    assert exists(dmapper.client, dmapper.spec(em.CustomFieldDefinition).alias)
    dmapper.configure_indexes([Employee])  # recreated: the tenant's fields are still there
    assert list(dmapper.custom_fields(Employee).get_field_mapping("acme")) == ["level"]


def test_deleting_every_custom_field_model_takes_the_definitions_along(
    dmapper: em.Mapper,
) -> None:
    alias = dmapper.spec(em.CustomFieldDefinition).alias
    assert dmapper.custom_fields(Employee).get_field_mapping("acme")  # cached now
    dry = dmapper.delete_indexes([Employee, Ticket], dry_run=True)
    assert [r.model for r in dry] == ["Employee", "Ticket", "CustomFieldDefinition"]
    assert dry[-1].dry_run and dry[-1].aliases == (alias,)
    assert exists(dmapper.client, alias)  # a dry run deletes nothing

    reports = dmapper.delete_indexes([Employee, Ticket])
    assert [r.model for r in reports] == ["Employee", "Ticket", "CustomFieldDefinition"]
    assert not reports[-1].empty and not exists(dmapper.client, alias)
    assert exists(dmapper.client, dmapper.spec(Plain).alias)  # not a custom-field model
    dmapper.configure_indexes()
    # the cached field mapping went with the index: slots start again from 1
    assert dmapper.custom_fields(Employee).get_field_mapping("acme") == {}
    assert dmapper.custom_fields(Employee).add_field("acme", "Other", "int").index_slot == 1


def test_definitions_of_another_application_keep_the_index(
    dmapper: em.Mapper, es_url: str, index_prefix: str
) -> None:
    with em.Mapper(es_url, models=[Contact], index_prefix=index_prefix) as other:
        other.configure_indexes()
        other.custom_fields(Contact).add_field("acme/x", "Level", "int")
    reports = dmapper.delete_indexes([Employee, Ticket])
    assert [r.model for r in reports] == ["Employee", "Ticket"]
    assert exists(dmapper.client, dmapper.spec(em.CustomFieldDefinition).alias)
    # asked by name, it goes
    [report] = dmapper.delete_indexes([em.CustomFieldDefinition])
    assert not report.empty


def test_deleting_every_model_deletes_the_definitions(dmapper: em.Mapper) -> None:
    reports = dmapper.delete_indexes()
    assert sorted(r.model for r in reports) == [
        "CustomFieldDefinition",
        "Employee",
        "Plain",
        "Ticket",
    ]
    assert not exists(dmapper.client, dmapper.spec(em.CustomFieldDefinition).alias)


def test_an_already_deleted_definitions_index_is_an_empty_report(dmapper: em.Mapper) -> None:
    dmapper.delete_indexes([em.CustomFieldDefinition])
    reports = dmapper.delete_indexes([Employee, Ticket])
    assert [r.model for r in reports] == ["Employee", "Ticket", "CustomFieldDefinition"]
    assert reports[-1].empty


APP = """
import esmapper as em


class Employee(em.Document, em.HasCustomFields):
    class Index:
        name = "employees"
        tenant_field = "company"
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    company: str = em.field(em.Keyword(), default="")


mapper = em.Mapper({url!r}, models=[Employee], index_prefix={prefix!r})
"""


def test_the_cli_lists_and_deletes_the_definitions_with_the_last_model(
    tmp_path: Path, es_url: str, index_prefix: str
) -> None:
    name = f"app_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(APP.format(url=es_url, prefix=index_prefix), "utf-8")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "esmapper.cli", "--app", f"{name}:mapper", *args],
            cwd=tmp_path, env=subprocess_env(tmp_path), capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip

    configured = run("migrate")
    assert configured.returncode == 0, configured.stderr
    dry = run("indexes", "delete", "Employee")
    assert dry.returncode == 0, dry.stderr
    assert "CustomFieldDefinition" in dry.stdout and "esmapper-custom-fields" in dry.stdout
    done = run("indexes", "delete", "Employee", "--yes")
    assert done.returncode == 0, done.stderr
    assert f"CustomFieldDefinition ({index_prefix}esmapper-custom-fields): deleted" in done.stdout
    client = Elasticsearch(es_url)
    assert not client.indices.exists_alias(name=f"{index_prefix}esmapper-custom-fields")
