"""Fixtures for the example web applications: the Flask directory's mapper on the test
server, its app and client; the browser (``driver``) of every example's browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

import esmapper as em
from examples.webapp.app import create_app
from examples.webapp.models import Address, Employee, Team, build_mapper


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless Chromium for the module's tests (see :mod:`.browser`; skipped without one)."""
    from .browser import browser

    yield from browser()


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with build_mapper(es_url, index_prefix=index_prefix) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def app(mapper: em.Mapper) -> Flask:
    return create_app(mapper, TESTING=True, SECRET_KEY="test", PAGE_SIZE=5)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def repo(mapper: em.Mapper) -> em.Repository[Employee]:
    return mapper.repository(Employee)


def make_employee(i: int, **values: object) -> Employee:
    """Employee number ``i``: "Person 01" is 21, lives in Lyon when ``i`` is even."""
    fields: dict[str, object] = {
        "name": f"Person {i:02d}",
        "email": f"person{i}@example.com",
        "title": "Engineer" if i % 3 else "Manager",
        "department": "Engineering",
        "team": "platform",
        "age": 20 + i,
        "address": Address(city="Lyon" if i % 2 == 0 else "Oslo", country="FR"),
    }
    fields.update(values)
    return Employee(**fields)  # type: ignore[arg-type]


@pytest.fixture
def employees(repo: em.Repository[Employee]) -> list[Employee]:
    """Twelve stored employees, Person 01 (21) to Person 12 (32)."""
    return repo.add([make_employee(i) for i in range(1, 13)], consistency="wait")


@pytest.fixture
def team(mapper: em.Mapper) -> Team:
    return mapper.repository(Team).add(
        Team(company_id="acme", slug="platform", name="Platform"), consistency="wait"
    )
