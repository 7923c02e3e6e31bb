"""The Django contacts site in a real browser (headless Chromium, :mod:`.browser`), served by
two worker processes sharing the embedded Redis, as ``python -m examples.django_contacts``
serves it: the pages after a create, an edit or a delete land on either worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import esmapper as em
from examples.contacts_api.models import Contact, build_mapper
from examples.django_contacts.workers import Workers

from .browser import By, Select, WebDriver, click, fill, heading, shot, wait_text, workers_seen


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with build_mapper(es_url, index_prefix=index_prefix) as built:
        built.configure_indexes()
        yield built


@pytest.fixture
def url(
    driver: WebDriver, mapper: em.Mapper, es_url: str, index_prefix: str, redis_url: str
) -> Iterator[str]:
    env = {"ESMAPPER_URL": es_url, "ESMAPPER_INDEX_PREFIX": index_prefix}
    with Workers(2, "127.0.0.1", 0, {**env, "ESMAPPER_REDIS_URL": redis_url}) as workers:
        workers_seen(driver)  # forget earlier tests' answers
        yield workers.url
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.delete_all_cookies()


def names(driver: WebDriver) -> list[str]:
    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "tbody tr td:first-child")]


def test_create_list_filter_edit_delete_and_restore(
    driver: WebDriver, url: str, mapper: em.Mapper
) -> None:
    driver.get(f"{url}/companies/acme/fields")
    heading(driver, "Fields of acme")
    fill(driver, {"name": "level"})
    Select(driver.find_element(By.NAME, "type")).select_by_visible_text("Whole number")
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "acme has a new field: level.")
    wait_text(driver, "#fields", "level (int)")
    shot(driver, "django-fields")

    for name, level in (("Ada Lovelace", "5"), ("Bob Marley", "2")):
        driver.get(f"{url}/contacts/new?company=acme")
        heading(driver, "New contact")
        fill(driver, {"name": name, "email": "", "tags": "vip", "custom.level": level})
        click(driver, "form button[type=submit]")
        wait_text(driver, ".flash", f"{name} was saved.")
    wait_text(driver, "#summary", "2 contacts")
    assert names(driver) == ["Ada Lovelace", "Bob Marley"]
    assert "level: 5" in driver.find_element(By.CSS_SELECTOR, "tbody").text
    shot(driver, "django-list")

    fill(driver, {"q": "level:>=3", "company": "acme"})  # a custom field, by the company's name
    click(driver, "form.toolbar button[type=submit]")
    wait_text(driver, "#summary", "1 contact matching level:>=3")
    assert names(driver) == ["Ada Lovelace"]
    fill(driver, {"q": "salary:>3", "company": ""})
    click(driver, "form.toolbar button[type=submit]")
    wait_text(driver, ".problem", "Invalid filter")
    shot(driver, "django-list-invalid-filter")

    driver.get(f"{url}/contacts/")
    driver.find_element(By.LINK_TEXT, "Ada Lovelace").click()
    heading(driver, "Edit Ada Lovelace")
    fill(driver, {"email": "nope", "custom.level": "high"})
    click(driver, "form button[type=submit]")
    wait_text(driver, "#error-custom-level", "level: not a Whole number.")
    fill(driver, {"custom.level": "7"})
    click(driver, "form button[type=submit]")
    wait_text(driver, "#error-email", "'nope' is not an e-mail address.")
    shot(driver, "django-form-errors")
    fill(driver, {"email": "ada@example.com"})
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Ada Lovelace was saved.")
    ada = mapper.repository(Contact).find_one("name:Ada", cache=False)
    assert ada.email == "ada@example.com" and ada.custom_fields == {"level": 7}

    click(driver, f"tr[data-id='{ada.id}'] form button")
    wait_text(driver, ".flash", "Ada Lovelace was moved to the trash.")
    assert names(driver) == ["Bob Marley"]
    driver.get(f"{url}/contacts/?trash=1")
    heading(driver, "Trash")
    assert names(driver) == ["Ada Lovelace"]
    shot(driver, "django-trash")
    click(driver, f"tr[data-id='{ada.id}'] form button")
    wait_text(driver, ".flash", "Ada Lovelace was restored.")
    assert names(driver) == ["Ada Lovelace", "Bob Marley"]
    assert len(workers_seen(driver)) == 2  # both workers served these pages


def test_the_two_tab_edit_conflict(driver: WebDriver, url: str, mapper: em.Mapper) -> None:
    cy = mapper.repository(Contact).add(Contact(name="Cy", company="acme"), consistency="wait")
    driver.get(f"{url}/contacts/{cy.id}/edit")
    heading(driver, "Edit Cy")
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{url}/contacts/{cy.id}/edit")
    heading(driver, "Edit Cy")
    fill(driver, {"name": "Cy (tab two)"})
    click(driver, "form button[type=submit]")
    wait_text(driver, ".flash", "Cy (tab two) was saved.")
    driver.switch_to.window(first)
    fill(driver, {"name": "Cy (tab one)"})
    click(driver, "form button[type=submit]")
    heading(driver, "Changed by someone else")
    shot(driver, "django-conflict")
    assert mapper.repository(Contact).get(cy.id, cache=False).name == "Cy (tab two)"
    driver.get(f"{url}/contacts/nobody/edit")
    heading(driver, "Not found")
