"""Real pauses: a process adding or renaming a custom field is stopped (SIGSTOP) under its
tenant lock, after it found the name free and before it takes it; its heartbeat thread
stops with it and its 2 s lease lapses. Another process then adds the same name (it waits
the lease out and takes the lock over). The stopped process resumes (SIGCONT): the name's
create-only claim leaves one active field of that name (an add returns it, a rename is
refused)."""

from __future__ import annotations

from pathlib import Path

import esmapper as em
from tests.integration.conftest import MakeMapper
from tests.integration.pausing import Child, children, linux_only

from .models import Employee

pytestmark = linux_only

WORKER = "tests.integration.custom_fields.paused_worker"


def test_a_stopped_holder_resumes_without_adding_a_second_field_of_the_name(
    fields: em.CustomFieldRepository,
    make_mapper: MakeMapper,
    tmp_path: Path,
    es_url: str,
    index_prefix: str,
) -> None:
    with children() as started:
        a = Child(WORKER, tmp_path, "a", es_url, index_prefix, "2", "acme", "add", "Level:int")
        started.append(a)
        a.wait_paused()  # under its lock, "Level" found free
        a.stop()
        other = make_mapper(Employee).custom_fields(Employee).add_field("acme", "level", "int")
        a.resume()
        resumed = a.outcome()

    assert resumed == {"id": other.id, "name": other.name}, resumed
    found = fields.find_by_tenant("acme", consistency="immediate")
    assert [d.id for d in found if d.name.lower() == "level"] == [other.id]


def test_a_stopped_rename_resumes_without_taking_a_name_used_meanwhile(
    fields: em.CustomFieldRepository,
    make_mapper: MakeMapper,
    tmp_path: Path,
    es_url: str,
    index_prefix: str,
) -> None:
    team = fields.add_field("acme", "Team", "string")
    with children() as started:
        a = Child(
            WORKER, tmp_path, "a", es_url, index_prefix, "2", "acme", "rename", "Team", "Grade"
        )
        started.append(a)
        a.wait_paused()  # under its lock, "Grade" found free
        a.stop()
        other = make_mapper(Employee).custom_fields(Employee).add_field("acme", "Grade", "int")
        a.resume()
        resumed = a.outcome()

    assert resumed.get("error") == "DocumentValidationError", resumed
    found = fields.find_by_tenant("acme", consistency="immediate")
    assert [d.id for d in found if d.name.lower() == "grade"] == [other.id]
    assert [d.id for d in found if d.name.lower() == "team"] == [team.id]
