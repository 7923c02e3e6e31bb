from __future__ import annotations

from collections.abc import Iterator

import pytest

import esmapper as em

from .books import Book
from .models import Employee, Message


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with em.Mapper(es_url, models=[Employee, Message], index_prefix=index_prefix) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def employees(mapper: em.Mapper) -> em.Repository[Employee]:
    return mapper.repository(Employee)


@pytest.fixture
def messages(mapper: em.Mapper) -> em.Repository[Message]:
    return mapper.repository(Message)


@pytest.fixture
def book_mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with em.Mapper(es_url, models=[Book], index_prefix=index_prefix) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def books(book_mapper: em.Mapper) -> em.Repository[Book]:
    return book_mapper.repository(Book)
