"""The feature points (esmapper._features): registration, attachment at model compile,
per-point listing, and ``class Index:`` options a feature declares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import _features
from esmapper.errors import IndexConfigurationError


class Demo(_features.Feature):
    name = "demo_feature"
    index_options = ("demo_option",)
    __slots__ = ()

    @classmethod
    def attach(cls, info: Any) -> Demo | None:
        return cls(info) if info.index is not None and "demo_option" in info.index.extras else None

    def settle(self, call: Any, confirmed: Any) -> None:
        return None


@pytest.fixture
def demo() -> Iterator[type[Demo]]:
    _features.register(Demo)
    try:
        yield Demo
    finally:
        _features.unregister(Demo)


def test_a_feature_option_is_accepted_and_the_feature_attached(demo: type[Demo]) -> None:
    class Routed(em.Document):
        name: str = ""

        class Index:
            name = "routed"
            demo_option = 3

    info = Routed.__esmapper__
    assert info.index is not None and info.index.extras == {"demo_option": 3}
    feature = info.points.feature("demo_feature")
    assert isinstance(feature, Demo) and feature.info is info
    assert [h.__self__ for h in info.points.settle] == [feature]  # type: ignore[attr-defined]
    assert info.points.prepare == ()  # not implemented: not listed


def test_a_model_without_the_option_pays_nothing(demo: type[Demo]) -> None:
    class Plain(em.Document):
        class Index:
            name = "plain-demo"

    assert Plain.__esmapper__.points.feature("demo_feature") is None


def test_an_unknown_option_is_still_refused(demo: type[Demo]) -> None:
    with pytest.raises(IndexConfigurationError, match="demo_optoin"):

        class Typo(em.Document):
            class Index:
                name = "typo"
                demo_optoin = 3


def test_without_the_feature_its_option_is_unknown() -> None:
    with pytest.raises(IndexConfigurationError, match="demo_option"):

        class Orphan(em.Document):
            class Index:
                name = "orphan"
                demo_option = 3


def test_a_feature_registered_later_attaches_to_models_compiled_before() -> None:
    class Early(em.Document):
        class Index:
            name = "early"

    class Late(_features.Feature):
        name = "late_feature"
        __slots__ = ()

        @classmethod
        def attach(cls, info: Any) -> Late | None:
            return cls(info) if info.cls is Early else None

        def prepare(self, call: Any, pendings: Any) -> None:
            return None

    _features.register(Late)
    try:
        assert Early.__esmapper__.points.feature("late_feature") is not None
        assert len(Early.__esmapper__.points.prepare) == 1
    finally:
        _features.unregister(Late)
    assert Early.__esmapper__.points.feature("late_feature") is None


def test_a_name_is_registered_once() -> None:
    class Twin(_features.Feature):
        name = "soft_deletes"

    with pytest.raises(ValueError, match="soft_deletes"):
        _features.register(Twin)


def test_the_builtin_features_attach_by_trait_and_kind() -> None:
    class Logs(em.Document, em.SoftDeletes, em.HasDates):
        class Index:
            name = "logs-demo"
            kind = "daily"

    names = {f.name for f in Logs.__esmapper__.points.features}
    assert names == {"soft_deletes", "time_series"}


class Joined(_features.Feature):
    """Adds a property to the mapping in place, as the point's docstring invites."""

    name = "joined_feature"
    __slots__ = ()

    @classmethod
    def attach(cls, info: Any) -> Joined | None:
        return cls(info) if info.index is not None and info.index.name == "joined" else None

    def mapping(self, body: dict[str, Any]) -> None:
        body["properties"]["join_field"] = {"type": "join"}
        body.setdefault("added", []).append(self.name)


def test_the_mapping_point_is_called_once_on_a_fresh_body() -> None:
    _features.register(Joined)
    try:

        class Child(em.Document):
            name: str = ""

            class Index:
                name = "joined"

        info = Child.__esmapper__
        body = info.mapping
        assert body["added"] == ["joined_feature"]  # once, not once per pass
        assert body["properties"]["join_field"] == {"type": "join"}
        assert "join_field" not in info.properties  # the model's own mapping untouched
        assert info.mapping == body  # the same every time
    finally:
        _features.unregister(Joined)


class Asks(_features.Feature):
    """Reads a call option and applies to no model: a call of any model giving it is
    refused once it is registered."""

    name = "asks_tenant_feature"
    call_options = ("tenant",)
    __slots__ = ()


def test_registering_a_call_option_changes_the_registrys_call_options() -> None:
    """What was worked out from the registry's call options (a by-id read's check,
    ``Reading._by_id_read``) is stale once a feature reads a call option, even one that
    applies to no model: a new tuple; the models' points stay as they were."""

    class Plain(em.Document):
        title: str = ""

    info = Plain.__esmapper__  # type: ignore[attr-defined]
    before = _features.call_options()
    _features.register(Asks)
    try:
        during = _features.call_options()
        assert during is not before and ("tenant", Asks) in during
        assert info.points is _features.NO_POINTS
    finally:
        _features.unregister(Asks)
    assert _features.call_options() is not during and _features.call_options() == before
