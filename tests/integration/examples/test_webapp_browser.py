"""The example web application in a real browser (headless Chromium driven by Selenium).

The app is served on a real port by a thread, against the test server with this test's own
index prefix. Every page visited is photographed into ``build/screenshots/`` (gitignored),
on every run. The browser and the helpers are :mod:`.browser`'s (shared with the Django
example's tests).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

import esmapper as em
from examples.webapp.app import create_app
from examples.webapp.models import Address, Employee, Team
from examples.webapp.run import serve_in_background
from examples.webapp.workers import Workers

from .browser import (
    PNG_MAGIC,
    SCREENSHOTS,
    WRITTEN,
    By,
    Select,
    WebDriver,
    click,
    click_link,
    fill,
    heading,
    shot,
    wait_text,
    workers_seen,
)
from .conftest import make_employee

FORM = {
    "name": "Jane Roe",
    "email": "jane.roe@example.com",
    "title": "Staff Engineer",
    "department": "Engineering",
    "age": "41",
    "skills": "python, elasticsearch",
    "address.street": "1 Rue de la Paix",
    "address.city": "Lyon",
    "address.postcode": "69002",
    "address.country": "FR",
}


@pytest.fixture
def app(mapper: em.Mapper) -> Flask:
    return create_app(mapper, SECRET_KEY="test", PAGE_SIZE=5)


@pytest.fixture
def url(app: Flask, driver: WebDriver) -> Iterator[str]:
    with serve_in_background(app) as server:
        yield server.url
    # one tab, no cookies left for the next test
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.delete_all_cookies()


# -- helpers -----------------------------------------------------------------------------


def names(driver: WebDriver) -> list[str]:
    """The names in the list's table, in display order."""
    cells = driver.find_elements(By.CSS_SELECTOR, "tbody tr td:first-child a")
    return [cell.text for cell in cells]


def summary(driver: WebDriver) -> str:
    return driver.find_element(By.ID, "summary").text


def submit_filter(driver: WebDriver, query: str) -> None:
    box = driver.find_element(By.NAME, "q")
    box.clear()
    box.send_keys(query)
    click(driver, "form.toolbar button[type=submit]")


def changed_rows(driver: WebDriver) -> list[str]:
    rows = driver.find_elements(By.CSS_SELECTOR, "#comparison tr.changed")
    return [row.get_attribute("data-field") or "" for row in rows]


# -- the tests ---------------------------------------------------------------------------


def test_list_filter_sort_and_pages(
    driver: WebDriver, url: str, employees: list[Employee], team: Team
) -> None:
    driver.get(url)
    heading(driver, "Employees")
    wait_text(driver, "#summary", "12 employees")
    assert names(driver) == [f"Person {i:02d}" for i in range(1, 6)]
    assert "Platform" in driver.find_element(By.CSS_SELECTOR, "tbody").text  # team by name
    shot(driver, "list")

    click_link(driver, "Age")  # ascending, then descending
    wait_text(driver, "thead", "Age ▲")
    click_link(driver, "Age ▲")
    wait_text(driver, "thead", "Age ▼")
    assert names(driver)[:2] == ["Person 12", "Person 11"]

    submit_filter(driver, "address.city:Lyon")
    wait_text(driver, "#summary", "6 employees matching address.city:Lyon")
    click_link(driver, "2")
    wait_text(driver, ".pager .current", "2")
    assert names(driver) == ["Person 02"]  # still by age descending, 6th of 6
    shot(driver, "list-filtered")

    driver.get(f"{url}/employees?page=9")
    wait_text(driver, "#summary", "Page 9 is past the end")
    assert "No employee matches" not in driver.page_source
    shot(driver, "list-past-the-end")
    click(driver, "#last-page")
    wait_text(driver, ".pager .current", "3")

    submit_filter(driver, "salary:>1000")
    wait_text(driver, ".problem", "Invalid filter")
    shot(driver, "list-invalid-filter")
    submit_filter(driver, "is_deleted:true")
    problem = wait_text(driver, ".problem", "recycle bin").text
    assert "Invalid filter" in problem and "paging" not in problem


def test_create_with_every_error_shown_then_edit(
    driver: WebDriver, url: str, team: Team, repo: em.Repository[Employee]
) -> None:
    driver.get(f"{url}/employees")
    click_link(driver, "+ New employee")
    heading(driver, "New employee")
    fill(driver, {"email": "nope", "age": ""})
    click(driver, "form button[type=submit]")
    wait_text(driver, "#error-age", "The age is required.")
    errors = {
        e.get_attribute("id"): e.text for e in driver.find_elements(By.CSS_SELECTOR, ".error")
    }
    assert errors == {
        "error-name": "A name is required.",
        "error-email": "'nope' is not an e-mail address.",
        "error-age": "The age is required.",
    }
    shot(driver, "form-errors")

    fill(driver, FORM)
    Select(driver.find_element(By.NAME, "team")).select_by_visible_text("Platform")
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Jane Roe was added.")
    assert driver.find_element(By.LINK_TEXT, "Platform")  # the team by name
    shot(driver, "employee")

    click_link(driver, "Edit")
    heading(driver, "Edit Jane Roe")
    shot(driver, "form-edit")
    fill(driver, {"title": "Principal Engineer"})
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Jane Roe was saved.")
    assert "Principal Engineer" in driver.find_element(By.TAG_NAME, "dl").text
    assert repo.count("title:principal", consistency="immediate") == 1


def test_the_two_tab_edit_conflict(
    driver: WebDriver, url: str, employees: list[Employee], repo: em.Repository[Employee]
) -> None:
    employee = employees[0]
    edit = f"{url}/employees/{employee.id}/edit"
    driver.get(edit)
    heading(driver, "Edit Person 01")
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(edit)
    heading(driver, "Edit Person 01")
    second = driver.current_window_handle

    driver.switch_to.window(first)  # tab 1 saves a new title
    fill(driver, {"title": "Changed in tab 1"})
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Person 01 was saved.")

    driver.switch_to.window(second)  # tab 2, opened before, saves another city
    fill(driver, {"address.city": "Paris"})
    click(driver, "form button[type=submit]")
    heading(driver, "Edit conflict: Person 01")
    # tab 2 left the title as it was: it differs from the current one; so does its city
    assert changed_rows(driver) == ["title", "address.city"]
    assert "Changed in tab 1" in driver.find_element(By.ID, "comparison").text
    shot(driver, "edit-conflict")

    # the form below edits the current version: saving it now is an informed save
    fill(driver, {"address.city": "Paris"})
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Person 01 was saved.")
    stored = repo.get(employee.id, cache=False)
    assert stored is not None
    assert (stored.title, stored.address.city) == ("Changed in tab 1", "Paris")


def test_saving_an_employee_deleted_in_another_tab(
    driver: WebDriver, url: str, employees: list[Employee], repo: em.Repository[Employee]
) -> None:
    employee = employees[0]
    driver.get(f"{url}/employees/{employee.id}/edit")
    heading(driver, "Edit Person 01")
    editing = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{url}/employees/{employee.id}")
    click(driver, "form[action$='/delete'] button")
    wait_text(driver, ".flash", "Person 01 was moved to the recycle bin.")

    driver.switch_to.window(editing)
    fill(driver, {"title": "Saved after all"})
    click(driver, "form button[type=submit]")
    wait_text(driver, "#gone", "moved to the recycle bin")
    assert "Not Found" not in driver.page_source
    shot(driver, "edit-of-a-deleted-employee")
    click(driver, "#restore-with-changes")
    wait_text(driver, ".flash", "Person 01 was saved.")
    stored = repo.get(employee.id, cache=False)
    assert stored is not None and not stored.is_deleted and stored.title == "Saved after all"


def test_the_recycle_bin(
    driver: WebDriver, url: str, employees: list[Employee], repo: em.Repository[Employee]
) -> None:
    for employee in employees[:3]:
        driver.get(f"{url}/employees/{employee.id}")
        click(driver, "form[action$='/delete'] button")
        wait_text(driver, ".flash", "moved to the recycle bin")
    click_link(driver, "Recycle bin")
    wait_text(driver, "#summary", "3 deleted employees.")
    shot(driver, "recycle-bin")

    restore = driver.find_element(By.XPATH, "//tr[td/a='Person 01']//button[.='Restore']")
    restore.click()
    wait_text(driver, ".flash", "Person 01 was restored.")
    wait_text(driver, "#summary", "2 deleted employees.")

    # "Delete for good" asks first; cancelling deletes nothing
    driver.find_element(By.XPATH, "//tr[td/a='Person 02']//button[@class='purge']").click()
    wait_text(driver, "#confirm", "Person 02")
    shot(driver, "confirm-delete-for-good")
    click(driver, "#cancel")
    wait_text(driver, "#summary", "2 deleted employees.")
    driver.find_element(By.XPATH, "//tr[td/a='Person 02']//button[@class='purge']").click()
    wait_text(driver, "#confirm", "Person 02")
    click(driver, "#confirm-delete")
    wait_text(driver, ".flash", "Person 02 was deleted for good.")
    assert repo.get(employees[1].id, soft_deletes="all") is None

    click(driver, "#empty-trash")
    wait_text(driver, "#confirm", "The 1 employee in the recycle bin")
    shot(driver, "confirm-empty-the-recycle-bin")
    click(driver, "#confirm-delete")
    wait_text(driver, ".flash", "The recycle bin was emptied (1 employee(s)")
    wait_text(driver, "tbody", "The recycle bin is empty.")
    assert repo.count(soft_deletes="all", consistency="immediate") == 10


def test_custom_fields(driver: WebDriver, url: str, employees: list[Employee], team: Team) -> None:
    driver.get(f"{url}/teams")
    heading(driver, "Teams")
    shot(driver, "teams")
    click_link(driver, "fields")
    heading(driver, "Custom fields of Platform")
    fill(driver, {"name": "Level"})
    Select(driver.find_element(By.NAME, "type")).select_by_visible_text("Whole number")
    click(driver, "form:not(.inline) button[type=submit]")
    wait_text(driver, ".flash", "The field Level was added to Platform.")
    shot(driver, "team-fields")

    for level, employee in zip(("5", "2", "4"), employees[:3], strict=True):
        driver.get(f"{url}/employees/{employee.id}/edit")
        heading(driver, f"Edit {employee.name}")
        assert "belong to the team Platform" in driver.page_source
        fill(driver, {"cf.Level": level})
        click(driver, "form button[type=submit]")
        wait_text(driver, ".flash", "was saved.")
    shot(driver, "employee-with-custom-fields")

    driver.get(f"{url}/employees")
    Select(driver.find_element(By.NAME, "team")).select_by_visible_text("Platform")
    submit_filter(driver, "level:>=3")
    wait_text(driver, "#summary", "2 employees matching level:>=3 in Platform")
    click_link(driver, "Level")
    wait_text(driver, "thead", "Level ▲")
    assert names(driver) == ["Person 03", "Person 01"]  # level 4, then 5
    shot(driver, "list-by-custom-field")


def test_a_custom_field_filter_without_a_team_says_which_team_to_pick(
    driver: WebDriver, url: str, employees: list[Employee], team: Team, mapper: em.Mapper
) -> None:
    mapper.custom_fields(Employee).add_field("platform", "Level", "int")
    driver.get(f"{url}/employees")
    Select(driver.find_element(By.NAME, "team")).select_by_visible_text("All teams")
    submit_filter(driver, "level:>=3")
    hint = wait_text(driver, ".problem .hint", "custom field of Platform").text
    assert hint == "'level' is a custom field of Platform: pick that team in the list to " \
        "filter or sort by it."  # fmt: skip
    shot(driver, "list-custom-field-without-a-team")
    Select(driver.find_element(By.NAME, "team")).select_by_visible_text("Platform")
    click(driver, "form.toolbar button[type=submit]")
    wait_text(driver, "#summary", "0 employees matching level:>=3 in Platform")


def test_an_unknown_team_is_said_not_linked(
    driver: WebDriver, url: str, employees: list[Employee], team: Team
) -> None:
    driver.get(f"{url}/employees?team=nosuchteam")
    problem = wait_text(driver, ".problem", "There is no team 'nosuchteam'").text
    assert "Pick a team in the list, or All teams." in problem
    assert driver.find_elements(By.CSS_SELECTOR, "a[href*='/teams/nosuchteam']") == []
    shot(driver, "list-unknown-team")


def test_a_position_is_said_once(driver: WebDriver, url: str, employees: list[Employee]) -> None:
    driver.get(f"{url}/employees")
    submit_filter(driver, ")")
    problem = wait_text(driver, ".problem", "Invalid filter").text
    assert problem.count("at position 0") == 1, problem
    assert problem.startswith("Invalid filter: Syntax error (unbalanced")
    shot(driver, "list-syntax-error")


def _cells(driver: WebDriver, name: str) -> list[str]:
    """The cells of ``name``'s row in the list."""
    row = driver.find_element(By.XPATH, f"//tbody/tr[td/a='{name}']")
    return [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]


def _details(driver: WebDriver) -> dict[str, str]:
    """The detail page's rows, label to value."""
    terms = driver.find_elements(By.CSS_SELECTOR, "dl dt")
    values = driver.find_elements(By.CSS_SELECTOR, "dl dd")
    return {t.text: v.text for t, v in zip(terms, values, strict=True)}


def test_empty_and_yes_no_values_read_the_same_on_every_page(
    driver: WebDriver, url: str, team: Team, mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    """One rule: an empty value is "—" in the list and on the detail page; a yes/no field
    reads yes or no on both (it read True/False in the list and yes on the detail page)."""
    mapper.custom_fields(Employee).add_field("platform", "Remote", "bool")
    full, empty, no = repo.add(
        [
            make_employee(1, custom_fields={"Remote": True}),
            make_employee(2, title="", department=None, address=Address(), custom_fields=None),
            make_employee(3, custom_fields={"Remote": False}),
        ],
        consistency="wait",
    )
    driver.get(f"{url}/employees?team=platform")
    wait_text(driver, "#summary", "3 employees in Platform")
    headers = [th.text.strip() for th in driver.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers[-1] == "Remote"
    assert _cells(driver, full.name)[-1] == "yes"
    assert _cells(driver, no.name)[-1] == "no"
    blank = _cells(driver, empty.name)
    by_header = dict(zip(headers, blank, strict=True))
    assert (by_header["Title"], by_header["Department"], by_header["City"], by_header["Remote"]) \
        == ("—", "—", "—", "—")  # fmt: skip
    shot(driver, "list-empty-and-yes-no-values")

    driver.get(f"{url}/employees/{full.id}")
    heading(driver, full.name)
    assert _details(driver)["Remote"] == "yes"
    driver.get(f"{url}/employees/{empty.id}")
    heading(driver, empty.name)
    details = _details(driver)
    assert (details["Title"], details["Department"], details["Skills"], details["Remote"]) == (
        "—",
        "—",
        "—",
        "—",
    )
    assert details["Address"] == "—"
    shot(driver, "employee-empty-values")


def test_at_500_pixels_wide_new_employee_is_on_screen(
    driver: WebDriver, url: str, employees: list[Employee], team: Team
) -> None:
    size = driver.get_window_size()
    driver.set_window_size(500, 900)
    try:
        driver.get(f"{url}/employees")
        wait_text(driver, "#summary", "12 employees")
        shot(driver, "list-500px")
        viewport = driver.execute_script("return document.documentElement.clientWidth")
        assert viewport <= 500
        box = driver.execute_script(
            "const r = document.getElementById('new-employee').getBoundingClientRect();"
            "return [r.left, r.right, r.top, r.bottom];"
        )
        left, right, top, bottom = box
        assert 0 <= left < right <= viewport, (box, viewport)
        assert 0 <= top < bottom <= driver.execute_script("return window.innerHeight"), box
        # the page itself does not scroll sideways (the table scrolls in its box)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= viewport, (width, viewport)
        click(driver, "#new-employee")
        heading(driver, "New employee")
        shot(driver, "form-500px")
    finally:
        driver.set_window_size(size["width"], size["height"])


def test_unknown_pages_are_a_styled_404(
    driver: WebDriver, url: str, employees: list[Employee]
) -> None:
    for path in ("/employees/nope", "/no/such/page", "/trash/nope/purge"):
        driver.get(url + path)
        heading(driver, "Not found")
        assert driver.find_element(By.CSS_SELECTOR, "header .brand").text == "esmapper directory"
    shot(driver, "not-found")


def test_every_confirmation_shows_whichever_worker_serves_the_next_page(
    driver: WebDriver, mapper: em.Mapper, es_url: str, index_prefix: str, redis_url: str
) -> None:
    """Two worker processes behind one port, as the demo serves them: each request is a
    new connection the kernel gives to either worker, so the page after a create, an edit
    or a delete is often served by the worker that did not set its flash message."""
    mapper.configure_indexes()
    env = {"ESMAPPER_URL": es_url, "ESMAPPER_INDEX_PREFIX": index_prefix}
    workers_seen(driver)  # forget earlier tests' answers
    with Workers(2, "127.0.0.1", 0, {**env, "ESMAPPER_REDIS_URL": redis_url}) as workers:
        for n in range(4):
            name = f"Worker Test {n}"
            driver.get(f"{workers.url}/employees/new")
            heading(driver, "New employee")
            fill(driver, {**FORM, "name": name, "email": f"w{n}@example.com"})
            click(driver, "form button[type=submit]")
            wait_text(driver, ".flash", f"{name} was added.")
            click_link(driver, "Edit")
            heading(driver, f"Edit {name}")
            fill(driver, {"title": f"Title {n}"})
            click(driver, "form button[type=submit]")
            wait_text(driver, ".flash", f"{name} was saved.")
            click(driver, "form[action$='/delete'] button")
            wait_text(driver, ".flash", f"{name} was moved to the recycle bin.")
        served_by = workers_seen(driver)
    assert len(served_by) == 2, served_by  # both workers served these pages


def test_screenshots_are_written_on_every_run(
    driver: WebDriver, url: str, employees: list[Employee]
) -> None:
    pages = {
        "page-list": "/employees",
        "page-new-employee": "/employees/new",
        "page-teams": "/teams",
        "page-recycle-bin": "/trash",
        "page-not-found": "/nope",
    }
    for name, path in pages.items():
        driver.get(url + path)
        wait_text(driver, "header", "Recycle bin")
        shot(driver, name)
    assert {SCREENSHOTS / f"{name}.png" for name in pages} <= WRITTEN
    for written in sorted(WRITTEN):
        data = written.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000, path
