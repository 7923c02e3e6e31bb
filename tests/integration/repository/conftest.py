from __future__ import annotations

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper

from .books import Book
from .models import Employee, Message


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Employee, Message, configure=True)


@pytest.fixture
def employees(mapper: em.Mapper) -> em.Repository[Employee]:
    return mapper.repository(Employee)


@pytest.fixture
def messages(mapper: em.Mapper) -> em.Repository[Message]:
    return mapper.repository(Message)


@pytest.fixture
def book_mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Book, configure=True)


@pytest.fixture
def books(book_mapper: em.Mapper) -> em.Repository[Book]:
    return book_mapper.repository(Book)
