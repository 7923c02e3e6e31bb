from __future__ import annotations

from collections.abc import Iterator

import pytest

import esmapper as em

from ..repository.models import Employee, Message


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with em.Mapper(es_url, models=[Employee, Message], index_prefix=index_prefix) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def seeded(mapper: em.Mapper) -> list[Employee]:
    repo = mapper.repository(Employee)
    return repo.add(
        [Employee(id=f"e{i}", name=f"Person {i}", age=20 + i, tags=["t"]) for i in range(5)],
        consistency="wait",
    )
