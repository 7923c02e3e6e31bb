"""The example employee directory (examples/webapp), end to end over HTTP against the server.

Most tests drive the app with Flask's test client; one serves it on a real socket.
"""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from flask import Flask
from flask.testing import FlaskClient

import esmapper as em
from esmapper.migrations import MigrationResult
from examples.webapp import sample_data
from examples.webapp.migrations import DEFAULT_DEPARTMENT
from examples.webapp.models import Employee, Team
from examples.webapp.run import main as run_main
from examples.webapp.run import port_problem, serve_in_background

from .conftest import make_employee

ROOT = Path(__file__).resolve().parents[3]

FORM = {
    "name": "Jane Roe",
    "email": "jane.roe@example.com",
    "title": "Staff Engineer",
    "department": "Engineering",
    "team": "platform",
    "age": "41",
    "skills": "python, elasticsearch",
    "address.street": "1 Rue de la Paix",
    "address.city": "Lyon",
    "address.postcode": "69002",
    "address.country": "FR",
}


def text(response: Any) -> str:
    return html.unescape(response.get_data(as_text=True))


def names(page: str) -> list[str]:
    """The employee names linked from a list page, in display order."""
    return re.findall(r">(Person \d\d)</a>", page)


def hidden_version(page: str) -> str:
    match = re.search(r'name="version" value="([^"]+)"', page)
    assert match, "the form has no version field"
    return match.group(1)


def created_id(response: Any) -> str:
    assert response.status_code == 303, text(response)
    location: str = response.headers["Location"]
    assert location.startswith("/employees/")
    return location.rsplit("/", 1)[-1]


# -- list: filter, sort, pages -----------------------------------------------------------


def test_list_filters_sorts_and_pages(client: FlaskClient, employees: list[Employee]) -> None:
    first = client.get("/employees")
    assert first.status_code == 200
    page = text(first)
    assert "12 employees" in page
    assert names(page) == [f"Person {i:02d}" for i in range(1, 6)]  # PAGE_SIZE=5, by name
    assert 'href="/employees?page=2"' in page and 'href="/employees?page=3"' in page

    second = text(client.get("/employees?page=2"))
    assert names(second) == [f"Person {i:02d}" for i in range(6, 11)]
    last = text(client.get("/employees?page=3"))
    assert names(last) == ["Person 11", "Person 12"]
    assert 'rel="next"' not in last and 'rel="prev"' in last

    oldest_first = text(client.get("/employees?sort=-age"))
    assert names(oldest_first)[:2] == ["Person 12", "Person 11"]
    assert 'href="/employees?sort=age"' in oldest_first  # the Age header flips the order

    # The column header links sort ascending, then descending.
    assert 'href="/employees?sort=-name"' in page

    filtered = text(client.get("/employees", query_string={"q": "age:>=30 AND address.city:Lyon"}))
    assert "2 employees matching" in filtered
    assert sorted(names(filtered)) == ["Person 10", "Person 12"]

    limit = text(client.get("/employees?limit=2&page=6&sort=-age"))
    assert names(limit) == ["Person 02", "Person 01"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"q": "salary:>1000"}, ["Invalid filter", "salary", "at position 0"]),
        ({"q": "name:(jane"}, ["Invalid filter", "at position"]),
        ({"q": "age:>abc"}, ["Invalid filter", "age", "at position 5"]),
        ({"sort": "-salary"}, ["Invalid sort", "salary"]),
        ({"page": "x"}, ["Invalid paging", "page must be a whole number"]),
        ({"page": "5000"}, ["Invalid paging", "search_after"]),
        ({"q": "is_deleted:true"}, ["Invalid filter", "recycle bin", "is_deleted"]),
    ],
)
def test_an_invalid_list_request_is_a_400_with_a_message(
    client: FlaskClient, employees: list[Employee], args: dict[str, str], expected: list[str]
) -> None:
    response = client.get("/employees", query_string=args)
    assert response.status_code == 400
    page = text(response)
    assert 'class="problem"' in page
    for fragment in expected:
        assert fragment in page
    assert names(page) == []
    assert "soft_deletes" not in page and " id\n" not in page  # no internals
    # the filter box keeps what the user typed
    if "q" in args:
        assert f'value="{args["q"]}"' in page


# -- create and edit ---------------------------------------------------------------------


def test_create_redirects_to_the_new_employee(
    client: FlaskClient, repo: em.Repository[Employee], team: Team
) -> None:
    response = client.post("/employees/new", data=FORM)
    id = created_id(response)
    shown = client.get(f"/employees/{id}")
    assert shown.status_code == 200
    page = text(shown)
    assert "Jane Roe was added." in page and "Staff Engineer" in page
    assert ">Platform</a>" in page  # the team, found by its composed id

    stored = repo.get(id)
    assert stored is not None
    assert stored.age == 41 and stored.skills == ["python", "elasticsearch"]
    assert stored.address.city == "Lyon" and stored.created_utc is not None
    # searchable right after the redirect (the session wrote with consistency="wait")
    assert "Jane Roe" in text(client.get("/employees", query_string={"q": "name:jane"}))


def test_create_shows_validation_errors_on_the_form(
    client: FlaskClient, repo: em.Repository[Employee]
) -> None:
    bad_age = client.post("/employees/new", data={**FORM, "age": "forty"})
    assert bad_age.status_code == 400
    page = text(bad_age)
    assert 'id="error-age"' in page and "Enter the age as a whole number" in page
    assert "Employee.age" not in page  # user words, not the model's
    assert 'value="forty"' in page and 'value="Jane Roe"' in page  # the input is kept

    # every problem at once: refused values and business rules alike
    everything = client.post("/employees/new", data={**FORM, "age": "", "name": "", "email": "x"})
    assert everything.status_code == 400
    errors = dict(re.findall(r'class="error" id="error-([\w.]+)">([^<]*)<', text(everything)))
    assert errors == {
        "name": "A name is required.",
        "email": "'x' is not an e-mail address.",
        "age": "The age is required.",
    }

    bad_email = client.post("/employees/new", data={**FORM, "email": "not-an-email"})
    assert bad_email.status_code == 400
    assert 'id="error-email"' in text(bad_email)  # from Employee.validate(), at flush

    too_young = client.post("/employees/new", data={**FORM, "age": "12"})
    assert too_young.status_code == 400
    assert "between 16 and 100" in text(too_young)
    assert repo.count(soft_deletes="all", consistency="immediate") == 0


def test_edit_saves_and_bumps_the_version(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    form = text(client.get(f"/employees/{employee.id}/edit"))
    version = hidden_version(form)
    assert version == employee.version
    assert 'value="Person 01"' in form

    data = {**FORM, "name": "Person 01 Renamed", "version": version}
    response = client.post(f"/employees/{employee.id}/edit", data=data)
    assert response.status_code == 303
    assert response.headers["Location"] == f"/employees/{employee.id}"
    stored = repo.get(employee.id)
    assert stored is not None and stored.name == "Person 01 Renamed"
    assert stored.version != version
    assert "Person 01 Renamed was saved." in text(client.get(response.headers["Location"]))


def test_an_invalid_edit_writes_nothing(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    data = {**FORM, "name": "Changed", "age": "abc", "version": employee.version}
    response = client.post(f"/employees/{employee.id}/edit", data=data)
    assert response.status_code == 400
    assert 'id="error-age"' in text(response)
    assert hidden_version(text(response)) == employee.version
    stored = repo.get(employee.id)
    assert stored is not None and stored.name == "Person 01"
    assert stored.version == employee.version


def test_a_concurrent_edit_is_refused_with_the_current_version(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    seen = hidden_version(text(client.get(f"/employees/{employee.id}/edit")))

    # Someone else saves in between.
    other = repo.get(employee.id)
    assert other is not None
    other.title = "Changed by Bob"
    repo.save(other, consistency="wait")

    mine = {**FORM, "name": "Mine", "title": "Changed by Alice", "version": seen}
    response = client.post(f"/employees/{employee.id}/edit", data=mine)
    assert response.status_code == 409
    page = text(response)
    assert "changed by someone else" in page
    assert "Changed by Bob" in page and "Changed by Alice" in page  # both versions shown
    assert hidden_version(page) == other.version  # the form now edits the current version
    stored = repo.get(employee.id)
    assert stored is not None and stored.title == "Changed by Bob"  # not overwritten

    # Resubmitting against the current version is an informed save.
    again = client.post(f"/employees/{employee.id}/edit", data={**mine, "version": other.version})
    assert again.status_code == 303
    stored = repo.get(employee.id)
    assert stored is not None and stored.title == "Changed by Alice"


def test_a_conflict_during_the_write_is_refused_too(
    client: FlaskClient,
    repo: em.Repository[Employee],
    employees: list[Employee],
    es_client: Elasticsearch,
) -> None:
    """The stored version changes between the app's read and its write: Elasticsearch's
    version check refuses the write and the app shows the current version."""
    employee = employees[0]
    seen = hidden_version(text(client.get(f"/employees/{employee.id}/edit")))
    alias = repo.spec.alias

    sneaked: list[bool] = []

    def sneak_in(sender: type, **kwargs: Any) -> None:
        if not sneaked:
            sneaked.append(True)
            es_client.update(index=alias, id=employee.id, doc={"title": "Sneaky"}, refresh=True)

    mine = {**FORM, "title": "Mine", "version": seen}
    with em.signals.documents_changing.connected_to(sneak_in, sender=Employee):
        response = client.post(f"/employees/{employee.id}/edit", data=mine)
    assert response.status_code == 409
    assert "Sneaky" in text(response)
    stored = repo.get(employee.id, cache=False)
    assert stored is not None and stored.title == "Sneaky"


# -- soft delete, recycle bin ------------------------------------------------------------


def test_soft_delete_restore_and_purge(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    deleted = client.post(f"/employees/{employee.id}/delete")
    assert deleted.status_code == 303 and deleted.headers["Location"] == "/employees"
    listing = text(client.get("/employees"))
    assert "Person 01 was moved to the recycle bin." in listing
    assert "11 employees" in listing and "Person 01" not in names(listing)
    stored = repo.get(employee.id, soft_deletes="all")
    assert stored is not None and stored.is_deleted

    trash = text(client.get("/trash"))
    assert "1 deleted employee." in trash and names(trash) == ["Person 01"]
    shown = client.get(f"/employees/{employee.id}")
    assert shown.status_code == 200 and 'id="deleted"' in text(shown)

    restored = client.post(f"/trash/{employee.id}/restore")
    assert restored.status_code == 303 and restored.headers["Location"] == "/trash"
    assert "Person 01 was restored." in text(client.get("/trash"))
    assert "12 employees" in text(client.get("/employees"))

    client.post(f"/employees/{employee.id}/delete")
    purged = client.post(f"/trash/{employee.id}/purge")
    assert purged.status_code == 303
    assert "deleted for good" in text(client.get("/trash"))
    assert repo.get(employee.id, soft_deletes="all") is None  # a hard delete
    assert client.get(f"/employees/{employee.id}").status_code == 404
    assert client.post(f"/trash/{employee.id}/purge").status_code == 404


def test_only_deleted_employees_can_be_restored_or_purged(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    active = employees[1]
    assert client.post(f"/trash/{active.id}/purge").status_code == 404
    assert client.post(f"/trash/{active.id}/restore").status_code == 404
    assert repo.get(active.id) is not None


def test_empty_the_recycle_bin(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    for employee in employees[:3]:
        assert client.post(f"/employees/{employee.id}/delete").status_code == 303
    assert "3 deleted employees." in text(client.get("/trash"))
    response = client.post("/trash/empty")
    assert response.status_code == 303
    assert "3 employee(s) deleted for good" in text(client.get("/trash"))
    assert repo.count(soft_deletes="all", consistency="immediate") == 9


# -- teams: composite ids ----------------------------------------------------------------


def test_teams_use_composite_ids(
    client: FlaskClient, mapper: em.Mapper, employees: list[Employee]
) -> None:
    data = {"slug": "platform", "name": "Platform", "description": "Tools"}
    response = client.post("/teams", data=data)
    assert response.status_code == 303
    team = mapper.repository(Team).get("acme:platform")
    assert team is not None and team.name == "Platform"
    page = text(client.get("/teams"))
    assert "acme:platform" in page
    assert "<td>12</td>" in page  # head count from a terms aggregation

    duplicate = client.post("/teams", data=data)
    assert duplicate.status_code == 400
    assert "already exists" in text(duplicate)

    bad_slug = client.post("/teams", data={**data, "slug": "Not A Slug"})
    assert bad_slug.status_code == 400
    assert 'id="error-slug"' in text(bad_slug)


def test_an_unknown_employee_is_a_404(client: FlaskClient, employees: list[Employee]) -> None:
    for url in ("/employees/nope", "/employees/" + "x" * 600, "/no/such/page"):
        response = client.get(url)
        assert response.status_code == 404
        assert "<h1>Not found</h1>" in text(response) and "esmapper directory" in text(response)
    # an edit of an id that never existed: nothing to restore, it can be added as new
    gone = client.post("/employees/nope/edit", data=FORM)
    assert gone.status_code == 410
    assert "deleted for good" in text(gone) and 'id="restore-with-changes"' not in text(gone)


def test_the_sort_error_does_not_show_the_id_tiebreaker(
    client: FlaskClient, employees: list[Employee]
) -> None:
    page = text(client.get("/employees", query_string={"sort": "-salary"}))
    assert "<pre>-salary\n^</pre>" in page


def test_a_page_past_the_end_says_so(client: FlaskClient, employees: list[Employee]) -> None:
    page = text(client.get("/employees?page=9"))
    assert "Page 9 is past the end" in page and "No employee matches" not in page
    assert 'id="last-page" href="/employees?page=3"' in page or 'href="/employees?page=3"' in page


def test_saving_an_edit_of_a_deleted_employee_offers_restore_or_recreate(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    seen = hidden_version(text(client.get(f"/employees/{employee.id}/edit")))
    assert client.post(f"/employees/{employee.id}/delete").status_code == 303  # other tab
    mine = {**FORM, "name": "Person 01", "title": "Mine", "version": seen}
    response = client.post(f"/employees/{employee.id}/edit", data=mine)
    assert response.status_code == 409
    page = text(response)
    assert "moved to the recycle bin" in page and "not saved" in page
    assert "Not Found" not in page

    # "Restore it with my changes" posts the edit again, against the deleted version
    restore = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page))
    assert restore["restore"] == "1"
    again = client.post(f"/employees/{employee.id}/edit", data=restore)
    assert again.status_code == 303, text(again)
    stored = repo.get(employee.id)
    assert stored is not None and not stored.is_deleted and stored.title == "Mine"

    # deleted for good: it can be added again as a new employee
    client.post(f"/employees/{employee.id}/delete")
    client.post(f"/trash/{employee.id}/purge")
    gone = client.post(f"/employees/{employee.id}/edit", data={**mine, "version": "x"})
    assert gone.status_code == 410 and 'id="recreate"' in text(gone)
    created = client.post("/employees/new", data={**FORM, "name": "Person 01", "title": "Mine"})
    assert created.status_code == 303
    assert repo.count("title:mine", consistency="immediate") == 1


def test_editing_an_employee_of_the_recycle_bin_says_so(
    client: FlaskClient, employees: list[Employee]
) -> None:
    employee = employees[0]
    client.post(f"/employees/{employee.id}/delete")
    response = client.get(f"/employees/{employee.id}/edit")
    assert response.status_code == 303
    assert "restore it to edit it" in text(client.get(response.headers["Location"]))


def test_the_conflict_page_highlights_only_real_differences(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee], team: Team
) -> None:
    employee = employees[0]
    form = text(client.get(f"/employees/{employee.id}/edit"))
    seen = hidden_version(form)
    other = repo.get(employee.id)
    assert other is not None
    other.title = "Changed by Bob"
    repo.save(other, consistency="wait")
    values = dict(
        re.findall(r'<input id="f-([\w.]+)" name="[^"]+" type="\w+" value="([^"]*)">', form)
    )
    mine = {**values, "team": "platform", "age": "021", "city": "x", "version": seen}
    mine["address.city"] = "Paris"
    response = client.post(f"/employees/{employee.id}/edit", data=mine)
    assert response.status_code == 409
    changed = re.findall(r'class="changed" data-field="([\w.]+)"', text(response))
    assert changed == ["title", "address.city"]  # not age "021" (21), not team
    assert ">Platform</td>" in text(response)  # the team by name


# -- migrations and sample data ----------------------------------------------------------


def test_migrations_backfill_departments_and_normalize_emails(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    repo.add(
        [
            make_employee(1, department=None, email="  Person1@Example.COM "),
            make_employee(2, department=None, is_deleted=True),
            make_employee(3, department="Sales"),
        ],
        consistency="wait",
        validate=False,  # data from before the rules
    )
    assert mapper.migrate() is MigrationResult.SUCCESS
    stored = {e.name: e for e in repo.find(soft_deletes="all", sort="name", consistency="wait")}
    assert stored["Person 01"].department == DEFAULT_DEPARTMENT
    assert stored["Person 01"].email == "person1@example.com"
    assert stored["Person 02"].department == DEFAULT_DEPARTMENT  # in the recycle bin too
    assert stored["Person 03"].department == "Sales"


def test_sample_data_loads_through_one_session(mapper: em.Mapper) -> None:
    people = sample_data.load(mapper, n=12)
    assert len(people) == 12 and all(p.id for p in people)
    assert mapper.repository(Employee).count() == 12
    assert mapper.repository(Team).count(consistency="immediate") == len(sample_data.TEAMS)
    sample_data.load(mapper, n=3)  # existing teams are kept, not added twice
    assert mapper.repository(Employee).count() == 15


# -- a real socket -----------------------------------------------------------------------


@pytest.fixture
def served(app: Flask) -> Iterator[str]:
    with serve_in_background(app) as server:
        yield server.url


def test_the_app_on_a_real_socket(
    served: str, employees: list[Employee], repo: em.Repository[Employee], team: Team
) -> None:
    with urllib.request.urlopen(f"{served}/employees?sort=-age", timeout=10) as response:
        assert response.status == 200
        assert "text/html" in response.headers["Content-Type"]
        assert names(html.unescape(response.read().decode()))[0] == "Person 12"

    # a browser: keeps the session cookie (flash messages), follows the 303 with a GET
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    body = urllib.parse.urlencode(FORM).encode()
    request = urllib.request.Request(f"{served}/employees/new", data=body, method="POST")
    with browser.open(request, timeout=10) as response:
        assert response.status == 200
        assert "/employees/" in response.url
        assert "Jane Roe was added." in html.unescape(response.read().decode())
    assert repo.count("name:jane") == 1

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{served}/employees?q=salary:1", timeout=10)
    assert caught.value.code == 400
    assert "Invalid filter" in html.unescape(caught.value.read().decode())
    caught.value.close()


def test_deleting_for_good_asks_for_confirmation_first(
    client: FlaskClient, repo: em.Repository[Employee], employees: list[Employee]
) -> None:
    employee = employees[0]
    client.post(f"/employees/{employee.id}/delete")
    ask = client.get(f"/trash/{employee.id}/purge")
    assert ask.status_code == 200 and "cannot be restored" in text(ask)
    assert "1 employee in the recycle bin" in text(client.get("/trash/empty"))
    assert repo.get(employee.id, soft_deletes="all") is not None  # asking deleted nothing


def test_a_busy_port_is_reported_before_starting_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        problem = port_problem("127.0.0.1", port)
        assert problem is not None and "already in use" in problem
        assert "--port" in problem and "PORT=" in problem
        assert run_main(["--port", str(port)]) == 1
    out, err = capsys.readouterr()
    assert f"port {port} on 127.0.0.1 is already in use" in err
    assert "embedded" not in out and "migrations" not in out  # nothing was started
    assert port_problem("127.0.0.1", port) is None


def test_serving_with_the_server_down_is_one_error_line(tmp_path: Path) -> None:
    """``python -m examples.webapp`` against a URL nothing listens on: one ``error:`` line
    naming the URL and what to check, exit 1, no traceback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    env = {**os.environ, "ESMAPPER_URL": down}
    done = subprocess.run(
        [sys.executable, "-m", "examples.webapp", "--port", port],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot reach Elasticsearch at {down}: the connection")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
