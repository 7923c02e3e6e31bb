from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.migrations import MigrationRecord, StateStore
from tests.integration.conftest import MakeMapper

__all__ = ["Employee", "MakeMapper", "make_mapper", "records"]


class Employee(em.Document):
    class Index:
        name = "employees"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    department: str | None = em.field(em.Keyword(), default=None)


@pytest.fixture
def make_mapper(make_mapper: MakeMapper) -> MakeMapper:
    """``make_mapper(*migrations, models=(Employee,), **mapper_options)``: the shared
    factory (tests/integration/conftest.py) with the migrations first."""

    def make(*migrations: Any, models: Any = (Employee,), **options: Any) -> em.Mapper:
        return make_mapper(*models, migrations=migrations, **options)

    return make


def records(mapper: em.Mapper) -> dict[str, MigrationRecord]:
    return StateStore(mapper.client, index_prefix=mapper.index_prefix).load()
