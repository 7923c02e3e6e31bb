"""The write pipeline calls the feature points (esmapper._features) and names no feature.

A test feature (registered for the test, attached to the ``Recorded`` model by its index
name) records every point the pipeline calls with the writes it got; ``Plain`` has no
feature at all. The bulk writer is a fake that answers each action (nothing goes over the
network: the mapper points at a closed port and the indexes are marked ensured).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import esmapper as em
from esmapper import _features, _writes
from esmapper._pending import PendingWrite, WriteKind
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.errors import DocumentValidationError, QueryValidationError
from esmapper.options import Options
from esmapper.signals import ChangeType

#: (point, kinds and names of the documents it got) in call order
LOG: list[tuple[str, list[str]]] = []


class Recorded(em.Document, em.HasDates):
    class Index:
        name = "recorded"

    name: str = em.field(em.Keyword(), default="")


class Plain(em.Document):
    class Index:
        name = "plain"

    name: str = em.field(em.Keyword(), default="")


def _names(pendings: Sequence[PendingWrite]) -> list[str]:
    return [f"{p.kind} {p.doc.name}" for p in pendings]


class Recorder(_features.Feature):
    """Implements every write point; the state ``prepare`` returns goes to ``finish``."""

    name = "test_recorder"
    call_options = ("tenant",)
    __slots__ = ()

    @classmethod
    def attach(cls, info: Any) -> Recorder | None:
        return cls(info) if info.index is not None and info.index.name == "recorded" else None

    def assign_ids(self, call: Any, pendings: Sequence[PendingWrite]) -> None:
        LOG.append(("assign_ids", _names(pendings)))
        for pending in pendings:
            assert pending.doc.id is None  # only the documents still without an id
            if pending.doc.name.startswith("placed"):
                object.__setattr__(pending.doc, "id", f"id-{pending.doc.name}")

    def prepare(self, call: Any, pendings: Sequence[PendingWrite]) -> Any:
        LOG.append(("prepare", _names(pendings)))
        return "the state"

    def check(self, call: Any, pendings: Sequence[PendingWrite]) -> None:
        LOG.append(("check", _names(pendings)))
        if call.options.tenant == "refused":
            raise DocumentValidationError("refused by the check point", field="tenant")

    def settle(self, call: Any, confirmed: Sequence[PendingWrite]) -> None:
        LOG.append(("settle", _names(confirmed)))

    def change_type(self, pending: PendingWrite, original: Any, written: Any) -> Any:
        return ChangeType.REMOVED if pending.doc.name == "gone" else None

    def finish(self, call: Any, state: Any, confirmed: Sequence[PendingWrite]) -> None:
        LOG.append((f"finish {state}", _names(confirmed)))
        if any(p.doc.name == "finish-fails" for p in confirmed):
            raise RuntimeError("finish failed")


class FakeWriter:
    """Stands in for ``mapper.writer``: records the actions sent, refuses the documents
    whose name is in ``refuse``."""

    def __init__(self) -> None:
        self.sent: list[BulkAction] = []
        self.refuse: set[str] = set()

    def _write(self, actions: Sequence[BulkAction], *, refresh: Any = None) -> list[BulkOutcome]:
        LOG.append(("send", [f"{a.op} {a.ref.doc.name}" for a in actions]))
        self.sent.extend(actions)
        return [self._answer(a) for a in actions]

    def _answer(self, action: BulkAction) -> BulkOutcome:
        ok = action.ref.doc.name not in self.refuse
        return BulkOutcome(
            action=action,
            ok=ok,
            status=201 if ok else 400,
            id=action.id,
            index=f"{action.index}-v1",
            result="created" if ok else None,
            error_type=None if ok else "mapper_parsing_exception",
            reason=None if ok else "refused",
            seq_no=1 if ok else None,
            primary_term=1 if ok else None,
        )


@pytest.fixture
def recorder() -> Iterator[None]:
    LOG.clear()
    _features.register(Recorder)
    try:
        yield
    finally:
        _features.unregister(Recorder)
        LOG.clear()


@pytest.fixture
def mapper(recorder: None) -> Iterator[em.Mapper]:
    # port 9 (discard) on loopback: any request that did go out would fail the test
    with em.Mapper("http://127.0.0.1:9", models=[Recorded, Plain], index_prefix="unit_") as m:
        m.spec(Recorded).ensured.mark()
        m.spec(Plain).ensured.mark()
        m.writer = FakeWriter()  # type: ignore[assignment]
        yield m


def fake(mapper: em.Mapper) -> FakeWriter:
    writer = mapper.writer
    assert isinstance(writer, FakeWriter)
    return writer


def write(mapper: em.Mapper, *writes: tuple[WriteKind, Any], **options: Any) -> list[PendingWrite]:
    pendings = [PendingWrite(kind, doc, type(doc).__esmapper__) for kind, doc in writes]
    return _writes.write_documents(mapper.services, pendings, Options(**options))


def test_the_points_are_called_in_order_with_their_models_writes(mapper: em.Mapper) -> None:
    a, placed, other = Recorded(name="a"), Recorded(name="placed"), Plain(name="p")
    write(mapper, ("add", a), ("add", other), ("add", placed))

    assert LOG == [
        ("assign_ids", ["add a", "add placed"]),  # never the Plain document
        ("prepare", ["add a", "add placed"]),
        ("check", ["add a", "add placed"]),
        ("send", ["create a", "create p", "create placed"]),
        ("settle", ["add a", "add placed"]),
        ("finish the state", ["add a", "add placed"]),
    ]
    assert placed.id == "id-placed"  # what the feature gave
    assert a.id is not None and em.ObjectId.is_valid(a.id)  # the core's, for the rest
    assert other.id is not None and em.ObjectId.is_valid(other.id)


def test_a_model_without_features_calls_no_point(mapper: em.Mapper) -> None:
    docs = [Plain(name="x"), Plain(name="y")]
    write(mapper, *(("add", d) for d in docs))
    assert LOG == [("send", ["create x", "create y"])]
    assert Plain.__esmapper__.points is _features.NO_POINTS  # type: ignore[attr-defined]


def test_a_refusing_check_sends_nothing_and_undoes_ids_and_dates(mapper: em.Mapper) -> None:
    doc = Recorded(name="a")
    with pytest.raises(DocumentValidationError, match="check point"):
        write(mapper, ("add", doc), tenant="refused")
    assert fake(mapper).sent == []
    assert doc.id is None and doc.created_utc is None
    assert [point for point, _ in LOG] == ["assign_ids", "prepare", "check"]  # no finish


def test_finish_gets_only_the_confirmed_writes_when_some_fail(mapper: em.Mapper) -> None:
    fake(mapper).refuse = {"bad"}
    with pytest.raises(em.BulkWriteError):
        write(mapper, ("add", Recorded(name="good")), ("add", Recorded(name="bad")))
    assert LOG[-2:] == [("settle", ["add good"]), ("finish the state", ["add good"])]


def test_a_failing_finish_never_hides_the_writes_own_error(
    mapper: em.Mapper, caplog: pytest.LogCaptureFixture
) -> None:
    fake(mapper).refuse = {"bad"}
    with pytest.raises(em.BulkWriteError):  # not finish's RuntimeError
        write(mapper, ("add", Recorded(name="finish-fails")), ("add", Recorded(name="bad")))
    assert "finishing a failed write of Recorded failed too" in caplog.text
    # a write that succeeded: finish's own error is the call's
    with pytest.raises(RuntimeError, match="finish failed"):
        write(mapper, ("add", Recorded(name="finish-fails")))


def test_check_runs_again_after_changing_receivers(mapper: em.Mapper) -> None:
    def rename(sender: type, documents: Sequence[Any], **kwargs: Any) -> None:
        documents[0].value.name = "renamed"

    with em.signals.documents_changing.connected_to(rename, sender=Recorded):
        write(mapper, ("add", Recorded(name="a")))
    checks = [names for point, names in LOG if point == "check"]
    assert checks == [["add a"], ["add renamed"]]  # judged again on what receivers left


def test_the_change_type_point_decides_what_is_published(mapper: em.Mapper) -> None:
    doc, kept = Recorded(name="gone"), Recorded(name="kept")
    write(mapper, ("add", doc), ("add", kept))
    published: list[tuple[str | None, ChangeType]] = []

    def hear(sender: type, message: em.EntityChanged, **kwargs: Any) -> None:
        published.append((message.id, message.change_type))

    with em.signals.entity_changed.connected_to(hear, sender=Recorded):
        write(mapper, ("save", doc), ("save", kept))
    assert published == [(doc.id, ChangeType.REMOVED), (kept.id, ChangeType.SAVED)]


def test_tenant_given_for_a_model_no_feature_scopes_is_refused(mapper: em.Mapper) -> None:
    with pytest.raises(QueryValidationError, match="has none") as refused:
        write(mapper, ("add", Plain(name="x")), tenant="acme")
    assert refused.value.field == "tenant"
    assert fake(mapper).sent == []
    # a session's tenant scopes only the models that take it: the others are written
    pendings = [PendingWrite("add", Plain(name="y"), Plain.__esmapper__)]  # type: ignore[attr-defined]
    _writes.write_documents(
        mapper.services, pendings, Options(tenant="acme"), inherited_tenant=True
    )
    assert [a.ref.doc.name for a in fake(mapper).sent] == ["y"]


CORE = ("_writes.py", "_settle.py", "_pending.py")
FEATURE_MODULES = (
    "esmapper.custom_fields",
    "esmapper.indexes.timeseries",
    "esmapper.indexes._placement",
    "esmapper.indexes._timeseries_feature",
    "esmapper.indexes.pipelines",
    "esmapper._soft_deletes",
)


@pytest.mark.parametrize("module", CORE)
def test_the_write_pipeline_imports_no_feature_module(module: str) -> None:
    """Function-local imports included: the pipeline reaches features through points."""
    path = Path(_writes.__file__).resolve().parent / module
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert [m for m in imported if m.startswith(FEATURE_MODULES)] == []
