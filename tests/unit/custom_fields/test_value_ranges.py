"""What a floating custom-field slot indexes: only what Elasticsearch stores finite."""

from __future__ import annotations

from typing import Any

import pytest

from esmapper.custom_fields.types import NOT_INDEXED, value_checker


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("float", 1e39),
        ("float", "1e39"),
        ("float", -3.5e38),
        ("float", 2**200),
        ("half_float", 65520),
        ("half_float", "-1e5"),
        ("double", 2**1100),
        ("double", "1e400"),
    ],
)
def test_a_value_beyond_the_slot_types_range_is_not_indexed(kind: str, value: Any) -> None:
    assert value_checker({"type": kind})(value) is NOT_INDEXED


@pytest.mark.parametrize(
    ("kind", "value", "indexed"),
    [
        ("float", 3.4e38, 3.4e38),
        ("float", -3.4028234663852886e38, -3.4028234663852886e38),
        ("float", "1.5", 1.5),
        ("float", 7, 7),
        ("half_float", 65504, 65504),
        ("double", 1e300, 1e300),
    ],
)
def test_a_value_within_the_range_is_indexed(kind: str, value: Any, indexed: Any) -> None:
    assert value_checker({"type": kind})(value) == indexed
