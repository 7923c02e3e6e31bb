"""Every patch and ``remove_all`` write is a pending write through ``write_documents``: a
feature registered with ``esmapper._features.register`` sees the patches at its
``prepare``/``check``/``settle``/``finish`` points, and the by-query requests take their
target from the ``by_query`` point."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper import _features, _writes
from esmapper._pending import PendingWrite

from .models import Employee


class Spy(_features.Feature):
    """Records what the points of Employee's writes are given."""

    name = "patch_route_spy"
    __slots__ = ()
    calls: list[tuple[str, list[PendingWrite]]] = []  # noqa: RUF012 - the test's record
    nothing_by_query = False

    @classmethod
    def attach(cls, info: Any) -> Spy | None:
        return cls(info) if info.cls is Employee else None

    def prepare(self, call: Any, pendings: Any) -> Any:
        self.calls.append(("prepare", list(pendings)))
        return "prepared"

    def check(self, call: Any, pendings: Any) -> None:
        self.calls.append(("check", list(pendings)))

    def settle(self, call: Any, confirmed: Any) -> None:
        self.calls.append(("settle", list(confirmed)))

    def finish(self, call: Any, state: Any, confirmed: Any) -> None:
        assert state == "prepared"
        self.calls.append(("finish", list(confirmed)))

    def by_query(self, ctx: Any, request: str) -> dict[str, Any] | None:
        self.calls.append((request, []))
        return None if self.nothing_by_query else {}


@pytest.fixture
def spy() -> Iterator[type[Spy]]:
    Spy.calls = []
    Spy.nothing_by_query = False
    _features.register(Spy)
    try:
        yield Spy
    finally:
        _features.unregister(Spy)


@pytest.fixture
def trio(employees: em.Repository[Employee]) -> list[Employee]:
    return employees.add(
        [Employee(id=f"r{i}", age=i, company_id="acme") for i in range(3)], consistency="wait"
    )


def _seen(spy: type[Spy], point: str) -> list[tuple[str, str | None, bool]]:
    """``(kind, id, is an update)`` of the writes the point was given, in order."""
    return [
        (p.kind, p.doc_id, p.form is not None and p.form.update)
        for name, pendings in spy.calls
        if name == point
        for p in pendings
    ]


def test_a_partial_patch_by_id_goes_through_the_points(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    employees.patch("r1", em.PartialPatch({"age": 41}))
    assert employees.get("r1").age == 41
    for point in ("prepare", "settle", "finish"):
        assert _seen(spy, point) == [("patch", "r1", True)], point
    # checked before anything is read (the patch as a write of no document yet, then as
    # a write by the id: _patching.check_by_id), then as the write
    assert _seen(spy, "check") == [
        ("patch", None, True), ("patch", "r1", True), ("patch", "r1", True)
    ]  # fmt: skip


def test_a_script_patch_by_ids_goes_through_the_points(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    employees.patch(["r0", "r2"], em.ScriptPatch("ctx._source.age += 100"))
    assert [e.age for e in employees.get_many(["r0", "r2"])] == [100, 102]
    assert _seen(spy, "prepare") == [("patch", "r0", True), ("patch", "r2", True)]
    assert _seen(spy, "settle") == [("patch", "r0", True), ("patch", "r2", True)]


def test_a_client_side_patch_is_a_conditional_index_of_the_patched_document(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    employees.patch("r0", em.JsonPatch([{"op": "replace", "path": "/age", "value": 9}]))
    (_point, (pending,)) = next(c for c in spy.calls if c[0] == "prepare")
    assert pending.form is not None and not pending.form.update
    assert pending.doc.age == 9 and pending.form.version == trio[0].version
    assert _seen(spy, "settle") == [("patch", "r0", False)]
    assert pending.doc.version == employees.get("r0").version  # settled onto the document


def test_patch_all_writes_each_match_at_its_scanned_version(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    assert employees.patch_all(None, em.PartialPatch({"company_id": "other"})) == 3
    prepared = [p for name, ps in spy.calls if name == "prepare" for p in ps]
    versions = {p.id: p.form.version for p in prepared if p.form is not None}
    assert versions == {e.id: e.version for e in trio}
    assert sorted(i for _k, i, _u in _seen(spy, "settle")) == ["r0", "r1", "r2"]


def test_a_failed_patch_write_is_settled_as_nothing_and_finished(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    with pytest.raises(em.DocumentError):
        employees.patch("r0", em.ScriptPatch("ctx._source.age = params.missing.x"))
    assert _seen(spy, "prepare") == [("patch", "r0", True)]
    assert _seen(spy, "settle") == [] and _seen(spy, "finish") == []


def test_remove_all_with_caching_deletes_through_write_documents(
    employees: em.Repository[Employee],
    trio: list[Employee],
    spy: type[Spy],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settled: list[tuple[str, str | None]] = []
    settle = _writes.settle  # type: ignore[attr-defined]

    def recording(*args: Any, **kwargs: Any) -> list[PendingWrite]:
        confirmed = settle(*args, **kwargs)
        settled.extend((p.kind, p.doc_id) for p in confirmed)
        return confirmed

    monkeypatch.setattr(_writes, "settle", recording)
    assert employees.remove_all(None, cache=True, consistency="wait") == 3
    assert sorted(settled) == [("remove", "r0"), ("remove", "r1"), ("remove", "r2")]
    assert not any(name.endswith("_by_query") for name, _ in spy.calls)


def test_the_by_query_requests_ask_the_by_query_point(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    assert employees.patch_all(None, em.ScriptPatch("ctx._source.age += 1"), consistency="wait")
    assert employees.remove_all(Q("term", age=1), consistency="wait") == 1
    assert [name for name, _ in spy.calls] == ["update_by_query", "delete_by_query"]


def test_a_by_query_point_that_finds_nothing_to_write_sends_nothing(
    employees: em.Repository[Employee], trio: list[Employee], spy: type[Spy]
) -> None:
    spy.nothing_by_query = True
    assert employees.patch_all(None, em.ScriptPatch("ctx._source.age += 1")) == 0
    assert employees.remove_all(None) == 0
    assert sorted(e.age for e in employees.get_many(["r0", "r1", "r2"])) == [0, 1, 2]
