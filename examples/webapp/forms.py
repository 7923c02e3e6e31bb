"""Between HTML forms and models: read a submitted form, copy it into a document.

Values are assigned attribute by attribute and the business rules are checked with
``Employee.problems()``, so a form shows every bad field at once, in words for the user;
``Employee.validate`` runs again when the session flushes (the last word before writing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import esmapper as em
from examples.webapp.models import Address, Employee, Team

__all__ = [
    "ADDRESS_FIELDS",
    "EMPLOYEE_FORM",
    "LABELS",
    "EMPLOYEE_FIELDS",
    "TEAM_FIELDS",
    "Errors",
    "apply_employee",
    "apply_team",
    "employee_values",
    "error_for",
    "read_form",
    "user_message",
]

#: The form fields of an employee, in display order (address fields are prefixed).
EMPLOYEE_FIELDS = ("name", "email", "title", "department", "team", "age", "skills")
ADDRESS_FIELDS = ("street", "city", "postcode", "country")
TEAM_FIELDS = ("slug", "name", "description")
#: Every field of the employee form.
EMPLOYEE_FORM = EMPLOYEE_FIELDS + tuple(f"address.{name}" for name in ADDRESS_FIELDS)

#: The label of each employee form field.
LABELS = {
    "name": "Name",
    "email": "E-mail",
    "title": "Title",
    "department": "Department",
    "team": "Team",
    "age": "Age",
    "skills": "Skills",
    "address.street": "Street",
    "address.city": "City",
    "address.postcode": "Postcode",
    "address.country": "Country",
}

#: Error messages by form field name ("" for the form as a whole).
Errors = dict[str, str]

_INTEGER = re.compile(r"^[+-]?\d{1,9}$")


def read_form(form: Mapping[str, str], names: tuple[str, ...]) -> dict[str, str]:
    """The submitted values of ``names`` (stripped; a missing field is ``""``)."""
    return {name: (form.get(name) or "").strip() for name in names}


def employee_values(employee: Employee) -> dict[str, str]:
    """The form values showing ``employee`` (the inverse of :func:`apply_employee`)."""
    return {
        "name": employee.name,
        "email": employee.email,
        "title": employee.title,
        "department": employee.department or "",
        "team": employee.team,
        "age": str(employee.age),
        "skills": ", ".join(employee.skills),
        **{f"address.{name}": getattr(employee.address, name) for name in ADDRESS_FIELDS},
    }


def _assign(target: Any, attribute: str, value: Any, errors: Errors, key: str) -> None:
    try:
        setattr(target, attribute, value)
    except em.DocumentValidationError as exc:
        errors[key] = user_message(exc)


def user_message(exc: em.DocumentError) -> str:
    """The message of ``exc`` without the ``Model.field:`` prefix of the model's checks."""
    message = str(exc)
    field = getattr(exc, "field", None)
    if field:
        prefix = re.match(r"^\w+\.[\w.]+: ", message)
        if prefix:
            message = message[prefix.end() :]
    return message[:1].upper() + message[1:]


def apply_employee(employee: Employee, values: Mapping[str, str]) -> Errors:
    """Copy form ``values`` into ``employee``; returns every problem at once, by field, in
    words for the user: the values the model refused and the broken business rules of
    :meth:`Employee.problems` (which ``validate()`` would only report one at a time).

    ``age`` must be a whole number; an empty ``department`` means none; ``skills`` are
    comma-separated.
    """
    errors: Errors = {}
    for name in ("name", "email", "title", "team"):
        _assign(employee, name, values.get(name, ""), errors, name)
    _assign(employee, "department", values.get("department") or None, errors, "department")
    raw_age = values.get("age", "")
    if not raw_age:
        errors["age"] = "The age is required."
    elif not _INTEGER.match(raw_age):
        errors["age"] = f"Enter the age as a whole number, e.g. 42 (not {raw_age!r})."
    else:
        _assign(employee, "age", int(raw_age), errors, "age")
    skills = [s.strip() for s in values.get("skills", "").split(",") if s.strip()]
    _assign(employee, "skills", skills, errors, "skills")
    address = {name: values.get(f"address.{name}", "") for name in ADDRESS_FIELDS}
    _assign(employee, "address", Address(**address), errors, "address")
    for field, message in employee.problems().items():
        errors.setdefault(field, message)
    return errors


def apply_team(team: Team, values: Mapping[str, str]) -> Errors:
    """Copy form ``values`` into ``team``; returns the fields the model refused."""
    errors: Errors = {}
    for name in TEAM_FIELDS:
        _assign(team, name, values.get(name, ""), errors, name)
    return errors


def error_for(exc: em.DocumentError) -> Errors:
    """The form errors of a failed write: on its field when it names one."""
    field = getattr(exc, "field", None)
    return {field or "": user_message(exc)}
