"""A model's ``class Index:`` block: defaults and the options it refuses."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import esmapper as em
from esmapper.model import IndexOptions

from .models import Employee, Everything


def model(class_name: str = "Order", **options: Any) -> type[em.Document]:
    """A model class named ``class_name`` with ``tenant``, ``number`` and ``happened``
    fields, and ``options``."""
    annotations = {"tenant": str, "number": int, "happened": dt.datetime | None}
    namespace: dict[str, Any] = {"__annotations__": annotations}
    namespace.update(tenant="", number=0, happened=None)
    if options:
        namespace["Index"] = type("Index", (), options)
    return type(class_name, (em.Document,), namespace)


def options_of(cls: type[em.Document]) -> IndexOptions:
    index = cls.__esmapper__.index
    assert index is not None
    return index


def test_the_defaults() -> None:
    index = options_of(model("Order"))
    assert index.name == "order"
    assert index.version == 1
    assert index.kind == "versioned"
    assert index.settings == {}
    assert index.id_fields == ()
    assert index.date_field is None
    assert index.max_age is None
    assert index.aliases == {}
    assert index.dynamic is False


@pytest.mark.parametrize(
    ("class_name", "index_name"),
    [
        ("Employee", "employee"),
        ("EmployeeReview", "employee_review"),
        ("OrderLine2", "order_line2"),
        ("HTTPLog", "http_log"),
        ("PageURLVisit", "page_url_visit"),
        ("ABTest", "ab_test"),
        ("Log2024Entry", "log2024_entry"),
    ],
)
def test_the_default_name_is_the_snake_case_class_name(class_name: str, index_name: str) -> None:
    assert options_of(model(class_name)).name == index_name


def test_declared_options_are_kept() -> None:
    index = options_of(Employee)
    assert index.name == "employees"
    assert index.version == 1
    assert index.settings == {"number_of_shards": 1, "number_of_replicas": 0}


def test_time_series_options() -> None:
    class Dated(em.Document, em.HasDates):
        class Index:
            kind = "monthly"
            date_field = "created_utc"
            max_age = dt.timedelta(days=90)

    index = options_of(Dated)
    assert (index.kind, index.date_field, index.max_age) == (
        "monthly",
        "created_utc",
        dt.timedelta(days=90),
    )


def test_a_time_series_model_needs_the_date_that_picks_each_partition() -> None:
    class Stamped(em.Document, em.HasDates):  # created_utc: the default date field
        class Index:
            kind = "daily"

    assert options_of(Stamped).kind == "daily"
    with pytest.raises(em.IndexConfigurationError, match=r"'created_utc' is not a field of Order"):
        model(kind="daily")  # no date at all
    with pytest.raises(em.IndexConfigurationError, match=r"date_field 'nope' is not a field"):
        model(kind="monthly", date_field="nope")
    with pytest.raises(em.IndexConfigurationError, match=r"'number' is not a datetime field"):
        model(kind="daily", date_field="number")


@pytest.mark.parametrize("declared", [int, str | int, list[str]])
def test_the_id_must_stay_a_string(declared: Any) -> None:
    namespace: dict[str, Any] = {"__annotations__": {"id": declared}}
    with pytest.raises(
        em.IndexConfigurationError, match=r"^Order\.id must be declared as a string"
    ):
        type("Order", (em.Document,), namespace)


@pytest.mark.parametrize(
    ("given", "lifetime"),
    [
        (dt.timedelta(minutes=5), dt.timedelta(minutes=5)),
        (300, dt.timedelta(seconds=300)),
        (0.5, dt.timedelta(milliseconds=500)),
        (True, dt.timedelta(minutes=5)),  # the lifetime of a per-call cache=True
        (False, None),
        (None, None),
    ],
)
def test_cache_is_a_lifetime_as_a_timedelta_or_seconds(given: Any, lifetime: Any) -> None:
    assert options_of(model(cache=given)).cache == lifetime


@pytest.mark.parametrize("given", [0, -5, float("nan"), "300", dt.timedelta(0)])
def test_cache_refuses_what_is_not_a_lifetime(given: Any) -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"^Order\.Index\.cache is how long"):
        model(cache=given)


def test_id_fields_name_attributes_and_become_a_tuple() -> None:
    assert options_of(model(id_fields=["tenant", "number"])).id_fields == ("tenant", "number")


def test_aliases_reach_the_field_catalog() -> None:
    assert Everything.__esmapper__.catalog.resolve("zip").path == "address.zip_code"


def test_an_unknown_option_is_refused_naming_it() -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"unknown option\(s\) shards") as caught:
        model(shards=1)
    assert str(caught.value).startswith("Order.Index:")


def test_index_configuration_error_is_not_the_builtin_index_error() -> None:
    with pytest.raises(em.IndexConfigurationError) as caught:
        model(kind="weekly")
    assert isinstance(caught.value, em.EsmapperError)
    assert not isinstance(caught.value, IndexError)


@pytest.mark.parametrize("name", ["", "Orders", "my orders", "_orders", "-orders", "a/b", "a*", 3])
def test_an_invalid_name_is_refused(name: Any) -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"Order\.Index\.name"):
        model(name=name)


@pytest.mark.parametrize("name", ["orders", "orders_2", "tenant-orders", "a.b", "0rders"])
def test_valid_names(name: str) -> None:
    assert options_of(model(name=name)).name == name


@pytest.mark.parametrize("kind", ["weekly", "Versioned", "", None])
def test_an_unknown_kind_is_refused(kind: Any) -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"Order\.Index\.kind"):
        model(kind=kind)


@pytest.mark.parametrize("kind", ["versioned", "plain", "daily", "monthly"])
def test_the_four_kinds(kind: str) -> None:
    assert options_of(model(kind=kind, date_field="happened")).kind == kind


@pytest.mark.parametrize("version", [0, -1, "2", 1.5, True, None])
def test_an_invalid_version_is_refused(version: Any) -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"Order\.Index\.version"):
        model(version=version)


def test_id_fields_naming_an_unknown_attribute_are_refused() -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"Order\.Index\.id_fields.*tenant_id"):
        model(id_fields=("tenant_id",))


def test_id_fields_given_as_one_string_are_refused() -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"Order\.Index\.id_fields.*'tenant'"):
        model(id_fields="tenant")


def test_a_time_series_max_age_must_be_a_timedelta() -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"max_age"):
        model(kind="daily", max_age=30)
