from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper.migrations import MigrationRecord, StateStore


class Employee(em.Document):
    class Index:
        name = "employees"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    department: str | None = em.field(em.Keyword(), default=None)


MakeMapper = Callable[..., em.Mapper]


@pytest.fixture
def make_mapper(es_url: str, index_prefix: str) -> Iterator[MakeMapper]:
    """``make_mapper(*migrations, models=(Employee,), **mapper_options)``."""
    made: list[em.Mapper] = []

    def make(*migrations: Any, models: Any = (Employee,), **options: Any) -> em.Mapper:
        mapper = em.Mapper(
            es_url, models=models, index_prefix=index_prefix, migrations=migrations, **options
        )
        made.append(mapper)
        return mapper

    yield make
    for mapper in made:
        mapper.close()


def records(mapper: em.Mapper) -> dict[str, MigrationRecord]:
    return StateStore(mapper.client, index_prefix=mapper.index_prefix).load()
