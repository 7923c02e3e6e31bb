"""``NaN`` and infinities in float fields are refused (JSON has neither: they would be stored
as null and read back as None)."""

from __future__ import annotations

import math

import pytest

import esmapper as em

BAD = [math.nan, math.inf, -math.inf]


class Point(em.InnerDoc):
    x: float = 0.0
    ys: list[float] = em.field(factory=list)


class Reading(em.Document):
    class Index:
        name = "readings"

    value: float = 0.0
    maybe: float | None = None
    series: list[float] = em.field(factory=list)
    at: Point | None = None
    points: list[Point] = em.field(factory=list)


@pytest.mark.parametrize("bad", BAD)
def test_construction_refuses_a_non_finite_float_naming_the_field(bad: float) -> None:
    with pytest.raises(em.DocumentValidationError, match=r"Reading\.value: expected a finite"):
        Reading(value=bad)
    with pytest.raises(em.DocumentValidationError) as raised:
        Reading(series=[1.0, bad])
    assert raised.value.field == "series"


@pytest.mark.parametrize("bad", BAD)
def test_assignment_refuses_it_and_keeps_the_value(bad: float) -> None:
    reading = Reading(value=1.5)
    with pytest.raises(em.DocumentValidationError) as raised:
        reading.maybe = bad
    assert raised.value.field == "maybe"
    assert "Reading.maybe" in str(raised.value)
    assert reading.maybe is None


def test_an_int_too_large_for_a_float_is_refused_too() -> None:
    with pytest.raises(em.DocumentValidationError, match="expected a finite number"):
        Reading(value=10**400)


def test_finite_numbers_are_accepted_and_ints_become_floats() -> None:
    reading = Reading(value=3, series=[1, 2.5, -0.0, 1e308])
    assert reading.value == 3.0 and type(reading.value) is float
    assert reading.series == [1.0, 2.5, -0.0, 1e308]


@pytest.mark.parametrize("bad", BAD)
def test_an_item_appended_in_place_is_refused_before_a_write(bad: float) -> None:
    reading = Reading(series=[1.0, 2.0])
    reading.series.append(bad)
    with pytest.raises(em.DocumentValidationError) as raised:
        Reading.__esmapper__.normalize(reading)
    assert raised.value.field == "series[2]"
    assert "Reading.series[2]: expected a finite number" in str(raised.value)


def test_embedded_objects_are_checked_inside_too() -> None:
    with pytest.raises(em.DocumentValidationError, match=r"Point\.x"):
        Reading(at={"x": math.nan})  # type: ignore[arg-type]
    reading = Reading(points=[Point(ys=[1.0])])
    reading.points[0].ys.append(math.inf)
    with pytest.raises(em.DocumentValidationError) as raised:
        Reading.__esmapper__.normalize(reading)
    assert raised.value.field == "points[0].ys[1]"


def test_finite_floats_whose_sum_overflows_are_accepted() -> None:
    reading = Reading(series=[1e308, 1e308])
    reading.series.append(1e308)  # the normalizer's fast check sums the items
    Reading.__esmapper__.normalize(reading)
    assert reading.series == [1e308] * 3
