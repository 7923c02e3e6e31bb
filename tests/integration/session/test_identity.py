"""The identity map against other writers: a 404 on delete, two objects for one id, the
soft-delete mode of reads served from the map."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em

from ..repository.models import Employee


def test_a_delete_answered_404_completes_the_removal_once(
    mapper: em.Mapper, seeded: list[Employee], es_url: str
) -> None:
    repo = mapper.repository(Employee)
    with mapper.session() as s:
        doc = s.get(Employee, "e0")
        s.remove(doc)
        repo.remove("e0")  # another writer deletes it first
        s.flush()  # 404: nothing to delete, the removal is done
        assert s.deleted == [] and s.get(Employee, "e0") is None
        repo.add(Employee(id="e0", name="re-created"))
        s.flush()  # must not delete the new document
    with Elasticsearch(es_url) as raw:
        assert raw.get(index=repo.spec.alias, id="e0")["_source"]["name"] == "re-created"


def test_adding_a_new_object_for_an_id_the_session_holds_replaces_it(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    repo = mapper.repository(Employee)
    with mapper.session() as s:
        old = s.get(Employee, "e1")
        repo.remove("e1")  # another writer deletes it
        new = s.add(Employee(id="e1", name="B"))
        s.flush()
        assert s.get(Employee, "e1") is new and old not in s
        new.age = 99  # later edits of the new object are written
    assert repo.get("e1").age == 99 and repo.get("e1").name == "B"


def test_remove_then_add_of_one_id_in_a_unit_of_work_replaces_the_document(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    repo = mapper.repository(Employee)
    with mapper.session() as s:
        a = s.get(Employee, "e2")
        s.remove(a)
        b = s.add(Employee(id="e2", name="replacement"))
    stored = repo.get("e2")
    assert stored is not None and stored.name == "replacement"
    assert b.version == stored.version


def test_reads_from_the_identity_map_honour_the_soft_delete_mode(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with mapper.session() as s:
        doc = s.get(Employee, "e3")
        live = s.get(Employee, "e4")
        doc.is_deleted = True
        s.flush()
        assert s.get(Employee, "e3") is None  # default: active only
        assert s.get(Employee, "e3", soft_deletes="all") is doc
        assert s.get(Employee, "e3", soft_deletes="deleted") is doc
        assert s.get(Employee, "e4", soft_deletes="deleted") is None
        assert s.get_many(Employee, ["e3", "e4"]) == [live]
        assert s.get_many(Employee, ["e3", "e4"], soft_deletes="deleted") == [doc]


def test_removing_another_object_for_a_held_id_is_refused(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    """One object per id, as for add(): the removal of a copy deleted the document and
    dropped the held object from the identity map, while it stayed dirty (a conflict at
    every flush)."""
    repo = mapper.repository(Employee)
    with mapper.session() as s:
        held = s.get(Employee, "e0")
        assert held is not None
        held.age = 50
        copy = repo.get("e0")
        with pytest.raises(em.EsmapperError, match="already in this session"):
            s.remove(copy)
        assert s.deleted == [] and s.dirty == [held]
    assert repo.get("e0").age == 50  # type: ignore[union-attr]
