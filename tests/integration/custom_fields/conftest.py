from __future__ import annotations

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper

from .models import Employee, Ticket


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Employee, Ticket, configure=True)


@pytest.fixture
def fields(mapper: em.Mapper) -> em.CustomFieldRepository:
    return mapper.custom_fields(Employee)


@pytest.fixture
def repo(mapper: em.Mapper) -> em.Repository[Employee]:
    return mapper.repository(Employee)
