from __future__ import annotations

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper

from ..repository.models import Employee, Message


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Employee, Message, configure=True)


@pytest.fixture
def seeded(mapper: em.Mapper) -> list[Employee]:
    repo = mapper.repository(Employee)
    return repo.add(
        [Employee(id=f"e{i}", name=f"Person {i}", age=20 + i, tags=["t"]) for i in range(5)],
        consistency="wait",
    )
