"""The spec check's request recorder: one record per distinct shape, where two requests of a
shape are the same to the specification checker; recording in subprocesses through the
``sitecustomize`` directory, without importing ``elastic_transport`` where it is not used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from esmapper.testing import _spec_recorder as recorder
from esmapper.testing._spec_recorder import Recorder, read_counts, shape_key, site_directory

FILTER = {"filter_path": "items.*._id,items.*.status,items.*.error"}


def key(method: str, path: str, params: dict[str, str] | None = None, body: Any = None) -> str:
    return shape_key(method, path, params or {}, body)[0]


def create(index: str, doc_id: str, doc: dict[str, Any]) -> list[Any]:
    return [{"create": {"_index": index, "_id": doc_id, "require_alias": True}}, doc]


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for f in sorted(log.glob("requests-*.jsonl")) for x in f.open()]


# -- what is abstracted: what the checker does not read --------------------------------------


def test_names_under_a_test_prefix_ids_and_documents_make_no_new_shape() -> None:
    one = key("PUT", "/t-0123abcd-notes/_doc/6b129c9579d257244772901a", {}, {"text": "a", "n": 1})
    other = key("PUT", "/t-89abcdef-people-2026.03.10/_doc/x7", {}, {"name": "b", "tags": []})
    assert one == other
    assert key("GET", "/t-0123abcd-a,t-0123abcd-b/_search", {"size": "10"}) == key(
        "GET", "/t-89abcdef-c,t-89abcdef-d/_search", {"size": "25"}
    )


def test_a_bulk_is_one_item_of_each_shape() -> None:
    many = [x for i in range(500) for x in create("t-0123abcd-notes", f"n{i}", {"n": i})]
    few = create("t-89abcdef-logs-2026.03.10", "a", {"message": "x"})
    assert key("POST", "/_bulk", FILTER, many) == key("POST", "/_bulk", FILTER, few)
    _, recorded = shape_key("POST", "/_bulk", FILTER, many)
    assert recorded == many[:2]  # the first item, as sent


def test_point_in_time_ids_and_script_params_make_no_new_shape() -> None:
    def page(pit: str, value: int) -> dict[str, Any]:
        script = {"source": "ctx._source.n = params.n", "params": {"n": value}}
        fields = {"s": {"script": script}}
        return {"pit": {"id": pit, "keep_alive": "1m"}, "size": 100, "script_fields": fields}

    assert key("POST", "/_search", {}, page("46ToAwMDaWR5BXV1aWQy" * 4, 1)) == key(
        "POST", "/_search", {}, page("c29tZSBvdGhlciBwaXQgaWQgZW50aXJlbHk=" * 3, 2)
    )


# -- what is kept: all the checker reads -----------------------------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"refresh": "true"}, {"refresh": "wait_for"}),  # an enum's member
        ({"refresh": "true"}, {"refresh": "yes"}),  # a bad boolean
        ({"scroll": "1m"}, {"scroll": "-1"}),
        ({"scroll": "-1"}, {"scroll": "-2"}),  # a duration only -1 may be
        ({"size": "10"}, {"size": "1.5"}),  # integer or number
        ({"size": "10"}, {"sise": "10"}),  # a misspelt name
    ],
)
def test_query_parameter_names_and_values_stay(one: dict[str, str], other: dict[str, str]) -> None:
    assert key("GET", "/t-0123abcd-x/_search", one) != key("GET", "/t-0123abcd-x/_search", other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"sort": [{"n": "asc"}]}, {"sort": [{"n": "ascending"}]}),
        ({"size": 1}, {"size": 1.5}),
        ({"size": 1}, {"size": "1"}),
        ({"query": {"match_all": {}}}, {"query": {"match_all": {}, "term": {"n": 1}}}),
        ({"track_total_hits": True}, {"track_total_hit": True}),
        ({"pit": {"id": "abc", "keep_alive": "1m"}}, {"pit": {"id": "abc", "keep_alive": "1 min"}}),
    ],
)
def test_body_keys_value_kinds_and_enum_like_strings_stay(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    assert key("POST", "/_search", {}, one) != key("POST", "/_search", {}, other)


def test_names_starting_with_an_underscore_stay() -> None:
    """``/_all/...`` is fine, ``/_whatever/_doc/1`` is not: the checker tells them apart."""
    assert key("GET", "/_all/_mapping") != key("GET", "/_whatever/_mapping")
    assert key("DELETE", "/t-0123abcd-x/_doc/_bad") != key("DELETE", "/t-0123abcd-x/_doc/good")


def test_bulk_metadata_and_a_missing_source_line_stay() -> None:
    good = create("t-0123abcd-x", "a", {"n": 1})
    typed = [{"create": {"_index": "t-0123abcd-x", "_id": "a", "require_alias": "true"}}, {}]
    assert key("POST", "/_bulk", {}, good) != key("POST", "/_bulk", {}, typed)
    sourceless = [{"index": {"_index": "t-0123abcd-x", "_id": "a"}}]
    assert shape_key("POST", "/_bulk", {}, sourceless)[1] == sourceless  # kept whole
    update = [{"update": {"_id": "a", "_index": "i"}}, {"doc": {"n": 1}, "doc_as_upsert": True}]
    other = [{"update": {"_id": "a", "_index": "i"}}, {"doc": {"x": "y"}, "doc_as_upsert": "yes"}]
    assert key("POST", "/_bulk", {}, update) != key("POST", "/_bulk", {}, other)


# -- the recorder ----------------------------------------------------------------------------


def test_the_recorder_writes_each_shape_once_and_counts_every_request(tmp_path: Path) -> None:
    log = Recorder(str(tmp_path))
    body = b'{"create":{"_index":"t-0123abcd-x","_id":"a"}}\n{"n":1}\n'
    headers = {"content-type": "application/vnd.elasticsearch+x-ndjson; compatible-with=9"}
    for i in range(3):
        log.record("GET", f"/t-0123abcd-x/_doc/{i}?refresh=true", None, {})
        log.record("POST", "/_bulk", body, headers)
    log.record("POST", "/_search", b"{not json", {})  # recorded as text, not raised
    recorded = lines(tmp_path)
    assert [(r["method"], r["path"]) for r in recorded] == [
        ("GET", "/t-0123abcd-x/_doc/0"),
        ("POST", "/_bulk"),
        ("POST", "/_search"),
    ]
    assert recorded[0]["params"] == {"refresh": "true"}
    assert recorded[1]["body"] == [{"create": {"_index": "t-0123abcd-x", "_id": "a"}}, {"n": 1}]
    log.write_count()
    assert read_counts(str(tmp_path)) == (7, 1)


def _ndjson(*lines: Any) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_an_encoded_bulk_is_reduced_before_it_is_parsed(tmp_path: Path) -> None:
    creates = [x for i in range(100) for x in create("t-0123abcd-x", f"id{i}", {"n": i})]
    deletes = [{"delete": {"_index": "t-0123abcd-x", "_id": f"id{i}"}} for i in range(100)]
    updates = [x for i in range(2) for x in ({"update": {"_id": f"u{i}"}}, {"doc": {"n": i}})]
    log = Recorder(str(tmp_path))
    log.record("PUT", "/_bulk", _ndjson(*creates, *deletes, *updates), {})
    (recorded,) = lines(tmp_path)
    kept = [creates[0], creates[1], deletes[0], updates[0], updates[1]]  # one item of each
    assert sorted(map(json.dumps, recorded["body"])) == sorted(map(json.dumps, kept))


def test_a_bulk_item_without_its_source_line_keeps_the_whole_body(tmp_path: Path) -> None:
    body = [{"index": {"_id": "a"}}, *create("t-0123abcd-x", "b", {"n": 1})] * 3
    log = Recorder(str(tmp_path))
    log.record("PUT", "/_bulk", _ndjson(*body), {})
    (recorded,) = lines(tmp_path)
    assert recorded["body"] == body  # the checker reports the missing source line


def _fake_transport() -> types.ModuleType:
    calls: list[str] = []

    class Transport:
        def perform_request(self, method: str, target: str, **kwargs: Any) -> str:
            calls.append(target)
            return "answer"

    module = types.ModuleType("fake_transport")
    module.Transport = Transport  # type: ignore[attr-defined]
    module.calls = calls  # type: ignore[attr-defined]
    return module


def test_installing_twice_retargets_the_one_recorder(tmp_path: Path) -> None:
    module = _fake_transport()
    first = recorder.patch_transport(module, str(tmp_path / "a"))
    (tmp_path / "a").mkdir()
    wrapped = module.Transport.perform_request
    assert module.Transport().perform_request("GET", "/_cluster/health") == "answer"
    (tmp_path / "b").mkdir()
    assert recorder.patch_transport(module, str(tmp_path / "b")) is first
    assert module.Transport.perform_request is wrapped  # not wrapped twice
    module.Transport().perform_request("GET", "/_cluster/health")
    assert len(lines(tmp_path / "b")) == 1  # a fresh log records the shape again
    assert module.calls == ["/_cluster/health", "/_cluster/health"]


def _run(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    here = str(Path(__file__).resolve().parents[3])
    environ = {k: v for k, v in os.environ.items() if k != recorder.ENV_LOG}
    environ.update(env)
    environ["PYTHONPATH"] = os.pathsep.join(
        [site_directory(), here, *filter(None, [env.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


_SEND = """
import sys
from elasticsearch import Elasticsearch
client = Elasticsearch("http://127.0.0.1:9", max_retries=0, request_timeout=2)
try:
    client.search(index="t-0123abcd-x", size=3, q="n:1")
except Exception:
    pass
print("elastic_transport" in sys.modules)
"""


def test_a_subprocess_records_through_sitecustomize(tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = _run(_SEND, tmp_path, **{recorder.ENV_LOG: str(log)})
    assert done.returncode == 0, done.stderr
    (recorded,) = lines(log)
    assert (recorded["method"], recorded["path"]) == ("POST", "/t-0123abcd-x/_search")
    assert recorded["params"] == {"q": "n:1"} and recorded["body"] == {"size": 3}
    assert read_counts(str(log)) == (1, 1)


def test_a_subprocess_that_never_talks_to_elasticsearch_does_not_import_the_client(
    tmp_path: Path,
) -> None:
    code = "import sys; print('elastic_transport' in sys.modules)"
    done = _run(code, tmp_path, **{recorder.ENV_LOG: str(tmp_path / "log")})
    assert (done.returncode, done.stdout.strip()) == (0, "False")


def test_the_sitecustomize_it_shadows_still_runs(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    code = "import builtins; print(getattr(builtins, 'SHADOWED_RAN', False))"
    done = _run(code, tmp_path, PYTHONPATH=str(other), **{recorder.ENV_LOG: str(tmp_path / "l")})
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr


def test_without_the_log_variable_a_subprocess_records_nothing(tmp_path: Path) -> None:
    done = _run(_SEND, tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []
