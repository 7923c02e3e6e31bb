"""Routing by an id field (:mod:`esmapper._routing`): the ``routing_field`` option's checks
and what the feature's points give, without a server."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper._routing import Routing
from esmapper.bulk import BulkAction
from esmapper.errors import DocumentValidationError, IndexConfigurationError


class Order(em.Document):
    class Index:
        name = "unit-routed-orders"
        id_fields = ("customer", "number")
        routing_field = "number"

    customer: str = ""
    number: str = ""


def _routing() -> Routing:
    feature = Order.__esmapper__.points.feature("routing")
    assert isinstance(feature, Routing)
    return feature


def test_the_option_attaches_the_feature_to_that_model_only() -> None:
    class Plain(em.Document):
        class Index:
            name = "unit-plain"
            id_fields = ("a",)

        a: str = ""

    assert _routing().field == "number"
    assert Plain.__esmapper__.points.feature("routing") is None


def test_the_field_must_be_a_field_of_the_model() -> None:
    with pytest.raises(IndexConfigurationError, match=r"Ghost\.Index\.routing_field.*'nope'"):

        class Ghost(em.Document):
            class Index:
                name = "unit-ghost"
                id_fields = ("a",)
                routing_field = "nope"

            a: str = ""


def test_the_field_must_be_one_of_the_id_fields() -> None:
    with pytest.raises(IndexConfigurationError, match=r"routing_field 'b' must be one of.*\(a\)"):

        class Loose(em.Document):
            class Index:
                name = "unit-loose"
                id_fields = ("a",)
                routing_field = "b"

            a: str = ""
            b: str = ""


def test_without_id_fields_there_is_nothing_to_route_by() -> None:
    with pytest.raises(IndexConfigurationError, match=r"id_fields \(none\)"):

        class Bare(em.Document):
            class Index:
                name = "unit-bare"
                routing_field = "a"

            a: str = ""


def test_the_field_name_must_be_a_string() -> None:
    with pytest.raises(IndexConfigurationError, match="must name a field of Listed"):

        class Listed(em.Document):
            class Index:
                name = "unit-listed"
                id_fields = ("a",)
                routing_field = ("a",)

            a: str = ""


def test_the_mapping_requires_a_routing() -> None:
    assert Order.__esmapper__.mapping["_routing"] == {"required": True}


def test_reads_and_writes_route_with_the_id_fields_term() -> None:
    id = em.compose_id("acme", "a/1")
    assert _routing().read_params(id) == {"routing": "a/1"}
    pending: Any = None
    actions = [
        BulkAction("index", "orders", id, {}, ref=pending),
        BulkAction("delete", "orders", "acme:7", ref=pending),
    ]
    _routing().shape(None, actions)  # type: ignore[arg-type]
    assert [a.routing for a in actions] == ["a/1", "7"]


def test_an_id_not_composed_of_the_id_fields_gives_no_routing() -> None:
    assert _routing().read_params("just-one-term") == {}
    action = BulkAction("delete", "orders", "a:b:c")
    _routing().shape(None, [action])  # type: ignore[arg-type]
    assert action.routing is None


def test_a_write_of_such_an_id_is_refused_before_sending() -> None:
    class Pending:
        doc = Order(id="just-one-term", customer="acme", number="1")
        id = None

    with pytest.raises(DocumentValidationError, match="'just-one-term' is not composed"):
        _routing().check(None, [Pending()])  # type: ignore[arg-type]
    _routing().check(None, [type("P", (), {"doc": None, "id": "acme:1"})()])  # type: ignore[arg-type]
