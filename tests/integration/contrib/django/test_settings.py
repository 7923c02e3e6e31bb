"""settings.ESMAPPER is checked before anything is sent: each problem is an
ImproperlyConfigured naming the key; a change of the setting gives a new mapper."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

import esmapper as em
from esmapper.contrib.django import _mapper, get_mapper
from esmapper.contrib.django._settings import read_config

from .documents import Note

GOOD: dict[str, Any] = {"url": "http://127.0.0.1:9200", "models": [Note]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"models": []}, r"settings.ESMAPPER\['url'\] is required"),
        ({**GOOD, "url": ""}, r"\['url'\] must be the Elasticsearch URL"),
        ({**GOOD, "modles": []}, r"\['modles'\] is not a setting of esmapper"),
        ({**GOOD, "models": "a.B"}, r"\['models'\] must be a list"),
        (
            {**GOOD, "models": [Note, "nowhere.Thing"]},
            r"\['models'\]\[1\] = 'nowhere.Thing' cannot",
        ),
        ({**GOOD, "models": [3]}, r"\['models'\]\[0\] must be a class"),
        ({**GOOD, "session": {"consistency": "soon"}}, r"\['session'\] is wrong: .*soon"),
        ({**GOOD, "session": {"colour": 1}}, r"\['session'\] is wrong: .*colour"),
        ({**GOOD, "mapper": {"models": []}}, r"\['mapper'\]\['models'\] belongs in"),
        ({**GOOD, "redis": 5}, r"\['redis'\] must be a Redis URL"),
        # checked by building a mapper (nothing sent), not first on a request
        ({**GOOD, "mapper": {"bulk_chunk_size": "many"}}, r"\['mapper'\] is wrong: "),
        ({**GOOD, "mapper": {"colour": 1}}, r"\['mapper'\] is wrong: .*colour"),
        ({**GOOD, "index_prefix": "Upper-"}, r"ESMAPPER is wrong: index_prefix .* lowercase"),
        ([GOOD], r"settings.ESMAPPER must be a dict"),
    ],
)
def test_each_problem_names_its_key(value: Any, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        read_config(value)


def test_dotted_paths_and_lists_of_nodes_are_read() -> None:
    config = read_config(
        {"url": ["http://a:9200", "http://b:9200"], "models": [f"{Note.__module__}.Note"]}
    )
    assert config.models == (Note,) and config.url == ("http://a:9200", "http://b:9200")


def test_a_changed_setting_builds_a_new_mapper() -> None:
    with override_settings(ESMAPPER={**GOOD, "index_prefix": "one-"}):
        first = get_mapper()
        assert first.index_prefix == "one-" and get_mapper() is first
        with override_settings(ESMAPPER={**GOOD, "index_prefix": "two-"}):
            assert get_mapper().index_prefix == "two-"
    with (
        override_settings(ESMAPPER={**GOOD, "mapper": {"bulk_chunk_size": "many"}}),
        pytest.raises(ImproperlyConfigured),
    ):
        get_mapper()


def test_threads_asking_at_once_share_one_mapper_closed_with_the_setting() -> None:
    with override_settings(ESMAPPER={**GOOD, "index_prefix": "threads-"}):
        start = threading.Barrier(8, timeout=60)

        def ask(_: int) -> em.Mapper:
            start.wait()
            return get_mapper()

        with ThreadPoolExecutor(8) as pool:
            mappers = list(pool.map(ask, range(8)))
        assert len({id(m) for m in mappers}) == 1
    with override_settings(ESMAPPER={**GOOD, "index_prefix": "threads-"}):
        assert get_mapper() is not mappers[0]  # the setting changed twice: built again


def test_a_forked_child_builds_its_own_mapper_even_while_the_parent_builds() -> None:
    """A pre-forking server loading the app first: the child does not share the parent's
    mapper (its connections), and a fork taken while another thread of the parent held the
    mapper's lock (building it) does not leave the child's lock held forever."""
    with override_settings(ESMAPPER={**GOOD, "index_prefix": "fork-"}):
        parent = get_mapper()
        holding, release = threading.Event(), threading.Event()

        def hold_the_lock() -> None:
            with _mapper._lock:
                holding.set()
                release.wait(60)

        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        assert holding.wait(60)
        try:
            pid = os.fork()
            if pid == 0:  # the child: 0 when it built its own, 3 when it met the parent's
                signal.alarm(30)  # a lock held forever: killed, not hung
                try:
                    mine = get_mapper()
                    os._exit(0 if mine is not parent and mine.index_prefix == "fork-" else 3)
                finally:
                    os._exit(4)
        finally:
            release.set()
            holder.join(60)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
