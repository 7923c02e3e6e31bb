"""``timeout=`` given to a custom-field repository call bounds every request the call
sends, the tenant lock and the definitions search before its write included (as for
``Repository`` calls: tests/integration/repository/test_call_limits.py)."""

from __future__ import annotations

import time

import pytest
from elastic_transport import ConnectionTimeout

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import Employee


@pytest.fixture
def fields(make_mapper: MakeMapper, proxy: FaultProxy) -> em.CustomFieldRepository:
    return make_mapper(Employee, url=proxy.url, configure=True).custom_fields(Employee)


def test_timeout_bounds_the_definitions_search_of_add_field(
    fields: em.CustomFieldRepository, proxy: FaultProxy
) -> None:
    proxy.delay(2.0, path=r"/_search$")
    started = time.monotonic()
    with pytest.raises(ConnectionTimeout):
        fields.add_field("t1", "score", "int", timeout=0.5)
    assert time.monotonic() - started < 1.9  # it gave up before the search answered
    proxy.clear_faults()
    assert fields.add_field("t1", "score", "int").name == "score"  # nothing was left held


def test_timeout_bounds_the_definitions_search_of_find_by_tenant(
    fields: em.CustomFieldRepository, proxy: FaultProxy
) -> None:
    fields.add_field("t1", "score", "int")
    proxy.delay(2.0, path=r"/_search$")
    with pytest.raises(ConnectionTimeout):
        fields.find_by_tenant("t1", timeout=0.5)
