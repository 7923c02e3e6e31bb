"""esmapper.rekey against the server: audit, dry run, apply, rerun, concurrent changes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import reindex
from esmapper.rekey import RekeyPlan, RekeyReport, audit, rekey
from tests.integration.conftest import MakeMapper


class Inbox(em.Document):
    class Index:
        name = "inbox"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("tenant", "message_id", "handler_type")

    tenant: str = ""
    message_id: str = ""
    handler_type: str = ""
    body: str = ""


class InboxV2(em.Document):
    """``Inbox`` after a version bump: a reindex moves it to ``inbox-v2``."""

    class Index:
        name = "inbox"
        version = 2
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("tenant", "message_id", "handler_type")

    tenant: str = ""
    message_id: str = ""
    handler_type: str = ""
    body: str = ""


class Unkeyed(em.Document):
    class Index:
        name = "unkeyed"

    name: str = ""


LONG_HANDLER = "/" * 200  # 3 bytes per character once encoded: the new id is 604 bytes


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Inbox, Unkeyed, configure=True)


@pytest.fixture
def physical(mapper: em.Mapper) -> str:
    return mapper.spec(Inbox).physical_name()


def put(es: Elasticsearch, index: str, id_: str, **source: Any) -> None:
    """A raw write, as the previous version (or another tool) made it."""
    es.index(index=index, id=id_, document=source, refresh=True)


def msg(tenant: str, message_id: str, handler_type: str, **more: Any) -> dict[str, Any]:
    return {"tenant": tenant, "message_id": message_id, "handler_type": handler_type, **more}


def stored(es: Elasticsearch, mapper: em.Mapper) -> dict[str, tuple[str, int, dict[str, Any]]]:
    """Every document of the index: id -> (physical index, seq_no, source)."""
    target = mapper.spec(Inbox).read_target
    hits = es.search(index=target, size=1000, seq_no_primary_term=True)["hits"]["hits"]
    return {h["_id"]: (h["_index"], h["_seq_no"], h["_source"]) for h in hits}


LEGACY = {
    # old id -> (its fields, the new id)
    "acme_corp_42_Handler": (msg("acme_corp", "42", "Handler"), "acme_corp:42:Handler"),
    "acme_x_1_H": (msg("acme", "x_1", "H"), "acme:x_1:H"),
    "a/b:c:H": (msg("a/b", "c", "H"), "a%2Fb:c:H"),
    "__untenanted___m1_H": (msg("__untenanted__", "m1", "H"), "__untenanted__:m1:H"),
}
TOO_LONG_ID = "t_m_" + LONG_HANDLER
TOO_LONG_NEW = "t:m:" + "%2F" * 200


@pytest.fixture
def seeded(es_client: Elasticsearch, mapper: em.Mapper, physical: str) -> em.Mapper:
    for old_id, (fields, _) in LEGACY.items():
        put(es_client, physical, old_id, **fields, body=f"from {old_id}")
    # an unmapped field (the mapping is dynamic: false) that must survive the move
    put(
        es_client,
        physical,
        "legacy_1_H",
        **msg("legacy", "1", "H"),
        legacy_note={"kept": True, "n": [1, 2]},
    )
    # already in the new form: one raw, one added through the repository
    put(es_client, physical, "acme:corp_42:H", **msg("acme", "corp_42", "H"))
    mapper.repository(Inbox).add(Inbox(tenant="t", message_id="new", handler_type="H"))
    # blocked: too long once composed, and a missing id field
    put(es_client, physical, TOO_LONG_ID, **msg("t", "m", LONG_HANDLER))
    put(es_client, physical, "orphan_1_H", message_id="1", handler_type="H")
    es_client.indices.refresh(index=physical)
    return mapper


REWRITES = {**{old: new for old, (_, new) in LEGACY.items()}, "legacy_1_H": "legacy:1:H"}
BLOCKED_LINES = [
    f"BLOCKED {TOO_LONG_ID} -> {TOO_LONG_NEW} (new id is 604 bytes, over the 512-byte limit; "
    "shorten handler_type)",
    "BLOCKED orphan_1_H -> - (field 'tenant' is missing)",
]


def test_audit_classifies_every_document(seeded: em.Mapper, physical: str) -> None:
    plans = {p.old_id: p for p in audit(seeded, Inbox, batch_size=3)}
    assert len(plans) == 9
    summary = {old: (p.status, p.new_id) for old, p in plans.items()}
    assert summary == {
        **{old: ("rewrite", new) for old, new in REWRITES.items()},
        "acme:corp_42:H": ("ok", "acme:corp_42:H"),
        "t:new:H": ("ok", "t:new:H"),
        TOO_LONG_ID: ("blocked", TOO_LONG_NEW),
        "orphan_1_H": ("blocked", None),
    }
    assert plans["orphan_1_H"].reason == "field 'tenant' is missing"
    assert {p.index for p in plans.values()} == {physical}
    assert all(isinstance(p.seq_no, int) and p.primary_term >= 1 for p in plans.values())


def test_dry_run_prints_the_plan_and_changes_nothing(
    seeded: em.Mapper, es_client: Elasticsearch
) -> None:
    before = stored(es_client, seeded)
    printed: list[str] = []
    report = rekey(seeded, Inbox, echo=printed.append)
    expected = [f"DRY RUN {old} -> {new}" for old, new in REWRITES.items()] + BLOCKED_LINES
    assert sorted(printed) == sorted(expected)
    assert report.lines == printed
    assert (report.ok, report.to_rewrite, report.rewritten, report.blocked, report.failed) == (
        2,
        5,
        0,
        2,
        0,
    )
    assert stored(es_client, seeded) == before


def test_apply_rewrites_then_a_rerun_converges(
    seeded: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    before = stored(es_client, seeded)
    printed: list[str] = []
    report = rekey(seeded, Inbox, apply=True, echo=printed.append, batch_size=2)
    expected = [f"REWRITE {old} -> {new}" for old, new in REWRITES.items()] + BLOCKED_LINES
    assert sorted(printed) == sorted(expected)
    assert (report.ok, report.rewritten, report.blocked, report.failed) == (2, 5, 2, 0)

    # visible at once (refreshed), readable by the new id, the old ids gone
    after = stored(es_client, seeded)
    repo = seeded.repository(Inbox)
    for old, new in REWRITES.items():
        assert old not in after
        assert after[new][0] == physical
        doc = repo.get(new)
        assert doc is not None and doc.id == new
        assert after[new][2] == before[old][2]  # the raw source, unchanged
    assert repo.get("a%2Fb:c:H").tenant == "a/b"  # type: ignore[union-attr]
    assert after["legacy:1:H"][2]["legacy_note"] == {"kept": True, "n": [1, 2]}
    # ok and blocked documents untouched
    for untouched in ("acme:corp_42:H", "t:new:H", TOO_LONG_ID, "orphan_1_H"):
        assert after[untouched] == before[untouched]
    assert len(after) == len(before)

    again = rekey(seeded, Inbox, apply=True, echo=lambda _: None)
    assert (again.ok, again.to_rewrite, again.rewritten, again.failed) == (7, 0, 0, 0)
    assert sorted(again.lines) == sorted(BLOCKED_LINES)
    assert stored(es_client, seeded) == after


def test_a_concurrent_change_is_compensated(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    put(es_client, physical, "acme_7_H", **msg("acme", "7", "H"), body="v1")
    seen: list[str] = []

    def concurrent_writer(plan: RekeyPlan) -> None:
        seen.append(plan.old_id)
        assert es_client.exists(index=physical, id="acme:7:H")  # created, not yet deleted
        es_client.update(index=physical, id=plan.old_id, doc={"body": "v2"})

    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None, _before_delete=concurrent_writer)
    assert seen == ["acme_7_H"]
    assert report.lines == [
        "REWRITE acme_7_H -> acme:7:H",
        "FAILED 409: acme_7_H changed concurrently; rerun",
    ]
    assert (report.rewritten, report.failed) == (0, 1)
    docs = stored(es_client, mapper)
    assert list(docs) == ["acme_7_H"]  # the new copy was deleted again
    assert docs["acme_7_H"][2]["body"] == "v2"

    rerun = rekey(mapper, Inbox, apply=True, echo=lambda _: None)
    assert (rerun.rewritten, rerun.failed) == (1, 0)
    assert mapper.repository(Inbox).get("acme:7:H").body == "v2"  # type: ignore[union-attr]
    assert list(stored(es_client, mapper)) == ["acme:7:H"]


def test_a_move_interrupted_after_the_create_completes(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    put(es_client, physical, "acme_8_H", **msg("acme", "8", "H"), body="b")
    put(es_client, physical, "acme:8:H", **msg("acme", "8", "H"), body="b")  # identical copy
    dry = rekey(mapper, Inbox, echo=lambda _: None)
    assert dry.lines == [
        "DRY RUN acme_8_H -> acme:8:H (interrupted: acme:8:H already holds this document)"
    ]
    assert dry.summary == (
        "dry run: 1 to rewrite (1 interrupted), 0 blocked, 1 ok; nothing was changed"
    )
    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None)
    assert report.lines == ["REWRITE acme_8_H -> acme:8:H"]
    assert (report.rewritten, report.failed, report.ok) == (1, 0, 1)
    assert report.summary == (
        "1 rewritten (1 completing an interrupted move), 0 failed, 0 blocked, 1 ok"
    )
    assert list(stored(es_client, mapper)) == ["acme:8:H"]


def test_a_different_document_on_the_new_id_is_left_alone(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    put(es_client, physical, "acme_9_H", **msg("acme", "9", "H"), body="old")
    put(es_client, physical, "acme:9:H", **msg("acme", "9", "H"), body="newer")  # a duplicate
    before = stored(es_client, mapper)
    dry = rekey(mapper, Inbox, echo=lambda _: None)
    assert dry.lines == [
        "DRY RUN acme_9_H -> acme:9:H (acme:9:H already holds a different document; --apply "
        "leaves both and reports FAILED)"
    ]
    assert dry.summary == "dry run: 1 to rewrite, 0 blocked, 1 ok; nothing was changed"
    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None)
    assert report.lines == [
        "REWRITE acme_9_H -> acme:9:H",
        f"FAILED 409: acme:9:H already exists in {physical} with a different source; "
        "acme_9_H left in place, compare the two documents",
    ]
    assert (report.rewritten, report.failed) == (0, 1)
    assert stored(es_client, mapper) == before


@pytest.mark.real_es  # the local server leaves _routing out of search hits
def test_routing_is_kept(mapper: em.Mapper, es_client: Elasticsearch, physical: str) -> None:
    es_client.index(
        index=physical, id="r_1_H", routing="shard-key", document=msg("r", "1", "H"), refresh=True
    )
    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None)
    assert (report.rewritten, report.failed) == (1, 0)
    moved = es_client.get(index=physical, id="r:1:H", routing="shard-key")
    assert moved["_routing"] == "shard-key"
    assert not es_client.exists(index=physical, id="r_1_H", routing="shard-key")


def test_documents_created_during_the_scan_are_not_scanned_again(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    for n in range(7):
        put(es_client, physical, f"t_{n}_H", **msg("t", str(n), "H"))
    report = rekey(mapper, Inbox, apply=True, echo=lambda _: None, batch_size=2)
    assert (report.ok, report.rewritten, report.failed) == (0, 7, 0)
    assert sorted(stored(es_client, mapper)) == sorted(f"t:{n}:H" for n in range(7))


def test_refusals(mapper: em.Mapper, es_url: str, index_prefix: str) -> None:
    with pytest.raises(em.MigrationError, match=r"Unkeyed has no Index\.id_fields"):
        rekey(mapper, Unkeyed)
    with (
        em.Mapper(es_url, models=[Inbox], index_prefix=index_prefix + "x-") as unconfigured,
        pytest.raises(em.MigrationError, match="does not exist"),
    ):
        audit(unconfigured, Inbox)


def test_two_runs_at_once_never_lose_a_document(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    # A second run (a rerun started while the first was still alive) moves the document
    # between the first run's create and its delete: the first run's delete then finds
    # the old id gone. Undoing its create would delete the only copy left.
    put(es_client, physical, "acme_7_H", **msg("acme", "7", "H"), body="v1")
    second: list[RekeyReport] = []

    def second_run(plan: RekeyPlan) -> None:
        second.append(rekey(mapper, Inbox, apply=True, echo=lambda _: None))

    first = rekey(mapper, Inbox, apply=True, echo=lambda _: None, _before_delete=second_run)

    assert second[0].lines == ["REWRITE acme_7_H -> acme:7:H"]
    assert second[0].summary == (
        "1 rewritten (1 completing an interrupted move), 0 failed, 0 blocked, 1 ok"
    )
    assert first.lines == ["REWRITE acme_7_H -> acme:7:H"]
    assert (first.rewritten, first.failed) == (1, 0)
    docs = stored(es_client, mapper)
    assert list(docs) == ["acme:7:H"]
    assert docs["acme:7:H"][2]["body"] == "v1"


def test_an_old_id_deleted_by_someone_else_is_reported_not_compensated(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str
) -> None:
    put(es_client, physical, "acme_7_H", **msg("acme", "7", "H"), body="v1")

    def writer_deletes_old_and_rewrites_new(plan: RekeyPlan) -> None:
        es_client.delete(index=physical, id=plan.old_id)
        es_client.index(index=physical, id="acme:7:H", document=msg("acme", "7", "H", body="v2"))

    report = rekey(
        mapper,
        Inbox,
        apply=True,
        echo=lambda _: None,
        _before_delete=writer_deletes_old_and_rewrites_new,
    )
    assert report.lines[1:] == [
        "FAILED 409: acme_7_H is gone and acme:7:H does not hold its copy (it holds another "
        "source); check both by hand"
    ]
    assert (report.rewritten, report.failed) == (0, 1)
    assert {id_: s["body"] for id_, (_, _, s) in stored(es_client, mapper).items()} == {
        "acme:7:H": "v2"  # left alone
    }


def test_a_scan_whose_point_in_time_is_lost_says_how_far_it_got(
    es_client: Elasticsearch, seeded: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open = seeded.client.open_point_in_time

    def open_point_in_time(**kwargs: Any) -> Any:
        response = real_open(**kwargs)
        opened.append(str(response["id"]))
        return response

    monkeypatch.setattr(seeded.client, "open_point_in_time", open_point_in_time)
    plans = audit(seeded, Inbox, batch_size=2)
    first = [next(plans), next(plans)]  # the first page
    assert len(first) == 2
    es_client.close_point_in_time(id=opened[0])  # as if the next page came too late
    with pytest.raises(em.MigrationError, match=r"lost after 2 document\(s\).*run it again"):
        list(plans)


def test_a_reindex_between_the_scan_and_the_moves_does_not_bring_the_old_index_back(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str, es_url: str, index_prefix: str
) -> None:
    """The scan saw ``inbox-v1``; another process reindexes to v2 (swap, delete v1) after
    the first move's create. The moves name the alias, so the next create does not make the
    server create ``inbox-v1`` again (where the moved document would be lost from reads);
    what the race refused is reported, and a rerun on v2 completes every move."""
    for n in (1, 2):
        put(es_client, physical, f"acme_{n}_H", **msg("acme", str(n), "H"), body=f"b{n}")
    with em.Mapper(es_url, models=[InboxV2], index_prefix=index_prefix) as upgraded:
        done: list[Any] = []

        def reindex_meanwhile(plan: RekeyPlan) -> None:
            if not done:
                done.append(reindex(upgraded, InboxV2))

        rekey(mapper, Inbox, apply=True, echo=lambda _: None, _before_delete=reindex_meanwhile)
        assert done and not es_client.indices.exists(index=physical)
        rerun = rekey(upgraded, InboxV2, apply=True, echo=lambda _: None)
        assert rerun.failed == 0, rerun.lines
        docs = stored(es_client, mapper)  # through the alias: v2
        assert {id_: (index, source["body"]) for id_, (index, _, source) in docs.items()} == {
            "acme:1:H": (f"{index_prefix}inbox-v2", "b1"),
            "acme:2:H": (f"{index_prefix}inbox-v2", "b2"),
        }


def test_a_delete_at_a_version_scanned_before_a_reindex_never_deletes_a_changed_document(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str, es_url: str, index_prefix: str
) -> None:
    """Versions are per physical index: the scan saw ``acme_1_H`` at seq_no 2 in
    ``inbox-v1``; a reindex (copies at seq_no 0 and 1 in ``inbox-v2``) and a change by
    another writer put it at seq_no 2 again, in ``inbox-v2``. The delete at the scanned
    version goes to ``inbox-v1``'s fence alias, which the swap removed: refused, the
    changed document is kept and the move reported."""
    for body in ("b0", "b1", "b2"):  # seq_no 0, 1, 2
        put(es_client, physical, "acme_1_H", **msg("acme", "1", "H"), body=body)
    alias = mapper.spec(Inbox).alias
    with em.Mapper(es_url, models=[InboxV2], index_prefix=index_prefix) as upgraded:

        def reindex_and_change(plan: RekeyPlan) -> None:
            assert reindex(upgraded, InboxV2).status == "reindexed"
            changed = es_client.update(index=alias, id="acme_1_H", doc={"body": "changed"})
            assert (changed["_index"], changed["_seq_no"]) == (f"{index_prefix}inbox-v2", 2)

        report = rekey(
            mapper, Inbox, apply=True, echo=lambda _: None, _before_delete=reindex_and_change
        )
    assert (report.rewritten, report.failed) == (0, 1), report.lines
    docs = stored(es_client, mapper)
    assert docs["acme_1_H"][2]["body"] == "changed"


def test_undoing_a_create_after_a_reindex_never_deletes_a_changed_new_document(
    mapper: em.Mapper, es_client: Elasticsearch, physical: str, es_url: str, index_prefix: str
) -> None:
    """The move created ``acme:1:H`` at seq_no 3 in ``inbox-v1``; a reindex copies both
    documents to ``inbox-v2`` (seq_no 0 and 1) and another writer changes ``acme:1:H`` there
    until it is at seq_no 3 again. The delete of the old id is refused (its fence is gone),
    so the move undoes its create: conditioned on the create's version, which means
    something in ``inbox-v1`` only, so it goes to that index's fence and is refused; the
    other writer's change is kept."""
    for body in ("b0", "b1", "b2"):  # seq_no 0, 1, 2; the create is seq_no 3
        put(es_client, physical, "acme_1_H", **msg("acme", "1", "H"), body=body)
    alias = mapper.spec(Inbox).alias
    with em.Mapper(es_url, models=[InboxV2], index_prefix=index_prefix) as upgraded:

        def reindex_and_change_the_new_id(plan: RekeyPlan) -> None:
            assert reindex(upgraded, InboxV2).status == "reindexed"
            seq_no, n = -1, 0
            while seq_no < 3:  # a different body each time (an unchanged one is a noop)
                n += 1
                body = "changed" if seq_no == 2 else f"c{n}"
                changed = es_client.update(index=alias, id="acme:1:H", doc={"body": body})
                seq_no = changed["_seq_no"]
            assert (changed["_index"], seq_no) == (f"{index_prefix}inbox-v2", 3)

        report = rekey(
            mapper,
            Inbox,
            apply=True,
            echo=lambda _: None,
            _before_delete=reindex_and_change_the_new_id,
        )
    assert (report.rewritten, report.failed) == (0, 1), report.lines
    docs = stored(es_client, mapper)
    assert docs["acme:1:H"][2]["body"] == "changed"  # the other writer's change is kept


class DailyInbox(em.Document, em.HasDates):
    class Index:
        name = "daily_inbox"
        kind = "daily"
        max_age = dt.timedelta(days=30)
        id_fields = ("tenant", "message_id")
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    tenant: str = em.field(em.Keyword(), default="")
    message_id: str = em.field(em.Keyword(), default="")


def test_the_audit_of_a_daily_model_reads_every_partition(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """Legacy ids in three daily partitions: the audit's point in time names them (the
    local server's point in time on the umbrella alias covered one of them)."""
    now = dt.datetime.now(dt.timezone.utc).replace(hour=12)
    mapper = make_mapper(DailyInbox, configure=True)
    spec = mapper.spec(DailyInbox)
    repo = mapper.repository(DailyInbox)
    for days in (2, 1, 0):
        at = now - dt.timedelta(days=days)
        # a document in the new form creates the day's partition; a legacy one beside it
        repo.add(DailyInbox(tenant="u", message_id=str(days), created_utc=at))
        physical = next(iter(es_client.indices.get_alias(name=spec.dated_alias(at))))
        source = {"tenant": "t", "message_id": str(days), "created_utc": at.isoformat()}
        es_client.index(index=physical, id=f"t_{days}", document=source, refresh=True)
    plans = {p.old_id: (p.status, p.new_id) for p in audit(mapper, DailyInbox, batch_size=2)}
    assert plans == {
        **{f"t_{d}": ("rewrite", f"t:{d}") for d in (2, 1, 0)},
        **{f"u:{d}": ("ok", f"u:{d}") for d in (2, 1, 0)},
    }
