"""add / save / remove through the repository: ids, dates, duplicates, partial failures."""

from __future__ import annotations

import datetime as dt

import pytest

import esmapper as em

from .models import Address, Employee, Message


def test_add_generates_object_ids_and_sets_dates(employees: em.Repository[Employee]) -> None:
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    doc = employees.add(Employee(name="A"))
    assert em.ObjectId.is_valid(doc.id)
    assert doc.created_utc >= before and doc.updated_utc == doc.created_utc
    stored = employees.get(doc.id)
    assert stored.created_utc == doc.created_utc  # microseconds survive the round trip


def test_add_keeps_a_valid_created_date_and_fixes_a_future_one(
    employees: em.Repository[Employee],
) -> None:
    past = dt.datetime(2020, 5, 1, tzinfo=dt.timezone.utc)
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3)
    kept, fixed = employees.add([Employee(created_utc=past), Employee(created_utc=future)])
    assert kept.created_utc == past
    assert fixed.created_utc < future - dt.timedelta(days=2)


def test_add_is_create_only(employees: em.Repository[Employee]) -> None:
    employees.add(Employee(id="e1", name="Original"))
    with pytest.raises(em.DuplicateDocumentError) as raised:
        employees.add(Employee(id="e1", name="Imposter"))
    assert raised.value.ids == ("e1",)
    assert employees.get("e1").name == "Original"


def test_partial_bulk_failure_applies_the_successes_first(
    employees: em.Repository[Employee],
) -> None:
    employees.add(Employee(id="dup", name="Stored"))
    batch = [Employee(id="n1"), Employee(id="dup", name="Again"), Employee(id="n2")]
    with pytest.raises(em.DuplicateDocumentError) as raised:
        employees.add(batch)
    assert [f.id for f in raised.value.failures] == ["dup"]
    assert raised.value.failures[0].status == 409
    assert [d.id for d in raised.value.succeeded] == ["n1", "n2"]
    assert {e.id for e in employees.get_many(["n1", "n2", "dup"])} == {"n1", "n2", "dup"}
    assert employees.get("dup").name == "Stored"
    assert batch[0].version is not None and batch[1].version is None


def test_mixed_failures_raise_bulk_write_error(employees: em.Repository[Employee]) -> None:
    first = employees.add(Employee(id="m1"))
    stale = employees.get("m1")
    first.age = 1
    employees.save(first)
    fresh = employees.add(Employee(id="m2"))
    stale.age = 2
    fresh.age = 3
    with pytest.raises(em.VersionConflictError) as raised:
        employees.save([stale, fresh])
    assert [c.id for c in raised.value.conflicts] == ["m1"]
    assert employees.get("m2").age == 3


def test_save_needs_an_id_and_without_version_is_unconditional(
    employees: em.Repository[Employee],
) -> None:
    with pytest.raises(em.DocumentError, match="without an id"):
        employees.save(Employee(name="x"))
    doc = employees.add(Employee(id="u1", age=1))
    blind = Employee(id="u1", age=7)  # no version: last write wins
    employees.save(blind)
    assert employees.get("u1").age == 7
    assert blind.version != doc.version


def test_embedded_objects_lists_and_dates_round_trip(employees: em.Repository[Employee]) -> None:
    hired = dt.datetime(2024, 2, 29, 12, 30, 1, 123000, tzinfo=dt.timezone.utc)
    doc = employees.add(
        Employee(tags=["a", "b"], address=Address(city="Oslo", country="NO"), hired=hired)
    )
    stored = employees.get(doc.id)
    assert stored.tags == ["a", "b"]
    assert stored.address == Address(city="Oslo", country="NO")
    assert stored.hired == hired


def test_remove_is_a_hard_delete_and_missing_ids_are_a_noop(
    employees: em.Repository[Employee],
) -> None:
    employees.add([Employee(id="r1"), Employee(id="r2"), Employee(id="r3")])
    employees.remove("r1")
    employees.remove([employees.get("r2"), "missing"])
    assert employees.get_many(["r1", "r2", "r3"])[0].id == "r3"


def test_remove_all_respects_the_soft_delete_mode(employees: em.Repository[Employee]) -> None:
    docs = employees.add([Employee(age=i, company_id="c") for i in range(5)])
    docs[0].is_deleted = True
    employees.save(docs[0], consistency="wait")
    assert employees.remove_all("company_id:c", consistency="immediate") == 4
    assert employees.count(soft_deletes="all", consistency="immediate") == 1
    assert employees.remove_all(soft_deletes="all", consistency="immediate") == 1


def test_id_fields_compose_the_id(messages: em.Repository[Message]) -> None:
    msg = messages.add(Message(tenant="acme", message_id="corp/42", handler_type="H"))
    assert msg.id == "acme:corp%2F42:H"
    assert messages.get("acme:corp%2F42:H").message_id == "corp/42"
    with pytest.raises(em.DocumentValidationError, match="tenant"):
        messages.add(Message(message_id="m", handler_type="H"))


def test_every_write_path_checks_the_512_byte_limit(
    employees: em.Repository[Employee], messages: em.Repository[Message]
) -> None:
    with pytest.raises(em.IdTooLongError):
        employees.add(Employee(id="x" * 513))
    with pytest.raises(em.IdTooLongError):
        employees.save(Employee(id="é" * 257))
    with pytest.raises(em.IdTooLongError):
        messages.add(Message(tenant="t", message_id="m" * 600, handler_type="h"))
    with pytest.raises(em.IdTooLongError):
        employees.patch("x" * 513, em.PartialPatch({"age": 1}))
    assert employees.add(Employee(id="y" * 512)).id == "y" * 512
    assert employees.count(soft_deletes="all", consistency="immediate") == 1


def test_invalid_values_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(em.DocumentValidationError, match=r"Employee\.age"):
        Employee(age="abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Employee(agee=3)  # type: ignore[call-arg]
    doc = Employee()
    with pytest.raises(em.DocumentValidationError):
        doc.hired = "not a date"  # type: ignore[assignment]


def test_validate_hook_runs_on_add_and_save_unless_disabled(
    mapper: em.Mapper, index_prefix: str
) -> None:
    class Checked(em.Document):
        class Index:
            name = "checked"

        email: str = ""

        def validate(self) -> None:
            if "@" not in self.email:
                raise em.DocumentValidationError("email is required", field="email")

    repo = mapper.repository(Checked)
    mapper.configure_indexes([Checked])
    with pytest.raises(em.DocumentValidationError, match="email"):
        repo.add(Checked())
    assert repo.add(Checked(), validate=False).id


def test_a_refused_add_leaves_the_document_as_it_was(mapper: em.Mapper) -> None:
    class Picky(em.Document, em.HasDates):
        class Index:
            name = "picky"

        email: str = ""

        def validate(self) -> None:
            if not self.email:
                raise em.DocumentValidationError("email is required", field="email")

    mapper.configure_indexes([Picky])
    doc = Picky()
    with pytest.raises(em.DocumentValidationError):
        mapper.repository(Picky).add(doc)
    assert (doc.id, doc.created_utc, doc.updated_utc) == (None, None, None)
    doc.email = "a@b"
    assert mapper.repository(Picky).add(doc).id is not None


def test_compose_id_gives_the_id_add_will_use(messages: em.Repository[Message]) -> None:
    msg = Message(tenant="acme", message_id="a b", handler_type="H")
    expected = messages.compose_id(msg)
    assert expected == "acme:a%20b:H"
    assert messages.add(msg).id == expected


def test_a_save_is_conditional_on_the_version_the_document_holds_now(
    employees: em.Repository[Employee],
) -> None:
    # the numbers remembered from a read or a write are used only while the document
    # still holds that very version: one assigned since (even an equal one) is parsed
    employees.add([Employee(id="v1"), Employee(id="v2"), Employee(id="v3")])
    by_get = employees.get_many(["v1"])[0]
    by_find = employees.find(filter=None, consistency="immediate").documents
    found = next(d for d in by_find if d.id == "v2")
    current = found.version
    assert by_get.version is not None and current is not None
    term, seq_no = current.split(":")
    found.version = f"{term}:{int(seq_no) + 7}"  # a version the store never gave
    found.age = 1
    with pytest.raises(em.VersionConflictError):
        employees.save(found)
    found.version = f"{term}:{seq_no}"  # equal to what was read, another object
    assert found.version == current and found.version is not current
    employees.save(found)
    assert employees.get("v2").age == 1
    by_get.age = 2
    saved = employees.save(by_get)  # the remembered numbers of the multi-GET
    saved.age = 3
    employees.save(saved)  # the numbers of the save's answer
    assert employees.get("v1").age == 3
    stale = employees.get("v3")
    employees.save(employees.get("v3"))
    stale.age = 4
    with pytest.raises(em.VersionConflictError):
        employees.save(stale)
    stale.version = "not-a-version"
    with pytest.raises(em.DocumentValidationError, match="version"):
        employees.save(stale)


def test_a_document_of_another_model_is_refused_with_the_same_message_alone_or_in_a_list(
    employees: em.Repository[Employee],
) -> None:
    other = Message(tenant="t", message_id="m", handler_type="h")
    for call in (employees.add, employees.save):
        name = call.__name__
        with pytest.raises(TypeError, match=rf"^{name}\(\) takes Employee documents, got Message"):
            call(other)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=rf"^{name}\(\) takes Employee documents, got Message"):
            call([Employee(), other])  # type: ignore[list-item]
    for given in (other, [other], ["some-id", 42]):
        with pytest.raises(TypeError, match=r"^remove\(\) takes Employee documents or ids, got"):
            employees.remove(given)  # type: ignore[arg-type]
    assert employees.count(soft_deletes="all", consistency="immediate") == 0
