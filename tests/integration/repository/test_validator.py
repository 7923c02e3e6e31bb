"""``class Index: validator = fn``: fn returns a document's error messages; an add or save
with any raises one DocumentValidationError joining them with "; "."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.patches import Patch
from tests.integration.conftest import MakeMapper


def required_name(doc: Contact) -> Iterator[str]:
    if not doc.name:
        yield "Name is required"
    if "@" not in doc.email:
        yield f"Email {doc.email!r} is not an address"


def adult(doc: Contact) -> str | None:
    return None if doc.age >= 18 else "Age must be 18 or more"


class Contact(em.Document, em.Versioned):
    class Index:
        name = "contacts"
        validator = (required_name, adult)

    name: str = ""
    email: str = ""
    age: int = 0


@pytest.fixture
def contacts(make_mapper: MakeMapper) -> em.Repository[Contact]:
    return make_mapper(Contact, configure=True).repository(Contact)


def test_the_messages_are_joined_into_one_error(contacts: em.Repository[Contact]) -> None:
    with pytest.raises(em.DocumentValidationError) as caught:
        contacts.add(Contact(id="c1", email="nobody", age=3))
    assert str(caught.value) == (
        "Name is required; Email 'nobody' is not an address; Age must be 18 or more"
    )
    assert caught.value.errors == [
        "Name is required",
        "Email 'nobody' is not an address",
        "Age must be 18 or more",
    ]
    assert list(caught.value.ids) == ["c1"]
    assert contacts.get("c1") is None  # nothing was sent


def test_a_valid_document_is_written_and_saves_are_checked_too(
    contacts: em.Repository[Contact],
) -> None:
    doc = contacts.add(Contact(id="c1", name="Ann", email="ann@example.com", age=30))
    doc.age = 12
    with pytest.raises(em.DocumentValidationError, match=r"^Age must be 18 or more$"):
        contacts.save(doc)
    with contacts.mapper.session() as s:  # a session's flush checks the same way
        s.add(Contact(id="c2", name="Bo", email="bo@example.com", age=20))
    invalid = pytest.raises(em.DocumentValidationError, match=r"^Email 'cy' is not an address$")
    with invalid, contacts.mapper.session() as s:
        s.add(Contact(id="c3", name="Cy", email="cy", age=40))
    assert contacts.get("c3") is None
    assert contacts.get("c2") is not None


def test_validate_false_skips_it_and_patches_bypass_it(contacts: em.Repository[Contact]) -> None:
    contacts.add(Contact(id="c1", age=1), validate=False)
    contacts.patch("c1", em.PartialPatch({"age": 2}))  # like Document.validate: not on patches
    assert contacts.get("c1").age == 2  # type: ignore[union-attr]


def test_a_bad_validator_is_refused() -> None:
    with pytest.raises(em.IndexConfigurationError, match="validator must be a callable"):

        class Bad(em.Document):
            class Index:
                validator = "not callable"

    def number(doc: object) -> list[object]:
        return [3]

    class Odd(em.Document):
        class Index:
            validator = number

    with pytest.raises(TypeError, match="returned 3; it returns error messages"):
        Odd.__esmapper__.index.validation_errors(Odd())


@pytest.mark.parametrize(
    "patch",
    [
        em.PartialPatch({"age": 40}),
        em.ScriptPatch("ctx._source.age = params.age", params={"age": 40}),
        em.JsonPatch([{"op": "replace", "path": "/age", "value": 40}]),
    ],
    ids=["partial", "script", "json"],
)
def test_patches_by_id_and_query_are_not_given_to_the_validator(
    contacts: em.Repository[Contact], patch: Patch
) -> None:
    # the validator takes documents; a patch by id or query has none to give it
    contacts.add(Contact(id="c1", name="Ann", email="ann@example.com", age=30), consistency="wait")
    contacts.patch("c1", patch, consistency="wait")
    contacts.patch_all("name:Ann", patch, consistency="wait")
    assert contacts.get("c1", cache=False).age == 40  # type: ignore[union-attr]


def test_a_partly_loaded_document_is_validated_as_it_will_be_stored(
    contacts: em.Repository[Contact],
) -> None:
    # a document read with includes= holds defaults for what it did not load; the
    # validator sees the stored values there, merged with the changes the save writes
    contacts.add(Contact(id="c1", name="Ann", email="ann@example.com", age=30), consistency="wait")
    doc = contacts.find("id:c1", includes=["age"]).documents[0]
    assert doc.name == "" and doc.email == ""  # not loaded: defaults
    doc.age = 31
    contacts.save(doc, consistency="wait")  # name and email are stored: valid
    assert contacts.get("c1", cache=False).age == 31  # type: ignore[union-attr]
    doc = contacts.find("id:c1", includes=["name", "age"]).documents[0]
    doc.age = 12  # and a change is still checked, with what was not loaded
    with pytest.raises(em.DocumentValidationError, match=r"^Age must be 18 or more$"):
        contacts.save(doc)
    doc = contacts.find("id:c1", excludes=["age"]).documents[0]
    doc.email = "nobody"
    with pytest.raises(em.DocumentValidationError, match=r"^Email 'nobody' is not an address$"):
        contacts.save(doc)
    with contacts.mapper.session() as s:  # a session's flush the same way
        doc = s.find(Contact, "id:c1", includes=["age"]).documents[0]
        doc.age = 50
    assert contacts.get("c1", cache=False).age == 50  # type: ignore[union-attr]


def test_a_partly_loaded_document_deleted_meanwhile_fails_its_save_as_deleted(
    contacts: em.Repository[Contact], es_client: Elasticsearch
) -> None:
    # no stored copy to judge: the validator is not given the defaults of what the read
    # did not load (they would not be stored: the partial update finds nothing to update)
    contacts.add(Contact(id="c1", name="Ann", email="ann@example.com", age=30), consistency="wait")
    doc = contacts.find("id:c1", includes=["age"]).documents[0]
    es_client.delete(index=contacts.spec.alias, id="c1", refresh=True)
    doc.age = 31
    # the version guard's 409 (a real cluster may answer document_missing_exception)
    with pytest.raises((em.VersionConflictError, em.DocumentNotFoundError)):
        contacts.save(doc)
    assert contacts.get("c1", cache=False) is None  # nothing was stored
