"""esmapper.rekey without a server: classification of raw hits, the scan loop, the moves."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig, ObjectApiResponse
from elasticsearch import ApiError, ConflictError, NotFoundError

import esmapper as em
from esmapper._writes import composed_id
from esmapper.ids import MAX_ID_BYTES, compose_id
from esmapper.indexes.spec import IndexSpec
from esmapper.rekey import RekeyPlan, audit, plan_for, rekey


class Message(em.Document):
    class Index:
        name = "inbox"
        id_fields = ("tenant", "message_id", "handler_type")

    tenant: str = ""
    message_id: str = ""
    handler_type: str = ""
    body: str = ""


class Color(enum.Enum):
    RED = "red"


class Typed(em.Document):
    class Index:
        name = "typed"
        id_fields = ("number", "at", "color", "flag")

    number: int = 0
    at: datetime | None = None
    color: Color | None = None
    flag: bool = False


class Plain(em.Document):
    class Index:
        name = "plain"

    name: str = ""


def hit(id_: str, source: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "_index": "inbox-v1",
        "_id": id_,
        "_seq_no": 7,
        "_primary_term": 1,
        **extra,
    }
    if source is not None:
        raw["_source"] = dict(source)
    return raw


def msg(tenant: Any, message_id: Any, handler_type: Any, **more: Any) -> dict[str, Any]:
    return {"tenant": tenant, "message_id": message_id, "handler_type": handler_type, **more}


# --------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("old_id", "source", "new_id"),
    [
        # the legacy "_" join: both readings of acme_corp_42_H exist as fields
        ("acme_corp_42_Handler", msg("acme_corp", "42", "Handler"), "acme_corp:42:Handler"),
        ("acme_corp_42_H", msg("acme", "corp_42", "H"), "acme:corp_42:H"),
        # unescaped separators
        ("a/b:c:H", msg("a/b", "c", "H"), "a%2Fb:c:H"),
        ("x:y%2Fz:H", msg("x", "y%2Fz", "H"), "x:y%252Fz:H"),
        # the reserved tenant sentinel is carried through unchanged
        ("__untenanted___m-1_H", msg("__untenanted__", "m-1", "H"), "__untenanted__:m-1:H"),
        # an id that looks composed but does not match the fields: fields win
        ("acme:42:H", msg("acme_corp", "42", "H"), "acme_corp:42:H"),
    ],
)
def test_old_shapes_are_rewritten_from_the_fields(
    old_id: str, source: dict[str, Any], new_id: str
) -> None:
    plan = plan_for(Message, hit(old_id, source))
    assert (plan.status, plan.old_id, plan.new_id, plan.reason) == ("rewrite", old_id, new_id, None)
    assert (plan.index, plan.seq_no, plan.primary_term) == ("inbox-v1", 7, 1)
    assert plan.source == source


@pytest.mark.parametrize(
    "source",
    [msg("acme", "corp_42", "H"), msg("a/b", "c:d", "é"), msg("acme", "1", "H", extra=1)],
)
def test_ids_already_composed_are_ok(source: dict[str, Any]) -> None:
    new_id = compose_id(source["tenant"], source["message_id"], source["handler_type"])
    plan = plan_for(Message, hit(new_id, source))
    assert (plan.status, plan.new_id, plan.reason) == ("ok", new_id, None)


def test_a_composed_id_over_512_bytes_is_blocked_with_the_id() -> None:
    source = msg("t", "m", "/" * 200)  # 204 bytes as an old id, 604 composed
    plan = plan_for(Message, hit("t_m_" + "/" * 200, source))
    assert plan.status == "blocked"
    assert plan.new_id == "t:m:" + "%2F" * 200
    assert plan.reason is not None
    assert "604 bytes" in plan.reason and f"{MAX_ID_BYTES}-byte" in plan.reason
    assert "handler_type" in plan.reason


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ({"message_id": "m", "handler_type": "H"}, "field 'tenant' is missing"),
        (msg("t", "", "H"), "field 'message_id' is empty"),
        (msg("t", "m", None), "field 'handler_type' is empty"),
        (msg("t", ["a", "b"], "H"), "field 'message_id' holds a list, not a single value"),
        (msg("t", "m\ud800", "H"), "message_id holds an unpaired surrogate"),
        (None, "the document has no _source to copy"),
    ],
)
def test_unstorable_documents_are_blocked(source: dict[str, Any] | None, reason: str) -> None:
    plan = plan_for(Message, hit("old_id", source))
    assert (plan.status, plan.new_id, plan.reason) == ("blocked", None, reason)


def test_routing_and_source_are_kept_but_source_is_not_compared() -> None:
    plan = plan_for(Message, hit("t_m_H", msg("t", "m", "H"), _routing="r1"))
    assert plan.routing == "r1"
    assert plan == RekeyPlan("t_m_H", "t:m:H", "rewrite", "inbox-v1", 7, 1, routing="r1")
    assert "source" not in repr(plan)


def test_the_new_id_is_the_one_add_composes() -> None:
    # Typed id fields (int, date, enum, bool) are converted as the model loads them, then
    # str()-ed like Repository.add does: the rekeyed id is the id add gives today.
    doc = Typed(number=42, at=datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc))
    doc.color = Color.RED
    doc.flag = True
    object.__setattr__(doc, "id", composed_id(Typed.__esmapper__, doc))  # what add() sets
    assert doc.id is not None
    source = doc.to_source()
    assert source["at"] != str(doc.at)  # the stored text differs from the term
    plan = plan_for(Typed, hit("42_2024-05-06_red_true", source))
    assert (plan.status, plan.new_id) == ("rewrite", doc.id)
    assert plan_for(Typed, hit(doc.id, source)).status == "ok"


def test_an_unreadable_value_is_blocked() -> None:
    plan = plan_for(Typed, hit("x", {"number": 1, "at": "not a date", "color": "red", "flag": 1}))
    assert plan.status == "blocked"
    assert plan.reason is not None and plan.reason.startswith("fields number, at, color, flag")


def test_models_without_id_fields_are_refused() -> None:
    with pytest.raises(em.MigrationError, match=r"Plain has no Index\.id_fields"):
        plan_for(Plain, hit("x", {"name": "n"}))
    with pytest.raises(TypeError, match="not an esmapper Document"):
        plan_for(dict, hit("x", {}))


# --------------------------------------------------------------------------- fakes


def api_error(cls: type[ApiError], status: int, type_: str, reason: str) -> ApiError:
    meta = ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 9200))
    body = {"error": {"type": type_, "reason": reason}, "status": status}
    return cls(type_, meta=meta, body=body)


class FakeClient:
    """Serves ``pages`` of hits and records every request."""

    def __init__(self, hits: list[dict[str, Any]]) -> None:
        self.hits = hits
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.docs: dict[str, dict[str, Any]] = {}
        self.seq_no = 100
        self.fail: dict[tuple[str, str], ApiError] = {}
        self.indices = self
        self.options_seen: list[dict[str, Any]] = []

    def options(self, **kwargs: Any) -> FakeClient:
        """Writes are sent through ``options(max_retries=0, ...)``: the same fake."""
        self.options_seen.append(kwargs)
        return self

    def _call(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))
        error = self.fail.get((name, kwargs.get("id", "")))
        if error is not None:
            raise error

    def open_point_in_time(self, **kwargs: Any) -> dict[str, Any]:
        self._call("open_point_in_time", **kwargs)
        return {"id": "pit-0"}

    def search(self, **kwargs: Any) -> dict[str, Any]:
        self._call("search", **kwargs)
        start = 0
        if kwargs["search_after"] is not None:
            start = kwargs["search_after"][0] + 1
        page = self.hits[start : start + kwargs["size"]]
        number = len([c for c in self.calls if c[0] == "search"])
        return {"pit_id": f"pit-{number}", "hits": {"hits": page}}

    def close_point_in_time(self, **kwargs: Any) -> dict[str, Any]:
        self._call("close_point_in_time", **kwargs)
        return {"succeeded": True}

    def create(self, **kwargs: Any) -> dict[str, Any]:
        self._call("create", **kwargs)
        self.seq_no += 1
        return {"_seq_no": self.seq_no, "_primary_term": 1, "result": "created"}

    def get(self, **kwargs: Any) -> ObjectApiResponse[Any]:
        """``docs`` holds what a read finds (each at ``_seq_no`` 1); others are 404."""
        self._call("get", **kwargs)
        if kwargs["id"] not in self.docs:
            raise api_error(NotFoundError, 404, "not_found", kwargs["id"])
        meta = ApiResponseMeta(200, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 9200))
        body = {"_id": kwargs["id"], "_source": self.docs[kwargs["id"]], "_seq_no": 1}
        return ObjectApiResponse(body=body, meta=meta)

    def mget(self, **kwargs: Any) -> dict[str, Any]:
        self._call("mget", **kwargs)
        return {
            "docs": [
                {"_id": d["_id"], "found": True, "_source": self.docs[d["_id"]]}
                if d["_id"] in self.docs
                else {"_id": d["_id"], "found": False}
                for d in kwargs["docs"]
            ]
        }

    def delete(self, **kwargs: Any) -> dict[str, Any]:
        self._call("delete", **kwargs)
        return {"result": "deleted"}

    def refresh(self, **kwargs: Any) -> dict[str, Any]:
        self._call("refresh", **kwargs)
        return {}


class FakeMapper:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

        self.invalidated: list[str | None] = []
        self.write_hooks: set[type] = set()  # (no repository with cache hooks)

    def spec(self, model: type) -> IndexSpec:
        return IndexSpec(model.__esmapper__)  # type: ignore[attr-defined]

    def invalidate_ids(self, info: Any, ids: list[str | None]) -> None:
        self.invalidated.extend(ids)


def sorted_hits(pairs: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [hit(id_, source, sort=[n]) for n, (id_, source) in enumerate(pairs)]


def names(client: FakeClient) -> list[str]:
    return [name for name, _ in client.calls]


# --------------------------------------------------------------------------- the scan


def test_audit_pages_with_search_after_and_closes_the_latest_pit() -> None:
    client = FakeClient(sorted_hits([(f"t_{n}_H", msg("t", str(n), "H")) for n in range(5)]))
    plans = list(audit(FakeMapper(client), Message, batch_size=2))  # type: ignore[arg-type]
    assert [p.new_id for p in plans] == [f"t:{n}:H" for n in range(5)]
    searches = [kw for name, kw in client.calls if name == "search"]
    assert [s["search_after"] for s in searches] == [None, [1], [3]]
    assert [s["pit"]["id"] for s in searches] == ["pit-0", "pit-1", "pit-2"]
    assert all(s["seq_no_primary_term"] and s["size"] == 2 for s in searches)
    assert searches[0]["sort"] == [{"_shard_doc": "asc"}]
    # refreshed first: the scan sees every acknowledged write (a killed run never refreshed)
    assert client.calls[:2] == [
        ("refresh", {"index": "inbox"}),
        ("open_point_in_time", {"index": "inbox", "keep_alive": "5m"}),
    ]
    assert client.calls[-1] == ("close_point_in_time", {"id": "pit-3"})


def test_audit_closes_the_pit_when_abandoned() -> None:
    client = FakeClient(sorted_hits([(f"t_{n}_H", msg("t", str(n), "H")) for n in range(5)]))
    plans = audit(FakeMapper(client), Message, batch_size=2)  # type: ignore[arg-type]
    next(plans)
    plans.close()  # type: ignore[attr-defined]
    assert names(client)[-1] == "close_point_in_time"


def test_audit_checks_its_arguments_before_sending_anything() -> None:
    client = FakeClient([])
    with pytest.raises(em.MigrationError, match="id_fields"):
        audit(FakeMapper(client), Plain)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        audit(FakeMapper(client), Message, batch_size=0)  # type: ignore[arg-type]
    assert client.calls == []


# --------------------------------------------------------------------------- the moves


HITS = [
    ("acme_1_H", msg("acme", "1", "H", id="acme_1_H", extra={"x": 1})),
    ("acme:2:H", msg("acme", "2", "H")),
    ("acme_3_" + "/" * 200, msg("acme", "3", "/" * 200)),
]


def test_dry_run_prints_and_only_reads() -> None:
    client = FakeClient(sorted_hits(HITS))
    printed: list[str] = []
    report = rekey(FakeMapper(client), Message, echo=printed.append)  # type: ignore[arg-type]
    too_long = "acme:3:" + "%2F" * 200
    assert (
        printed
        == report.lines
        == [
            "DRY RUN acme_1_H -> acme:1:H",
            f"BLOCKED acme_3_{'/' * 200} -> {too_long} (new id is 607 bytes, over the "
            "512-byte limit; shorten handler_type)",
        ]
    )
    assert (report.ok, report.to_rewrite, report.rewritten, report.blocked) == (1, 1, 0, 1)
    reads = {"open_point_in_time", "search", "close_point_in_time", "mget"}
    assert set(names(client)) == {"refresh", *reads}  # a refresh changes no document
    assert [kw["docs"] for n, kw in client.calls if n == "mget"] == [
        [{"_index": "inbox-v1", "_id": "acme:1:H"}]  # is a move half done?
    ]
    assert report.summary == "dry run: 1 to rewrite, 1 blocked, 1 ok; nothing was changed"


def test_dry_run_shows_interrupted_moves_and_taken_new_ids() -> None:
    client = FakeClient(sorted_hits([(f"t_{n}_H", msg("t", str(n), "H")) for n in range(3)]))
    client.docs["t:0:H"] = msg("t", "0", "H")  # a move stopped after its create
    client.docs["t:1:H"] = msg("t", "1", "H", body="other")
    report = rekey(FakeMapper(client), Message, echo=lambda _: None, batch_size=2)  # type: ignore[arg-type]
    assert report.lines == [
        "DRY RUN t_0_H -> t:0:H (interrupted: t:0:H already holds this document)",
        "DRY RUN t_1_H -> t:1:H (t:1:H already holds a different document; --apply leaves "
        "both and reports FAILED)",
        "DRY RUN t_2_H -> t:2:H",
    ]
    assert (report.to_rewrite, report.interrupted) == (3, 1)
    assert report.summary == (
        "dry run: 3 to rewrite (1 interrupted), 0 blocked, 0 ok; nothing was changed"
    )
    assert names(client).count("mget") == 2  # one per page


def test_apply_creates_then_deletes_conditionally_through_the_alias_then_refreshes() -> None:
    """The hits come from the physical ``inbox-v1``; the create names the alias (a reindex
    swapping meanwhile must not get ``inbox-v1`` created again by the create), the delete
    at the scanned version the fence alias of ``inbox-v1`` (that swap makes it a 404)."""
    client = FakeClient(sorted_hits(HITS[:1]))
    report = rekey(FakeMapper(client), Message, apply=True, echo=lambda _: None)  # type: ignore[arg-type]
    assert report.lines == ["REWRITE acme_1_H -> acme:1:H"]
    assert (report.rewritten, report.failed) == (1, 0)
    writes = [(n, kw) for n, kw in client.calls[1:] if n in ("create", "delete", "refresh")]
    assert writes == [
        (
            "create",
            {
                "index": "inbox",
                "id": "acme:1:H",
                # the mapper's copy of the id follows; everything else is copied as is
                "document": msg("acme", "1", "H", id="acme:1:H", extra={"x": 1}),
                "require_alias": True,
            },
        ),
        # at the scanned version: through the fence alias of the scanned index
        (
            "delete",
            {"index": "inbox-v1.fence", "id": "acme_1_H", "if_seq_no": 7, "if_primary_term": 1},
        ),
        ("refresh", {"index": "inbox"}),
    ]
    assert names(client)[0] == "refresh"  # before the scan, too
    # the writes are not resent by the transport
    assert {"max_retries": 0, "retry_on_status": (), "retry_on_timeout": False} in (
        client.options_seen
    )


def test_routing_is_passed_to_every_write() -> None:
    client = FakeClient([hit("t_m_H", msg("t", "m", "H"), _routing="r1", sort=[0])])
    rekey(FakeMapper(client), Message, apply=True, echo=lambda _: None)  # type: ignore[arg-type]
    assert all(kw["routing"] == "r1" for n, kw in client.calls if n in ("create", "delete"))


def test_a_failed_create_leaves_the_old_document() -> None:
    client = FakeClient(sorted_hits(HITS[:1]))
    client.fail["create", "acme:1:H"] = api_error(
        ApiError, 403, "cluster_block_exception", "index read-only"
    )
    report = rekey(FakeMapper(client), Message, apply=True, echo=lambda _: None)  # type: ignore[arg-type]
    assert report.lines[-1] == (
        "FAILED 403: creating acme:1:H failed (cluster_block_exception: index read-only); "
        "acme_1_H left in place"
    )
    assert "delete" not in names(client)
    assert (report.rewritten, report.failed) == (0, 1)


def test_a_failed_delete_is_compensated_and_a_failed_compensation_reported() -> None:
    client = FakeClient(sorted_hits(HITS[:1]))
    client.fail["delete", "acme_1_H"] = api_error(ConflictError, 409, "version_conflict", "x")
    client.fail["delete", "acme:1:H"] = api_error(NotFoundError, 404, "not_found", "gone")
    client.docs["acme_1_H"] = msg("acme", "1", "H", body="changed")  # read back: still there
    report = rekey(FakeMapper(client), Message, apply=True, echo=lambda _: None)  # type: ignore[arg-type]
    assert report.lines[-1] == (
        "FAILED 409: acme_1_H changed concurrently; rerun (and removing the new acme:1:H "
        "failed: 404 not_found: gone; remove it by hand)"
    )
    deletes = [kw for n, kw in client.calls if n == "delete"]
    compensation = {"index": "inbox", "id": "acme:1:H", "if_seq_no": 101, "if_primary_term": 1}
    assert deletes[1] == compensation


def test_an_existing_identical_copy_completes_an_interrupted_move() -> None:
    client = FakeClient(sorted_hits(HITS[:1]))
    client.fail["create", "acme:1:H"] = api_error(ConflictError, 409, "version_conflict", "x")
    client.docs["acme:1:H"] = msg("acme", "1", "H", id="acme:1:H", extra={"x": 1})
    client.fail["delete", "acme_1_H"] = api_error(ConflictError, 409, "version_conflict", "x")
    client.docs["acme_1_H"] = msg("acme", "1", "H", body="changed")  # read back: still there
    mapper = FakeMapper(client)
    report = rekey(mapper, Message, apply=True, echo=lambda _: None)  # type: ignore[arg-type]
    assert mapper.invalidated == ["acme_1_H", "acme:1:H"]  # both ids leave the cache
    # the copy existed before this run: it is not deleted
    assert report.lines[-1] == (
        "FAILED 409: acme_1_H changed concurrently; rerun "
        "(acme:1:H existed before this run and is left in place)"
    )
    assert [kw["id"] for n, kw in client.calls if n == "delete"] == ["acme_1_H"]
