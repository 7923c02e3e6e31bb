"""The directory as two worker processes sharing Redis, as the demo serves it: an edit
through one worker is shown by the other at once (its cached page is not served stale)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import pytest

import esmapper as em
from examples.webapp.models import Employee
from examples.webapp.workers import Workers, edit_name, page

from .conftest import make_employee


@pytest.fixture
def workers(mapper: em.Mapper, es_url: str, index_prefix: str, redis_url: str) -> Iterator[Workers]:
    env = {"ESMAPPER_URL": es_url, "ESMAPPER_INDEX_PREFIX": index_prefix}
    with Workers(2, "127.0.0.1", 0, {**env, "ESMAPPER_REDIS_URL": redis_url}) as running:
        yield running


def test_an_edit_through_one_worker_is_shown_by_the_other_at_once(
    workers: Workers, repo: em.Repository[Employee]
) -> None:
    employee = repo.add(make_employee(1), consistency="wait")
    one, two = workers.private_urls
    show = f"/employees/{employee.id}"
    for round, (writer, reader) in enumerate([(one, two), (two, one)] * 3):
        before = page(reader, show)
        assert page(reader, show).text == before.text  # cached by the reader now
        current = repo.get(employee.id, cache=False)
        assert current is not None
        edited = edit_name(writer, current, f"Renamed {round}")
        assert edited.status == 303, edited.text[-500:]
        after = page(reader, show)
        assert f"Renamed {round}" in after.text
        assert {before.worker, after.worker} != {edited.worker}  # two processes answered
    assert page(workers.url, show).status == 200  # and both serve the shared port


def test_a_deleted_employee_is_gone_from_both_workers(
    workers: Workers, repo: em.Repository[Employee]
) -> None:
    employee = repo.add(make_employee(2), consistency="wait")
    one, two = workers.private_urls
    show = f"/employees/{employee.id}"
    shown = page(two, show)  # cached by worker two
    assert shown.status == 200 and 'id="deleted"' not in shown.text
    assert page(one, f"{show}/delete", {}).status == 303  # soft delete through worker one
    assert 'id="deleted"' in page(two, show).text  # worker two shows the recycle-bin banner


def test_a_flash_message_set_by_one_worker_is_shown_by_the_other(
    workers: Workers, repo: em.Repository[Employee]
) -> None:
    employee = repo.add(make_employee(3), consistency="wait")
    one, two = workers.private_urls
    for round, (writer, reader) in enumerate([(one, two), (two, one)]):
        current = repo.get(employee.id, cache=False)
        assert current is not None
        saved = edit_name(writer, current, f"Flashed {round}")
        assert saved.status == 303 and saved.cookie, saved.text[-500:]
        location = urllib.parse.urlsplit(saved.location).path
        shown = page(reader, location, cookie=saved.cookie)  # the redirect, on the other worker
        assert shown.worker != saved.worker
        assert f"Flashed {round} was saved." in shown.text
