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
