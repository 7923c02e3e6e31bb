"""Checked by ``mypy --strict`` in ``test_typing.py``; never imported by the tests.

It pins what type checkers see of a model (``dataclass_transform``): a keyword-only
constructor with the declared and the trait fields, typed attributes. Each
``# type: ignore[code]`` marks an error mypy must report: under ``--strict`` an ignore
that is no longer needed is itself an error.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from typing_extensions import assert_type

import esmapper as em


class Address(em.InnerDoc):
    city: str = ""


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    class Index:
        name = "employees"

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    age: int = em.field(em.Integer(), default=0)
    tags: list[str] = em.field(factory=list)
    address: Address | None = None


employee = Employee(
    id="e1",
    name="Ada",
    age=36,
    tags=["math"],
    address=Address(city="London"),
    created_utc=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    is_deleted=False,
    version="1:0",
    custom_fields={"tier": "gold"},
)
assert_type(employee.id, str | None)
assert_type(employee.created_utc, dt.datetime | None)
assert_type(employee.updated_utc, dt.datetime | None)
assert_type(employee.is_deleted, bool)
assert_type(employee.version, str | None)
assert_type(employee.custom_fields, dict[str, Any] | None)
assert_type(employee.name, str)
assert_type(employee.tags, list[str])
assert_type(employee.address, Address | None)
assert_type(employee.to_source(), dict[str, Any])
assert_type(Employee.from_hit({"_id": "e1", "_source": {}}), Employee)
employee.age = 37

Employee(None)  # type: ignore[call-arg]
Employee(nmae="Ada")  # type: ignore[call-arg]
Employee(age="36")  # type: ignore[arg-type]
Address(city=1)  # type: ignore[arg-type]
employee.is_deleted = "no"  # type: ignore[assignment]
employee.undeclared  # type: ignore[attr-defined]  # noqa: B018
