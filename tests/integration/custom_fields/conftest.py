from __future__ import annotations

from collections.abc import Iterator

import pytest

import esmapper as em

from .models import Employee, Ticket


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with em.Mapper(es_url, models=[Employee, Ticket], index_prefix=index_prefix) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def fields(mapper: em.Mapper) -> em.CustomFieldRepository:
    return mapper.custom_fields(Employee)


@pytest.fixture
def repo(mapper: em.Mapper) -> em.Repository[Employee]:
    return mapper.repository(Employee)
