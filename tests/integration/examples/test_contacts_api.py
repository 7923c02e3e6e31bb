"""The FastAPI example (examples/contacts_api) through its OpenAPI description and HTTP
calls, on the test server: list and filter by a company's custom fields, read, create,
edit with a version, delete to the trash and restore, with JSON errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

import esmapper as em
from examples.contacts_api.app import create_app
from examples.contacts_api.models import Contact, build_mapper


@pytest.fixture
def contacts_mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with build_mapper(es_url, index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
        yield mapper


@pytest.fixture
def api(contacts_mapper: em.Mapper) -> Iterator[TestClient]:
    with TestClient(create_app(contacts_mapper), raise_server_exceptions=False) as client:
        yield client


def operations(api: TestClient) -> set[str]:
    """``METHOD /path`` of every operation the OpenAPI page describes."""
    described = api.get("/openapi.json").json()["paths"]
    return {f"{method.upper()} {path}" for path, ops in described.items() for method in ops}


def create(api: TestClient, **fields: Any) -> dict[str, Any]:
    created = api.post("/contacts", json={"company": "acme", **fields})
    assert created.status_code == 201, created.text
    return created.json()  # type: ignore[no-any-return]


def test_the_openapi_page_describes_every_endpoint(api: TestClient) -> None:
    assert operations(api) == {
        "GET /contacts",
        "POST /contacts",
        "GET /contacts/{id}",
        "PATCH /contacts/{id}",
        "DELETE /contacts/{id}",
        "POST /contacts/{id}/restore",
        "GET /companies/{company}/fields",
        "POST /companies/{company}/fields",
    }
    page = api.get("/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text  # the Swagger UI page


def test_list_and_filter_by_a_companys_custom_fields(api: TestClient) -> None:
    level = api.post("/companies/acme/fields", json={"name": "Level", "type": "int"})
    assert level.status_code == 201 and level.json() == {
        "name": "Level",
        "type": "int",
        "slot": "int-1",
    }
    rank = api.post("/companies/globex/fields", json={"name": "Rank", "type": "int"})
    assert rank.status_code == 201
    create(api, name="Ada", email="ada@acme.io", custom_fields={"Level": 5}, tags=["vip"])
    create(api, name="Bob", custom_fields={"Level": 2})
    create(api, name="Gus", company="globex", custom_fields={"Rank": 9})
    found = api.get(
        "/contacts", params={"company": "acme", "q": "level:>=2", "sort": "-level"}
    ).json()
    assert found["total"] == 2
    assert [c["name"] for c in found["contacts"]] == ["Ada", "Bob"]
    assert found["contacts"][0]["custom_fields"] == {"Level": 5}
    everyone = api.get("/contacts", params={"size": 2}).json()
    assert everyone["total"] == 3 and [c["name"] for c in everyone["contacts"]] == ["Ada", "Bob"]
    assert api.get("/contacts", params={"q": "tags:vip"}).json()["total"] == 1
    assert api.get("/companies/acme/fields").json() == [level.json()]


def test_edit_with_the_version_read(api: TestClient, contacts_mapper: em.Mapper) -> None:
    ada = create(api, name="Ada", custom_fields={"Level": 1, "Team": "core"})
    edited = api.patch(
        f"/contacts/{ada['id']}",
        json={"version": ada["version"], "name": "Ada L.", "custom_fields": {"Team": None}},
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["version"] != ada["version"]
    assert edited.json()["custom_fields"] == {"Level": 1}
    stale = api.patch(f"/contacts/{ada['id']}", json={"version": ada["version"], "name": "Old"})
    assert stale.status_code == 409
    assert stale.json()["error"] == "VersionConflictError" and stale.json()["ids"] == [ada["id"]]
    stored = contacts_mapper.repository(Contact).get(ada["id"], cache=False)
    assert stored.name == "Ada L."
    assert api.get(f"/contacts/{ada['id']}").json() == edited.json()


def test_invalid_input_is_a_422_and_writes_nothing(
    api: TestClient, contacts_mapper: em.Mapper
) -> None:
    ada = create(api, name="Ada", email="ada@acme.io")
    invalid = api.patch(f"/contacts/{ada['id']}", json={"email": "not an address"})
    assert invalid.status_code == 422
    assert invalid.json() == {
        "detail": "'not an address' is not an e-mail address.",
        "error": "DocumentValidationError",
        "field": "email",
    }
    assert contacts_mapper.repository(Contact).get(ada["id"], cache=False).email == "ada@acme.io"
    query = api.get("/contacts", params={"q": "colour:red"})
    assert query.status_code == 422 and query.json()["field"] == "colour"
    assert api.post("/contacts", json={"name": "No company"}).status_code == 422  # pydantic
    assert api.get("/contacts").json()["total"] == 1


def test_delete_to_the_trash_and_restore(api: TestClient, contacts_mapper: em.Mapper) -> None:
    ada = create(api, name="Ada")
    assert api.delete(f"/contacts/{ada['id']}").status_code == 204
    missing = api.get(f"/contacts/{ada['id']}")
    assert missing.status_code == 404
    assert missing.json() == {
        "detail": f'Document "{ada["id"]}" could not be found',
        "error": "DocumentNotFoundError",
        "ids": [ada["id"]],
    }
    assert api.get("/contacts").json()["total"] == 0
    trash = api.get("/contacts", params={"deleted": True}).json()
    assert [c["deleted"] for c in trash["contacts"]] == [True]
    assert api.get(f"/contacts/{ada['id']}", params={"deleted": True}).json()["deleted"]
    assert contacts_mapper.repository(Contact).get(ada["id"], soft_deletes="all").is_deleted
    assert api.post(f"/contacts/{ada['id']}/restore").status_code == 204
    assert api.get(f"/contacts/{ada['id']}").json()["deleted"] is False
    assert api.delete("/contacts/nobody").status_code == 404
