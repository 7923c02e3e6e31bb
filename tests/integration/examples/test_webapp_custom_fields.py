"""The directory's per-team custom fields: define one on the team's page, fill it in the
employee form, filter and sort by it in the team's list."""

from __future__ import annotations

import html
import re
from typing import Any

from flask.testing import FlaskClient

import esmapper as em
from examples.webapp.models import Employee, Team

from .conftest import make_employee

FORM = {
    "name": "Jane Roe",
    "email": "jane.roe@example.com",
    "title": "Staff Engineer",
    "department": "Engineering",
    "team": "platform",
    "age": "41",
    "skills": "python",
    "address.street": "1 Rue de la Paix",
    "address.city": "Lyon",
    "address.postcode": "69002",
    "address.country": "FR",
}


def text(response: Any) -> str:
    return html.unescape(response.get_data(as_text=True))


def names(page: str) -> list[str]:
    return re.findall(r">((?:Person \d\d)|(?:Jane Roe))</a>", page)


def test_define_fill_filter_and_sort(
    client: FlaskClient, team: Team, repo: em.Repository[Employee], mapper: em.Mapper
) -> None:
    added = client.post("/teams/platform/fields", data={"name": "Level", "type": "int"})
    assert added.status_code == 303
    page = text(client.get("/teams/platform/fields"))
    assert "The field Level was added to Platform." in page
    assert "idx.int-1" in page
    assert 'href="/teams/platform/fields"' in text(client.get("/teams"))

    # the form of a platform member shows the field; a value of the wrong type is refused
    form = text(client.get("/employees/new?team=platform"))
    assert 'name="cf.Level"' in form
    bad = client.post("/employees/new", data={**FORM, "cf.Level": "senior"})
    assert bad.status_code == 400
    assert "Level: expected a whole number, got 'senior'." in text(bad)
    created = client.post("/employees/new", data={**FORM, "cf.Level": "4"})
    assert created.status_code == 303
    jane_id = created.headers["Location"].rsplit("/", 1)[-1]
    assert 'Level</dt><dd class="custom">4' in text(client.get(f"/employees/{jane_id}"))
    repo.add(
        [make_employee(i, custom_fields={"Level": i}) for i in (1, 2, 3)]
        + [make_employee(5, team="mobile", custom_fields={"Level": 9})],
        consistency="wait",
    )

    # edit: the form shows the stored value and saves a new one
    edit = text(client.get(f"/employees/{jane_id}/edit"))
    assert 'name="cf.Level" type="text" value="4"' in edit
    version = re.search(r'name="version" value="([^"]+)"', edit)
    assert version is not None
    saved = client.post(
        f"/employees/{jane_id}/edit",
        data={**FORM, "cf.Level": "7", "version": version.group(1)},
    )
    assert saved.status_code == 303
    stored = repo.get(jane_id)
    assert stored is not None and stored.custom_fields == {"Level": 7}

    # the team's list: filter and sort by the team's field (tenant=platform)
    listing = text(client.get("/employees", query_string={"team": "platform", "sort": "-Level"}))
    assert names(listing)[:4] == ["Jane Roe", "Person 03", "Person 02", "Person 01"]
    assert '<td class="custom">7</td>' in listing
    filtered = text(client.get("/employees", query_string={"team": "platform", "q": "level:>=3"}))
    assert sorted(names(filtered)) == ["Jane Roe", "Person 03"]
    assert "Person 05" not in text(client.get("/employees", query_string={"team": "platform"}))
    # without a team the name is unknown: a 400 naming the field
    unknown = client.get("/employees", query_string={"q": "level:>=3"})
    assert unknown.status_code == 400 and "level" in text(unknown)

    # remove (soft delete): the name is free, the form no longer shows it
    assert client.post("/teams/platform/fields/Level/remove").status_code == 303
    assert 'name="cf.Level"' not in text(client.get(f"/employees/{jane_id}/edit"))
    assert client.post("/teams/platform/fields/Level/remove").status_code == 404


def test_bad_field_definitions_are_shown_on_the_page(client: FlaskClient, team: Team) -> None:
    empty = client.post("/teams/platform/fields", data={"name": "", "type": "int"})
    assert empty.status_code == 400 and "needs a name" in text(empty)
    kind = client.post("/teams/platform/fields", data={"name": "X", "type": "geo"})
    assert kind.status_code == 400 and "Choose one of" in text(kind)
    client.post("/teams/platform/fields", data={"name": "X", "type": "int"})
    clash = client.post("/teams/platform/fields", data={"name": "x", "type": "date"})
    assert clash.status_code == 400 and "already exists with type 'int'" in text(clash)
    assert client.get("/teams/nope/fields").status_code == 404


def test_an_unknown_team_is_said_whatever_its_spelling(client: FlaskClient, team: Team) -> None:
    for slug in ("nosuchteam", "a b", "Platform", "x" * 600):
        page = client.get("/employees", query_string={"team": slug})
        assert page.status_code == 400
        assert f"There is no team {slug!r}." in text(page)
        assert "/fields" not in text(page).split("<main>", 1)[1]  # no link to a 404
    known = client.get("/employees", query_string={"team": "platform"})
    assert known.status_code == 200 and "in Platform" in text(known)
