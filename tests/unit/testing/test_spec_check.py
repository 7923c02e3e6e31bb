"""The plugin's ``--es-spec``: a request the Elasticsearch API specification rejects, sent by
a test or by a Python subprocess of a test, fails the run and is named; a clean run passes
and says what it checked. The requests go to a closed port: recording happens before
sending, so no server is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esmapper.testing import _spec_recorder as recorder
from esmapper.testing._spec_check import load_checker

pytest_plugins = ["pytester"]

KIT = Path(__file__).resolve().parents[3] / "tools" / "es_spec"

_CLIENT = """
import subprocess, sys
from elasticsearch import Elasticsearch

def client():
    return Elasticsearch("http://127.0.0.1:9", max_retries=0, request_timeout=2)

def send(method, path, params=None, body=None):
    try:
        client().perform_request(method, path, params=params, body=body,
                                 headers={"content-type": "application/json"})
    except Exception:
        pass  # nothing listens: the request was recorded before it was sent
"""

_TESTS = (
    _CLIENT
    + """
def test_a_good_request_and_many_of_one_shape():
    for i in range(50):
        send("POST", f"/t-0123abcd-x/_doc/{i}", {"refresh": "true"}, {"n": i})

def test_an_unknown_query_parameter():
    send("GET", "/t-0123abcd-x/_search", {"no_such_param": "1"})

def test_an_unknown_body_property_in_a_subprocess():
    code = (
        "from test_traffic import send; "
        "send('POST', '/t-0123abcd-x/_search', None, {'sise': 10})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
"""
)

_GOOD = (
    _CLIENT
    + """
def test_good():
    send("POST", "/t-0123abcd-x/_search", {"size": "5"}, {"query": {"match_all": {}}})
"""
)


@pytest.fixture
def clean_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The inner run records into its own log only (never into this run's, if it has one),
    and its subprocesses import the test module from the pytester directory."""
    monkeypatch.delenv(recorder.ENV_LOG, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    return pytester


def test_a_violation_fails_the_run_and_is_named(clean_env: pytest.Pytester) -> None:
    clean_env.makepyfile(test_traffic=_TESTS)
    result = clean_env.runpytest_subprocess("-p", "no:cacheprovider", f"--es-spec={KIT}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # every test passed: the check failed
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    violations = [line for line in out.splitlines() if line.startswith("VIOLATION")]
    assert len(violations) == 2, out
    assert "GET /{index}/_search (search) query.no_such_param: unknown query parameter" in out
    assert "body.sise: unknown property of the search request body" in out
    assert "(did you mean 'size'?)" in out
    # 50 + 1 + 1 requests from two processes; the 50 of one shape recorded once
    result.stdout.fnmatch_lines(["52 requests sent, 3 distinct recorded by 2 processes, *"])
    result.stdout.fnmatch_lines(["the recorded requests are kept in *"])


def test_a_clean_run_passes_and_says_what_it_checked(clean_env: pytest.Pytester) -> None:
    clean_env.makepyfile(test_traffic=_GOOD)
    log = clean_env.path / "spec-log"
    result = clean_env.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--es-spec={KIT}", f"--es-spec-log={log}"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["1 requests sent, 1 distinct recorded by 1 processes, 1 shapes checked on "
         "8.18, 8.19, 9.5: 0 violations*"]
    )  # fmt: skip
    (recorded,) = [json.loads(x) for f in log.glob("requests-*.jsonl") for x in f.open()]
    assert recorded["params"] == {"size": "5"}


def test_off_checks_nothing(clean_env: pytest.Pytester) -> None:
    clean_env.makepyfile(test_traffic=_TESTS)
    result = clean_env.runpytest_subprocess("-p", "no:cacheprovider", "--es-spec=off")
    assert result.ret == pytest.ExitCode.OK
    assert "specification check" not in result.stdout.str()


def test_a_directory_that_is_not_a_kit_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match=r"not a specification kit directory"):
        load_checker(tmp_path)


def test_an_unknown_branch_is_a_usage_error_before_any_test_runs(
    clean_env: pytest.Pytester,
) -> None:
    clean_env.makepyfile(test_traffic=_GOOD)
    result = clean_env.runpytest_subprocess(f"--es-spec={KIT}", "--es-spec-branches=8.18,7.x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--es-spec-branches=8.18,7.x: no branch matches '7.x'*"])


_PINNED = (
    _CLIENT
    + """
from elasticsearch import Elasticsearch
from esmapper.testing._spec_recorder import pin_version

LISTED = {"highlight": {"fields": [{"a": {}}, {"b": {}}]}}
KEYED = {"highlight": {"fields": {"a": {}, "b": {}}}}

def send_to(url, body):
    try:
        Elasticsearch(url, max_retries=0, request_timeout=2).perform_request(
            "POST", "/t-0123abcd-x/_search", body=body,
            headers={"content-type": "application/json"})
    except Exception:
        pass

def test_each_form_where_it_is_sent():
    unpin = [pin_version("http://127.0.0.1:7", "9.1.0"),
             pin_version("http://127.0.0.1:8/", "8.19.2")]
    send_to("http://127.0.0.1:7", LISTED)   # conforms on 9.1
    send_to("http://127.0.0.1:8", KEYED)    # conforms on 8.19
    send_to("http://127.0.0.1:8", LISTED)   # does not: the violation of this run
    for end in unpin:
        end()
    send_to("http://127.0.0.1:7", {"size": 1})  # no longer pinned: the run's branches
"""
)


def test_a_pinned_version_is_checked_on_its_branch(clean_env: pytest.Pytester) -> None:
    clean_env.makepyfile(test_traffic=_PINNED)
    result = clean_env.runpytest_subprocess("-p", "no:cacheprovider", f"--es-spec={KIT}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    violations = [line for line in out.splitlines() if line.startswith("VIOLATION")]
    assert len(violations) == 1, out
    assert violations[0].startswith("VIOLATION [8.19] POST /{index}/_search"), out
    assert '"version": "8.19.2"' in out  # the example request names where it was sent
    result.stdout.fnmatch_lines(["*4 shapes checked on 8.18, 8.19, 9.5, 9.1: 1 violations*"])


def test_a_version_maps_to_its_specification_branch() -> None:
    from esmapper.testing._spec_check import version_branch

    branches = ["8.18", "8.19", "9.0", "9.1", "9.2", "9.3", "9.4", "9.5", "main"]
    assert version_branch("9.1.0", branches) == "9.1"
    assert version_branch("8.19.7", branches) == "8.19"
    assert version_branch("9.9.0", branches) == "9.5"  # newer than the kit: its newest 9
    assert version_branch("8.15.3", branches) == "8.18"  # older: the kit's oldest 8
    assert version_branch("7.17.0", branches) is None
    assert version_branch("serverless", branches) is None
