"""The Django contacts site as two worker processes sharing Redis: an edit through one worker
is read through the other at once; a page that fails writes nothing; two concurrent edits of
one contact end in one 409, never a lost update."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection

import attrs
import pytest

import esmapper as em
from examples._workers import ROOT
from examples.contacts_api.models import Contact, build_mapper
from examples.django_contacts.workers import Workers


@attrs.frozen
class Page:
    status: int
    text: str
    worker: str
    cookies: dict[str, str]


def fetch(
    url: str, path: str, form: dict[str, str] | None = None, cookies: dict[str, str] | None = None
) -> Page:
    """``GET url+path`` (``POST`` with ``form``, with the CSRF token of ``cookies``); no
    redirect is followed."""
    parts = urllib.parse.urlsplit(url)
    conn = HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    jar = dict(cookies or {})
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())} if jar else {}
    try:
        if form is None:
            conn.request("GET", path, headers=headers)
        else:
            body = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": jar.get("csrftoken", "")})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = url
            conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        text = html.unescape(response.read().decode())
        for header in response.msg.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            jar[name.strip()] = rest.split(";", 1)[0]
        return Page(response.status, text, response.getheader("X-Worker") or "", jar)
    finally:
        conn.close()


def version_in(page: Page) -> str:
    match = re.search(r'name="version" value="([^"]*)"', page.text)
    assert match, page.text
    return match.group(1)


@pytest.fixture
def mapper(es_url: str, index_prefix: str) -> Iterator[em.Mapper]:
    with build_mapper(es_url, index_prefix=index_prefix) as built:
        built.configure_indexes()
        yield built


@pytest.fixture
def workers(mapper: em.Mapper, es_url: str, index_prefix: str, redis_url: str) -> Iterator[Workers]:
    env = {
        "ESMAPPER_URL": es_url,
        "ESMAPPER_INDEX_PREFIX": index_prefix,
        "ESMAPPER_REDIS_URL": redis_url,
    }
    with Workers(2, "127.0.0.1", 0, env) as running:
        yield running


def edit(url: str, id: str, version: str, cookies: dict[str, str], **values: str) -> Page:
    form = {"version": version, "company": "acme", "name": "", "email": "", "tags": "", **values}
    return fetch(url, f"/contacts/{id}/edit", form, cookies)


def test_an_edit_through_one_worker_is_read_through_the_other(
    workers: Workers, mapper: em.Mapper
) -> None:
    ada = mapper.repository(Contact).add(Contact(name="Ada", company="acme"), consistency="wait")
    one, two = workers.private_urls
    for round, (writer, reader) in enumerate([(one, two), (two, one)] * 2):
        before = fetch(reader, f"/contacts/{ada.id}/edit")  # read (and cached) by the reader
        assert before.status == 200 and "Edit Ada" in before.text
        saved = edit(writer, ada.id, version_in(before), before.cookies, name=f"Ada {round}")
        assert saved.status == 302, saved.text
        after = fetch(reader, f"/contacts/{ada.id}/edit")
        assert f"Edit Ada {round}" in after.text  # not the reader's cached copy
        assert before.worker == after.worker != saved.worker  # two processes answered
    listed = fetch(workers.url, "/contacts/?q=name:Ada")
    assert listed.status == 200 and "1 contact matching name:Ada" in listed.text


def test_a_page_that_fails_writes_nothing(workers: Workers, mapper: em.Mapper) -> None:
    mapper.custom_fields(Contact).add_field("acme", "level", "int")
    bob = mapper.repository(Contact).add(Contact(name="Bob", company="acme"), consistency="wait")
    form = fetch(workers.private_urls[0], f"/contacts/{bob.id}/edit")
    # the view changes the name, then finds the level is not a number: a 422 form
    refused = edit(workers.private_urls[0], bob.id, version_in(form), form.cookies,
                   name="Robert", **{"custom.level": "high"})  # fmt: skip
    assert refused.status == 422 and "level: not a Whole number." in refused.text
    stored = mapper.repository(Contact).get(bob.id, cache=False)
    assert stored.name == "Bob" and stored.version == bob.version  # nothing was written


def test_two_concurrent_edits_of_one_contact_end_in_one_409(
    workers: Workers, mapper: em.Mapper
) -> None:
    one, two = workers.private_urls
    for round in range(4):
        cy = mapper.repository(Contact).add(
            Contact(name=f"Cy {round}", company="acme"), consistency="wait"
        )
        forms = [fetch(url, f"/contacts/{cy.id}/edit") for url in (one, two)]

        def save(url: str, form: Page, name: str, id: str = cy.id) -> Page:
            return edit(url, id, version_in(form), form.cookies, name=name)

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(save, (one, two), forms, ("by one", "by two")))
        assert sorted(a.status for a in answers) == [302, 409], [a.text for a in answers]
        winner = "by one" if answers[0].status == 302 else "by two"
        assert mapper.repository(Contact).get(cy.id, cache=False).name == winner
        loser = next(a for a in answers if a.status == 409)
        assert "Changed by someone else" in loser.text


def test_manage_py_esmapper_status(es_url: str, index_prefix: str, mapper: em.Mapper) -> None:
    env = {**os.environ, "ESMAPPER_URL": es_url, "ESMAPPER_INDEX_PREFIX": index_prefix}
    done = subprocess.run(
        [sys.executable, "-m", "examples.django_contacts.manage", "esmapper", "status"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "api_contacts" in done.stdout
