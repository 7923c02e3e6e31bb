"""Test helpers for a Django project using esmapper: its mapper on the test server, under an
index prefix of the test's own (deleted afterwards), made the process's mapper
(:func:`~esmapper.contrib.django.use_mapper`) so that the app's requests, syncs and
commands use it.

pytest (pytest-django): load the plugin in your ``conftest.py``::

    pytest_plugins = ["esmapper.contrib.django.testing"]

    def test_birthday(client, esmapper_django_mapper):
        ...

``esmapper_django_mapper`` is the mapper of ``settings.ESMAPPER`` (its models, migrations
and mapper options) on the session's test server (``esmapper_es_url``: the local server,
or ``ESMAPPER_TEST_URL``) with the test's prefix, its indexes configured; no Redis (a
test's cache stays in the process). ``esmapper_django_session`` is a session of it, closed
after the test (commit it yourself).

``unittest`` (``manage.py test``): mix :class:`EsmapperTestMixin` into your test case::

    class BirthdayTests(EsmapperTestMixin, TestCase):
        def test_birthday(self):
            self.esmapper_mapper.repository(Employee).add(...)
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import ClassVar

import attrs
import pytest
from elasticsearch import Elasticsearch

from esmapper.contrib.django._mapper import get_config, use_mapper
from esmapper.mapper import Mapper
from esmapper.session import Session
from esmapper.testing.base import ServerHandle
from esmapper.testing.cleanup import delete_prefixed
from esmapper.testing.selection import start_test_server

__all__ = [
    "EsmapperTestMixin",
    "esmapper_django_mapper",
    "esmapper_django_session",
    "mapper_for_tests",
]


def mapper_for_tests(url: str, index_prefix: str) -> Mapper:
    """The mapper of ``settings.ESMAPPER`` at ``url`` with ``index_prefix``, without Redis,
    not even ``$ESMAPPER_REDIS_URL``'s (``redis=""``; ``None`` would take it): nothing is
    sent."""
    config = attrs.evolve(get_config(), url=url, index_prefix=index_prefix, redis="")
    return config.build_mapper()


@pytest.fixture
def esmapper_django_mapper(esmapper_es_url: str, esmapper_index_prefix: str) -> Iterator[Mapper]:
    """The project's mapper on the test server with this test's prefix, indexes configured,
    made the process's mapper for the test; closed after it."""
    with mapper_for_tests(esmapper_es_url, esmapper_index_prefix) as mapper:
        mapper.configure_indexes()
        with use_mapper(mapper):
            yield mapper


@pytest.fixture
def esmapper_django_session(esmapper_django_mapper: Mapper) -> Iterator[Session]:
    """A session of ``esmapper_django_mapper`` (closed after the test; commit it yourself)."""
    with esmapper_django_mapper.session() as session:
        yield session


class _Server:
    """The test server of the process for :class:`EsmapperTestMixin` (started once)."""

    lock = threading.Lock()
    handle: ServerHandle | None = None

    @classmethod
    def url(cls) -> str:
        with cls.lock:
            if cls.handle is None:
                cls.handle = start_test_server()  # stopped at exit (it registers atexit)
            return cls.handle.url


class EsmapperTestMixin:
    """Gives each test ``self.esmapper_mapper``: the project's mapper on the test server
    (started once per process) with an index prefix of the test's own, indexes configured,
    the process's mapper during the test; the prefix's indexes are deleted after it."""

    esmapper_mapper: Mapper
    esmapper_configure_indexes: ClassVar[bool] = True

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        url, prefix = _Server.url(), f"t-{uuid.uuid4().hex[:8]}-"
        stack = ExitStack()
        self.addCleanup(stack.close)  # type: ignore[attr-defined]
        client = stack.enter_context(Elasticsearch(url, request_timeout=60))
        stack.callback(delete_prefixed, client, prefix)
        self.esmapper_mapper = stack.enter_context(mapper_for_tests(url, prefix))
        if self.esmapper_configure_indexes:
            self.esmapper_mapper.configure_indexes()
        stack.enter_context(use_mapper(self.esmapper_mapper))
