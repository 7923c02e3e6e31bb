"""The test helpers: the pytest fixtures and the TestCase mixin give the project's mapper on
the test server under a prefix of the test's own, as the process's mapper."""

from __future__ import annotations

import pytest
from django.test import SimpleTestCase

import esmapper as em
from esmapper.contrib.django import get_mapper
from esmapper.contrib.django.testing import EsmapperTestMixin, mapper_for_tests

from .documents import Note, RowDoc


def test_the_fixtures(esmapper_django_mapper: em.Mapper, esmapper_django_session: em.Session,
                      esmapper_index_prefix: str) -> None:  # fmt: skip
    assert get_mapper() is esmapper_django_mapper
    assert esmapper_django_mapper.index_prefix == esmapper_index_prefix
    assert set(esmapper_django_mapper.models) == {Note, RowDoc}
    esmapper_django_session.add(Note(id="a", text="x"))
    esmapper_django_session.commit()
    assert esmapper_django_mapper.repository(Note).get("a", cache=False).text == "x"


class MixinTests(EsmapperTestMixin, SimpleTestCase):
    def test_the_mixin_gives_a_prefixed_process_mapper(self) -> None:
        assert get_mapper() is self.esmapper_mapper
        assert self.esmapper_mapper.index_prefix.startswith("t-")
        self.esmapper_mapper.repository(Note).add(Note(id="b"), consistency="wait")
        assert self.esmapper_mapper.repository(Note).count() == 1


def test_the_test_mapper_has_no_redis_even_with_the_environment_s(
    es_url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A developer's ``ESMAPPER_REDIS_URL`` (the Mapper's fallback for ``redis=None``) does
    not make the tests' mappers share a cache through Redis."""
    monkeypatch.setenv("ESMAPPER_REDIS_URL", redis_url)
    with mapper_for_tests(es_url, "t-noredis-") as mapper:
        assert mapper._redis is None  # no shared cache, no notification listener
