"""Per-team custom fields on employees (esmapper's tenant custom fields).

An employee's tenant key is its team (``Employee.Index.tenant_field = "team"``): each team
defines its own fields (``/teams/<slug>/fields``), the employee form shows the fields of
the employee's team, and the list, given ``?team=<slug>``, searches with ``tenant=<slug>``
so its filter box and column headers take the team's field names (``level:>=3``, sort by
``Level``). A team's fields share the index's slots with every other team's: the mapping
does not grow with the number of teams.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

import esmapper as em
from esmapper.contrib.flask import current_mapper
from examples.webapp.models import Employee, Team

__all__ = [
    "FIELD_TYPES",
    "apply_custom",
    "custom_form_names",
    "custom_values",
    "fields_bp",
    "team_fields",
]

#: The types a team may give its fields, with their labels.
FIELD_TYPES = {
    "string": "Text",
    "keyword": "Exact text",
    "int": "Whole number",
    "double": "Number",
    "bool": "Yes / no",
    "date": "Date",
}
_INTEGER = re.compile(r"^[+-]?\d{1,15}$")

fields_bp = Blueprint("fields", __name__)

Errors = dict[str, str]


def team_fields(team: str | None) -> list[em.CustomFieldDefinition]:
    """The active custom fields of ``team``, by display order then name (the field mapping
    is cached by esmapper; nothing is sent while it is fresh)."""
    if not team:
        return []
    mapping = current_mapper.custom_fields(Employee).get_field_mapping(team)
    return sorted(mapping.values(), key=lambda d: (d.display_order, d.name.lower()))


def custom_form_names(definitions: list[em.CustomFieldDefinition]) -> tuple[str, ...]:
    """The form field names of ``definitions`` (``cf.<name>``)."""
    return tuple(f"cf.{d.name}" for d in definitions)


def custom_values(
    employee: Employee, definitions: list[em.CustomFieldDefinition]
) -> dict[str, str]:
    """The form values showing ``employee``'s custom fields (names are case-insensitive)."""
    stored = {k.lower(): v for k, v in (employee.custom_fields or {}).items()}
    out = {}
    for d in definitions:
        value = stored.get(d.name.lower())
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, dt.datetime):
            text = value.date().isoformat()
        else:
            text = "" if value is None else str(value)
        out[f"cf.{d.name}"] = text
    return out


def _parse(kind: str, raw: str) -> object:
    """A form value as ``kind`` stores it; ``ValueError`` with what is expected."""
    if kind == "int":
        if not _INTEGER.match(raw):
            raise ValueError("a whole number")
        return int(raw)
    if kind == "double":
        try:
            return float(raw)
        except ValueError:
            raise ValueError("a number") from None
    if kind == "bool":
        if raw.lower() not in ("yes", "no", "true", "false"):
            raise ValueError("yes or no")
        return raw.lower() in ("yes", "true")
    if kind == "date":
        try:
            return dt.date.fromisoformat(raw).isoformat()
        except ValueError:
            raise ValueError("a date (YYYY-MM-DD)") from None
    return raw


def apply_custom(
    employee: Employee, values: Mapping[str, str], definitions: list[em.CustomFieldDefinition]
) -> Errors:
    """Copy the submitted custom fields into ``employee.custom_fields`` (an empty value
    removes the field); returns the fields whose value does not fit their type."""
    errors: Errors = {}
    current = dict(employee.custom_fields or {})
    lowered = {k.lower(): k for k in current}
    for d in definitions:
        key = f"cf.{d.name}"
        if key not in values:
            continue
        raw = values[key].strip()
        current.pop(lowered.get(d.name.lower(), d.name), None)
        if not raw:
            continue
        try:
            current[d.name] = _parse(d.index_type, raw)
        except ValueError as exc:
            errors[key] = f"{d.name}: expected {exc}, got {raw!r}."
    employee.custom_fields = current or None
    return errors


# -- the team's fields page --------------------------------------------------------------


def _team_or_404(slug: str) -> Team:
    repo = current_mapper.repository(Team)
    key = Team(company_id=current_app.config["COMPANY_ID"], slug=slug)
    try:
        team = repo.get(repo.compose_id(key))
    except (em.IdTooLongError, em.InvalidIdTermError, em.DocumentValidationError):
        team = None
    if team is None:
        abort(404)
    return team


@fields_bp.route("/teams/<slug>/fields", methods=["GET", "POST"])
def team_fields_page(slug: str) -> Response | tuple[str, int]:
    """A team's custom fields, and a form to add one."""
    team = _team_or_404(slug)
    fields = current_mapper.custom_fields(Employee)
    values: dict[str, str] = {"type": "string"}
    errors: Errors = {}
    if request.method == "POST":
        values = {k: (request.form.get(k) or "").strip() for k in ("name", "type")}
        if values["type"] not in FIELD_TYPES:
            errors["type"] = f"Choose one of: {', '.join(FIELD_TYPES.values())}."
        else:
            try:
                added = fields.add_field(slug, values["name"], values["type"])
            except em.DocumentValidationError as exc:
                errors["name" if exc.field == "name" else ""] = str(exc)
            else:
                flash(f"The field {added.name} was added to {team.name}.")
                return redirect(url_for(".team_fields_page", slug=slug), code=303)
    html = render_template(
        "teams/fields.html",
        team=team,
        fields=team_fields(slug),
        types=FIELD_TYPES,
        values=values,
        errors=errors,
    )
    return html, 400 if errors else 200


@fields_bp.post("/teams/<slug>/fields/<name>/remove")
def remove_team_field(slug: str, name: str) -> Response:
    """Soft delete: the name is free again; stored values stay in the employees."""
    _team_or_404(slug)
    try:
        current_mapper.custom_fields(Employee).remove_field(slug, name)
    except em.DocumentNotFoundError:
        abort(404)
    flash(f"The field {name} was removed.")
    return redirect(url_for(".team_fields_page", slug=slug), code=303)
