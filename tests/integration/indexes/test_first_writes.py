"""Writes before ``configure_indexes()``: a write creates its missing index.

Before the fix, the first write through a versioned model's alias made Elasticsearch create
a concrete index under the alias name with guessed mappings, and ``configure_indexes()``
failed forever after. Now the first write of a model creates its index (and alias) from the
model, once per mapper, race-free between processes; writes through an alias carry
``require_alias``; an index made by someone else under the alias name is reported.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .fences import without_fence
from .models import DailyLog, ItemV1

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)

ROOT = Path(__file__).resolve().parents[3]


def _indexes(client: Elasticsearch, prefix: str) -> dict[str, list[str]]:
    """Every index under ``prefix`` with its aliases."""
    body = client.options(ignore_status=404).indices.get_alias(index=f"{prefix}*").body
    if "error" in body:
        return {}
    return {
        index: without_fence(index, entry["aliases"])
        for index, entry in sorted(body.items())
        if not index.startswith(f"{prefix}esmapper-")  # the locks of configure_indexes()
    }


def _properties(client: Elasticsearch, index: str) -> dict[str, object]:
    mapping = client.indices.get_mapping(index=index).body
    return dict(mapping[index]["mappings"]["properties"])


def test_a_write_before_configure_creates_the_versioned_index_and_its_alias(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    mapper = make_mapper(ItemV1)
    item = mapper.repository(ItemV1).add(ItemV1(name="first", n=1), consistency="immediate")

    assert _indexes(es_client, p) == {f"{p}items-v1": [f"{p}items"]}
    # the model's mapping, not one guessed from the document (name would be text+keyword)
    assert _properties(es_client, f"{p}items-v1")["name"] == {"type": "keyword"}
    (state,) = mapper.configure_indexes()  # and configure_indexes() still works after it
    assert (state.action, state.current_index) == ("unchanged", f"{p}items-v1")
    fetched = mapper.repository(ItemV1).get(item.id)
    assert fetched is not None and fetched.name == "first"


def test_a_write_before_configure_creates_a_plain_index(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    class Note(em.Document):
        class Index:
            name = "notes"
            kind = "plain"

        text: str = em.field(em.Keyword(), default="")

    mapper = make_mapper(Note)
    mapper.repository(Note).add(Note(text="x"))
    assert _indexes(es_client, index_prefix) == {f"{index_prefix}notes": []}
    assert _properties(es_client, f"{index_prefix}notes")["text"] == {"type": "keyword"}


def test_session_flush_save_and_remove_ensure_the_index_too(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    with make_mapper(ItemV1).session() as session:
        session.add(ItemV1(name="in a session"))
    assert _indexes(es_client, p) == {f"{p}items-v1": [f"{p}items"]}
    es_client.indices.delete(index=f"{p}items-v1")

    make_mapper(ItemV1).repository(ItemV1).remove("nothing-yet")  # a no-op, on a real index
    assert _indexes(es_client, p) == {f"{p}items-v1": [f"{p}items"]}
    es_client.indices.delete(index=f"{p}items-v1")

    saved = make_mapper(ItemV1).repository(ItemV1).save(ItemV1(id="s1", name="saved"))
    assert saved.version is not None
    assert _indexes(es_client, p) == {f"{p}items-v1": [f"{p}items"]}


def test_reads_and_patches_before_any_write_create_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(ItemV1).repository(ItemV1)
    assert repo.get("a") is None
    assert repo.get_many(["a", "b"]) == []
    assert not repo.exists("a")
    assert repo.count() == 0
    assert list(repo.find().hits) == []
    assert repo.find_one("name:x") is None
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch("a", em.PartialPatch({"name": "x"}))  # an update sent with require_alias
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch("a", em.ScriptPatch("ctx._source.n += 1"))
    assert repo.patch_all("name:x", em.PartialPatch({"n": 2})) == 0
    assert repo.remove_all("name:x") == 0
    assert _indexes(es_client, index_prefix) == {}


def test_the_index_is_ensured_once_per_mapper_then_writes_send_only_their_bulk(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    repo = make_mapper(ItemV1, url=proxy.url).repository(ItemV1)
    repo.add(ItemV1(name="first"))
    assert proxy.count(rf"^/{index_prefix}items-v1$", method="PUT") == 1
    proxy.reset_counts()
    for i in range(5):
        repo.add(ItemV1(name=f"n{i}"))
    repo.save(repo.add(ItemV1(name="saved")))
    assert proxy.counts == {"/_bulk": 7}

    configured = make_mapper(ItemV1, url=proxy.url)
    configured.configure_indexes()  # counts as the check: the first write sends its bulk only
    proxy.reset_counts()
    configured.repository(ItemV1).add(ItemV1(name="after configure"))
    assert proxy.counts == {"/_bulk": 1}


@pytest.mark.parametrize("how", ["drop_before", "drop_after", "truncate"])
def test_a_lost_answer_to_the_index_creation_of_a_first_write_is_read_back(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    p = index_prefix
    path = rf"^/{p}items-v1$"
    if how == "truncate":
        proxy.truncate_response(path=path, method="PUT")
    else:
        proxy.drop_connection(path=path, method="PUT", after_forwarding=how == "drop_after")

    item = make_mapper(ItemV1, url=proxy.url).repository(ItemV1).add(ItemV1(name="x"))

    assert proxy.pending_faults == 0
    assert _indexes(es_client, p) == {f"{p}items-v1": [f"{p}items"]}
    assert proxy.count(path, method="PUT") == (2 if how == "drop_before" else 1)
    assert es_client.get(index=f"{p}items", id=item.id)["found"]


def test_an_index_someone_else_created_under_the_alias_name_is_reported(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    alias = f"{index_prefix}items"
    # what a write through the alias before it existed leaves (automatic index creation)
    es_client.index(index=alias, id="stray", document={"name": "stray"}, refresh=True)
    mapper = make_mapper(ItemV1)

    with pytest.raises(em.AliasNameTakenError) as caught:
        mapper.repository(ItemV1).add(ItemV1(name="x"))
    message = str(caught.value)
    assert f"{alias!r} is a concrete index" in message
    assert f"DELETE /{alias}" in message and "configure_indexes()" in message
    assert caught.value.index == alias
    with pytest.raises(em.AliasNameTakenError):
        mapper.configure_indexes()
    assert _indexes(es_client, index_prefix) == {alias: []}  # nothing created, nothing written
    assert es_client.count(index=alias)["count"] == 1

    es_client.indices.delete(index=alias)  # the remedy
    mapper.repository(ItemV1).add(ItemV1(name="x"))
    assert _indexes(es_client, index_prefix) == {f"{alias}-v1": [alias]}


def test_writes_through_a_vanished_alias_never_create_an_index_named_like_it(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    alias = f"{index_prefix}items"
    mapper = make_mapper(ItemV1)
    repo = mapper.repository(ItemV1)
    repo.add(ItemV1(name="a"))

    # deleted behind the mapper's back: the next create is refused (require_alias), the
    # index ensured again, the create sent once more
    es_client.indices.delete(index=f"{alias}-v1")
    again = repo.add(ItemV1(name="b"), consistency="immediate")
    assert _indexes(es_client, index_prefix) == {f"{alias}-v1": [alias]}
    assert [d.id for d in repo.find().documents] == [again.id]

    # deleted, and a concrete index took the alias name: the write lands nowhere, and says why
    es_client.indices.delete(index=f"{alias}-v1")
    es_client.indices.create(index=alias)
    with pytest.raises(em.DocumentError) as caught:
        repo.add(ItemV1(name="c"))
    assert caught.value.error_type == "alias_name_taken"
    assert "is a concrete index" in str(caught.value.reason)
    es_client.indices.refresh(index=alias)
    assert es_client.count(index=alias)["count"] == 0
    assert _indexes(es_client, index_prefix) == {alias: []}


def test_a_time_series_partition_deleted_by_hand_is_made_again_by_the_next_write(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """The mapper cached its partitions of two periods; both are deleted behind its back.
    One bulk writing to both (an ObjectId id, a supplied id found by the lookup nowhere)
    is refused per dated alias (``require_alias``): each period is forgotten and its
    partition ensured again, and the writes are sent once more."""
    clock = FakeClock(NOW)
    mapper = make_mapper(DailyLog, clock=clock)
    repo = mapper.repository(DailyLog)
    yesterday = NOW - dt.timedelta(days=1)
    repo.add([DailyLog(message="a", created_utc=NOW), DailyLog(message="b", created_utc=yesterday)])
    partitions = [f"{index_prefix}logs-v1-2026.03.10", f"{index_prefix}logs-v1-2026.03.09"]
    es_client.indices.delete(index=",".join(partitions))

    added = repo.add(
        [
            DailyLog(message="c", created_utc=NOW),
            DailyLog(id="supplied", message="d", created_utc=yesterday),
        ],
        consistency="immediate",
    )
    assert sorted(_indexes(es_client, index_prefix)) == sorted(partitions)
    assert sorted(d.message for d in repo.find().documents) == ["c", "d"]
    assert repo.get("supplied") is not None and repo.get(added[0].id) is not None


_RACER = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, os.environ["RACE_TESTS"])
    import esmapper as em
    from tests.integration.indexes.models import ItemV1

    url, prefix, go, name = sys.argv[1:5]
    mapper = em.Mapper(url, models=[ItemV1], index_prefix=prefix)
    open(go + "-ready-" + name, "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(go):  # the start line both racers wait on
        assert time.monotonic() < deadline, "never told to go"
        time.sleep(0.001)
    try:
        item = mapper.repository(ItemV1).add(ItemV1(name=name))
        print(json.dumps({"id": item.id}))
    except Exception as exc:
        print(json.dumps({"error": repr(exc)}))
        sys.exit(1)
    """
)


def test_two_processes_racing_the_first_write_create_one_index_and_alias(
    es_url: str, es_client: Elasticsearch, index_prefix: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env["RACE_TESTS"] = str(ROOT)
    for round_ in range(3):
        prefix = f"{index_prefix}r{round_}-"
        go = tmp_path / f"go-{round_}"
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", _RACER, es_url, prefix, str(go), f"racer-{i}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for i in range(2)
        ]
        deadline = time.monotonic() + 120  # both imported and waiting: start them together
        while not all(Path(f"{go}-ready-racer-{i}").exists() for i in range(2)):
            assert all(r.poll() is None for r in racers), [r.communicate() for r in racers]
            assert time.monotonic() < deadline, "the racers did not start"
            time.sleep(0.01)
        go.touch()
        results = []
        for racer in racers:
            out, err = racer.communicate(timeout=120)
            assert racer.returncode == 0, (out, err)
            results.append(json.loads(out.strip().splitlines()[-1]))
        assert _indexes(es_client, prefix) == {f"{prefix}items-v1": [f"{prefix}items"]}
        es_client.indices.refresh(index=f"{prefix}items")
        stored = {h["_id"] for h in es_client.search(index=f"{prefix}items")["hits"]["hits"]}
        assert stored == {r["id"] for r in results}


@pytest.mark.parametrize("taken", ["logs", "logs-2026.03.10"])
def test_a_concrete_index_under_a_time_series_alias_name_is_reported(
    taken: str, make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    name = f"{index_prefix}{taken}"
    es_client.indices.create(index=name)  # the umbrella or the dated alias name
    mapper = make_mapper(DailyLog, clock=FakeClock(NOW))
    with pytest.raises(em.AliasNameTakenError, match=rf"{name!r} is a concrete index"):
        mapper.repository(DailyLog).add(DailyLog(created_utc=NOW))
    assert _indexes(es_client, index_prefix) == {name: []}
    if taken == "logs":
        with pytest.raises(em.AliasNameTakenError):
            mapper.configure_indexes()
