"""``Options.merge``: a call's options are built once per spelling and stay checked."""

from __future__ import annotations

import datetime as dt

import pytest

import esmapper as em


def test_the_same_overrides_give_the_same_options_object() -> None:
    base = em.Options(consistency="eventual")
    first = base.merge(cache=True, timeout=2)
    assert base.merge(cache=True, timeout=2) is first
    assert (first.cache, first.timeout, first.consistency) == (True, 2.0, "eventual")
    assert base.merge(cache=False, timeout=2) is not first
    assert em.Options(consistency="wait").merge(cache=True, timeout=2).consistency == "wait"


def test_equal_values_of_another_type_are_checked_on_their_own() -> None:
    base = em.Options()
    assert base.merge(retries=1).retries == 1
    with pytest.raises(ValueError, match="retries"):
        base.merge(retries=True)  # True == 1, but a bool is no retry count
    assert base.merge(timeout=dt.timedelta(seconds=3)).timeout == 3.0


def test_bad_values_are_refused_on_every_call() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="consistency"):
            em.Options().merge(consistency="now")
        with pytest.raises(TypeError, match="consistancy"):
            em.Options().merge(consistancy="wait")


def test_the_deprecated_cache_key_spelling_warns_on_every_call() -> None:
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match="cache_key"):
            merged = em.Options().merge(cache="people")
        assert (merged.cache, merged.cache_key) == (None, "people")


def test_one_override_is_memoized_by_value_and_type() -> None:
    base = em.Options()
    assert base.merge(cache=True) is base.merge(cache=True)
    assert base.merge(notifications=1).notifications == 1  # kept as given (no validator)
    assert base.merge(notifications=True).notifications is True  # not the 1 merged before
    assert base.merge(retries=5).retries == 5
    with pytest.raises(ValueError, match="retries"):
        base.merge(retries=5.0)  # == 5, but no int: refused, not served from the memo


def test_an_equal_base_is_merged_on_its_own() -> None:
    first, second = em.Options(), em.Options()
    merged = first.merge(cache=True)
    assert second.merge(cache=True) == merged and first.merge(cache=True) is merged


def test_an_unhashable_value_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="consistency"):
        em.Options().merge(consistency=["wait"])
    with pytest.raises(ValueError, match="tenant"):
        em.Options().merge(tenant={"a": 1}, cache=True)


def test_given_keeps_the_keywords_a_call_gave_a_value() -> None:
    from esmapper.options import OPTION_NAMES, given, split

    passed: dict[str, object] = dict.fromkeys(OPTION_NAMES)  # every keyword's default
    assert given({}) == {}
    assert given(passed) == {}
    assert given({**passed, "retries": 0, "cache": False}) == {"retries": 0, "cache": False}
    assert given({**passed, "sort": ["a"], "limit": None}) == {"sort": ["a"]}

    class Odd:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparison")

        __hash__ = object.__hash__

    odd = Odd()
    assert given({**passed, "tenant": odd}) == {"tenant": odd}
    kwargs = {"sort": ["a"], "cache": False, "limit": 5}
    assert split(kwargs, ("limit", "sort", "total")) == {"sort": ["a"], "limit": 5}
    assert kwargs == {"cache": False}


def test_the_cache_expiry_and_read_cache_are_checked_and_kept() -> None:
    at = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    assert em.Options(expires_in=dt.timedelta(minutes=2)).expires_in == 120.0
    assert em.Options(expires_in=5).expires_in == 5.0
    assert em.Options(expires_at=at).expires_at is at
    assert em.Options(read_cache=False).read_cache is False
    base = em.Options()
    assert base.merge(expires_in=30) is base.merge(expires_in=30)
    with pytest.raises(ValueError, match="give one expiry, not both"):
        base.merge(expires_in=30).merge(expires_at=at)
    for bad in (0, -1, float("inf"), "5", True, dt.timedelta(seconds=-1)):
        with pytest.raises(ValueError, match="expires_in="):
            base.merge(expires_in=bad)
    for wrong in ("2030-01-01", dt.datetime(2030, 1, 1), dt.date(2030, 1, 1)):
        with pytest.raises(ValueError, match="expires_at="):
            base.merge(expires_at=wrong)
    with pytest.raises(ValueError, match="read_cache=1"):
        base.merge(read_cache=1)
