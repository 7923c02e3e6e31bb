"""Names Elasticsearch's built-in data-stream templates claim (``logs-*-*``,
``metrics-*-*``, ``synthetics-*-*``, ``traces-*-*``): a versioned or plain model, or an
index prefix, that would create such an index is refused before anything is sent; a
time-series model is not (its own template outranks the built-in ones). No server."""

from __future__ import annotations

import datetime as dt

import pytest

import esmapper as em
from esmapper.indexes import IndexSpec
from esmapper.indexes._data_streams import data_stream_pattern
from esmapper.indexes.timeseries import TEMPLATE_PRIORITY, template_body


def model(index_name: str, kind: str = "versioned") -> type:
    class Index:
        name = index_name
        version = 1

    Index.kind = kind  # type: ignore[attr-defined]
    return type("Thing", (em.Document, em.HasDates), {"Index": Index, "__module__": __name__})


def spec(index_name: str, prefix: str = "", kind: str = "versioned") -> IndexSpec:
    return IndexSpec(model(index_name, kind).__esmapper__, prefix)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("logs-app-v1", "logs-*-*"),
        ("metrics-a-b", "metrics-*-*"),
        ("synthetics-http-default", "synthetics-*-*"),
        ("traces-apm-default", "traces-*-*"),
        ("logs-v1-2026.03.10", "logs-*-*"),
        ("logs-v1", None),
        ("logs", None),
        ("mylogs-a-b", None),
        ("app-logs-a-b", None),
        ("t-1234abcd-logs-v1-2026.03.10", None),
    ],
)
def test_the_built_in_patterns(name: str, pattern: str | None) -> None:
    assert data_stream_pattern(name) == pattern


def test_a_versioned_model_whose_index_a_data_stream_template_claims_is_refused() -> None:
    with pytest.raises(em.IndexConfigurationError) as raised:
        spec("logs-app")
    message = str(raised.value)
    assert "'logs-app-v1'" in message and "'logs-*-*'" in message
    assert "creates data streams only" in message
    assert "index_prefix" in message and "Index.name = 'logs-app'" in message
    assert raised.value.index == "logs-app-v1"


def test_the_prefix_counts() -> None:
    assert spec("logs-app", prefix="myapp_").physical_name() == "myapp_logs-app-v1"
    with pytest.raises(em.IndexConfigurationError, match="'metrics-eu-app-v1'"):
        spec("app", prefix="metrics-eu-")


def test_a_plain_model_is_refused_too_and_a_versioned_logs_model_is_not() -> None:
    with pytest.raises(em.IndexConfigurationError, match="'synthetics-a-b'"):
        spec("synthetics-a-b", kind="plain")
    assert spec("logs").physical_name() == "logs-v1"  # one dash: not logs-*-*


def test_a_time_series_model_may_match_its_template_outranks_the_built_in_ones() -> None:
    daily = spec("logs", kind="daily")
    partition = daily.partition_name(dt.datetime(2026, 3, 10, tzinfo=dt.timezone.utc))
    assert data_stream_pattern(partition) == "logs-*-*"
    assert template_body(daily)["priority"] == TEMPLATE_PRIORITY
    assert TEMPLATE_PRIORITY > 500  # Elastic: higher than 500 for an overlapping pattern


def test_a_prefix_under_which_esmapper_s_own_indexes_would_match_is_refused() -> None:
    with pytest.raises(em.IndexConfigurationError) as raised:
        em.Mapper("http://127.0.0.1:1", index_prefix="logs-eu-")
    assert "'logs-eu-esmapper-locks'" in str(raised.value)
    assert "index_prefix that does not start with 'logs-'" in str(raised.value)
    em.Mapper("http://127.0.0.1:1", index_prefix="logs_eu_").close()


def test_a_mapper_refuses_such_a_model_when_it_registers_it() -> None:
    with pytest.raises(em.IndexConfigurationError, match="'traces-app-v1'"):
        em.Mapper("http://127.0.0.1:1", models=[model("traces-app")])
