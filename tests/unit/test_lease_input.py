"""Durations that would make a lease or a reindex lose data are refused with ``ValueError``
before anything is sent: the mapper here points at a port where nothing listens, so a value
that slipped through would fail with a connection error instead."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

import esmapper as em
from esmapper.custom_fields.definition import check_name
from esmapper.distributed.link import RedisLink
from esmapper.errors import DocumentValidationError
from esmapper.indexes.leftovers import delete_leftovers
from esmapper.indexes.reindex import reindex, reindex_outdated
from esmapper.locks import LockProvider
from esmapper.migrations import run_migrations

UNREACHABLE = "http://127.0.0.1:1"
ZERO, MINUS = _dt.timedelta(0), _dt.timedelta(seconds=-5)


class Item(em.Document, em.HasDates):
    class Index:
        name = "lease_input_items"
        version = 2

    name: str = ""


@pytest.fixture
def mapper() -> Any:
    app = em.Mapper(UNREACHABLE, models=[Item], index_prefix="lease_input_", max_retries=0)
    yield app
    app.close()


@pytest.mark.parametrize(
    "options",
    [
        {"catch_up_margin": MINUS},
        {"lock_ttl": ZERO},
        {"lock_ttl": MINUS},
        {"lock_wait": MINUS},
    ],
)
def test_reindex_refuses_bad_durations_before_sending(mapper: Any, options: dict[str, Any]) -> None:
    (name,) = options
    with pytest.raises(ValueError, match=name):
        reindex(mapper, Item, **options)


def test_a_zero_catch_up_margin_is_allowed_and_a_non_duration_is_a_type_error(
    mapper: Any,
) -> None:
    with pytest.raises(TypeError, match="catch_up_margin"):
        reindex(mapper, Item, catch_up_margin=60)  # type: ignore[arg-type]
    with pytest.raises(Exception) as zero:  # gets past the checks: the server is unreachable
        reindex(mapper, Item, catch_up_margin=ZERO, lock_wait=ZERO)
    assert not isinstance(zero.value, ValueError | TypeError)


@pytest.mark.parametrize("options", [{"lock_ttl": ZERO}, {"lock_wait": MINUS}])
def test_migrate_reindex_outdated_and_leftovers_refuse_bad_lock_options(
    mapper: Any, options: dict[str, Any]
) -> None:
    (name,) = options
    with pytest.raises(ValueError, match=name):
        run_migrations(mapper, **options)
    with pytest.raises(ValueError, match=name):
        reindex_outdated(mapper, **options)
    with pytest.raises(ValueError, match=name):
        delete_leftovers(mapper, Item, **options)


def test_locks_refuse_a_ttl_that_is_not_a_lease(mapper: Any) -> None:
    provider = LockProvider(mapper.client)
    for ttl in (ZERO, MINUS):
        with pytest.raises(ValueError, match="ttl"):
            provider.acquire("x", ttl)
        with pytest.raises(ValueError, match="ttl"):
            provider.try_acquire("x", ttl)
    with pytest.raises(ValueError, match="wait"):
        provider.acquire("x", wait=MINUS)
    with pytest.raises(ValueError, match="poll"):
        provider.acquire("x", poll=0)
    with pytest.raises(TypeError, match="ttl"):
        provider.acquire("x", 30)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"socket_timeout": 0},
        {"socket_timeout": -1.0},
        {"socket_timeout": float("nan")},
        {"connect_timeout": 0},
        {"lease": 0},
        {"lease": -0.5},
        {"lease": float("inf")},
        {"retry_min": 0},
        {"retry_max": 0.01},
    ],
)
def test_redis_link_options_are_checked_when_built(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        RedisLink("redis://127.0.0.1:1", **options)


def test_the_redis_cache_bus_and_mapper_pass_their_options_through_the_check() -> None:
    from esmapper.distributed import HybridCache, RedisCache, RedisMessageBus

    for build in (RedisCache, HybridCache, RedisMessageBus):
        with pytest.raises(ValueError, match="lease"):
            build("redis://127.0.0.1:1", lease=0)  # type: ignore[operator]
    with pytest.raises(ValueError, match="socket_timeout"):
        em.Mapper(UNREACHABLE, redis="redis://127.0.0.1:1", redis_options={"socket_timeout": 0})


@pytest.mark.parametrize(
    "name", ["a.b", "*", "a b", "_id", "Level:5", "_exists_", "-x", "AND", "or", "a/b", "x?"]
)
def test_custom_field_names_the_filter_language_cannot_address_are_refused(name: str) -> None:
    with pytest.raises(DocumentValidationError, match="cannot be named in a filter"):
        check_name(name)
    assert check_name(name, new=False) == name  # stored names stay usable for look-ups


@pytest.mark.parametrize("name", ["Level", "level_2", "Cost-Center", "né", "5x"])
def test_custom_field_names_the_filter_language_addresses_are_accepted(name: str) -> None:
    assert check_name(name) == name
