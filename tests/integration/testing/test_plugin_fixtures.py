"""The plugin's fixtures are prefixed: an application's own ``es_url``, ``es_client``,
``index_prefix`` or ``redis_url`` keeps its meaning and never reaches the plugin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import esmapper

#: The checkout these tests run from: the subprocess must load its plugin, not another copy.
_ROOT = str(Path(esmapper.__file__).resolve().parents[1])

pytest_plugins = ["pytester"]

_USER_CONFTEST = """
import pytest

@pytest.fixture
def es_url():
    return "the application's own value"

@pytest.fixture
def es_client():
    raise AssertionError("the plugin must not use the application's es_client")

@pytest.fixture
def index_prefix():
    return "app-"

@pytest.fixture
def redis_url():
    return "redis://the-app:6379/0"
"""

_USER_TESTS = """
from elasticsearch import Elasticsearch

def test_own_fixtures_keep_their_meaning(es_url, index_prefix, redis_url):
    assert es_url == "the application's own value"
    assert index_prefix == "app-"
    assert redis_url == "redis://the-app:6379/0"

def test_plugin_fixtures_reach_the_server(
    esmapper_es_client, esmapper_index_prefix, esmapper_es_url
):
    assert isinstance(esmapper_es_client, Elasticsearch)
    assert esmapper_es_url.startswith("http")
    assert esmapper_index_prefix.startswith("t-")
    esmapper_es_client.indices.create(index=esmapper_index_prefix + "books")
    assert esmapper_es_client.indices.exists(index=esmapper_index_prefix + "books")

def test_both_in_one_test(es_url, esmapper_es_url):
    assert es_url != esmapper_es_url
"""

_OLD_NAMES = """
def test_old_name(es_url):
    pass
"""


def test_user_fixtures_do_not_clash_with_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, es_url: str
) -> None:
    monkeypatch.setenv("ESMAPPER_TEST_URL", es_url)  # the running server; start no other
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest(_USER_CONFTEST)
    pytester.makepyfile(_USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_plugin_no_longer_provides_the_short_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, es_url: str
) -> None:
    monkeypatch.setenv("ESMAPPER_TEST_URL", es_url)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(_OLD_NAMES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'es_url' not found*", "*esmapper_es_url*"])
