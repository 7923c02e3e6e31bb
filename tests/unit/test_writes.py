"""The write pipeline (``esmapper._writes.write_documents``) without a server.

The mapper points at a closed port and its bulk writer is a :class:`FakeWriter` that
records every ``write`` call and answers each action as the test says: nothing goes over
the network (the models' indexes are marked ensured, so no first-write requests either).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import esmapper as em
from esmapper import _json, _writes
from esmapper._bulk_answers import BulkItem, decode_items, item_of
from esmapper._bulk_encode import encode_all
from esmapper._pending import PendingWrite, WriteKind
from esmapper.bulk import BulkAction, BulkOutcome, BulkRequestError
from esmapper.errors import (
    BulkWriteError,
    DocumentValidationError,
    DuplicateDocumentError,
    VersionConflictError,
)
from esmapper.ids import check_id
from esmapper.model.state import DocState, state_of
from esmapper.options import Options

Answer = Callable[[BulkAction], BulkOutcome]


class Person(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "people"

    name: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(factory=list)

    def validate(self) -> None:
        STEPS.append(f"validate {self.name}")
        if self.name == "invalid":
            raise DocumentValidationError("name must not be 'invalid'", field="name")


#: What each test saw, in order (cleared by the ``steps`` fixture).
STEPS: list[str] = []


def ok(action: BulkAction, seq_no: int = 7) -> BulkOutcome:
    status = 200 if action.op in ("index", "delete") else 201
    return BulkOutcome(
        action=action,
        ok=True,
        status=status,
        id=action.id,
        index="people-v1",
        result="created" if status == 201 else "updated",
        seq_no=seq_no,
        primary_term=1,
    )


def refused(action: BulkAction, status: int = 409, error_type: str = "conflict") -> BulkOutcome:
    return BulkOutcome(
        action=action,
        ok=False,
        status=status,
        id=action.id,
        index="people-v1",
        error_type=error_type,
        reason=f"refused with {status}",
    )


class FakeWriter:
    """Stands in for ``mapper.writer``: records each call, answers each action."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[BulkAction], Any]] = []
        self.answer: Answer = ok

    def write(self, actions: Sequence[BulkAction], *, refresh: Any = None) -> list[BulkOutcome]:
        STEPS.append("send " + ",".join(f"{a.op}:{a.id}" for a in actions))
        self.calls.append((list(actions), refresh))
        return [self.answer(a) for a in actions]

    def _write(self, actions: Sequence[BulkAction], *, refresh: Any = None) -> list[BulkOutcome]:
        """What the pipeline calls (outcome objects are answers too): ``write``, which a
        test may replace."""
        return self.write(actions, refresh=refresh)


@pytest.fixture
def steps() -> Iterator[list[str]]:
    STEPS.clear()
    yield STEPS
    STEPS.clear()


@pytest.fixture
def mapper() -> Iterator[em.Mapper]:
    # port 9 (discard) on loopback: any request that did go out would fail the test
    with em.Mapper("http://127.0.0.1:9", models=[Person], index_prefix="unit_") as m:
        m.spec(Person).ensured.mark()
        m.writer = FakeWriter()  # type: ignore[assignment]
        yield m


def writer(mapper: em.Mapper) -> FakeWriter:
    fake = mapper.writer
    assert isinstance(fake, FakeWriter)
    return fake


def write(mapper: em.Mapper, kind: WriteKind, *docs: Person, **options: Any) -> list[PendingWrite]:
    info = mapper.repository(Person).info
    pendings = [PendingWrite(kind, doc, info) for doc in docs]
    return _writes.write_documents(mapper.services, pendings, Options(**options))


def stored(mapper: em.Mapper, *names: str) -> list[Person]:
    """Documents added through the fake writer: versioned ``1:7``, with a stored state."""
    docs = [Person(name=name) for name in names]
    write(mapper, "add", *docs)
    writer(mapper).calls.clear()
    return docs


def test_the_steps_run_in_the_pipeline_order(
    mapper: em.Mapper, steps: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    info = mapper.repository(Person).info
    normalize = type(info).normalize

    def normalizing(self: Any, doc: Any) -> None:
        steps.append(f"normalize {doc.name}")
        normalize(self, doc)

    def checking(doc_id: Any, **kwargs: Any) -> None:
        steps.append(f"check id {doc_id is not None}")
        check_id(doc_id, **kwargs)

    monkeypatch.setattr(type(info), "normalize", normalizing)
    monkeypatch.setattr("esmapper._writes.check_id", checking)

    def hear(name: str) -> Callable[..., None]:
        def receiver(sender: type, documents: Sequence[Any], **kwargs: Any) -> None:
            doc = documents[0].value
            steps.append(f"{name} id={doc.id is not None} version={doc.version}")
            if name == "changing":
                doc.name = "ada lovelace"  # the last change before the body is built

        return receiver

    # a non-ASCII id: the pipeline checks a plain ASCII id inline, others with check_id
    doc = Person(id="adé", name="ada")
    adding, changing = hear("adding"), hear("changing")
    added, changed = hear("added"), hear("changed")
    with (
        em.signals.documents_adding.connected_to(adding, sender=Person),
        em.signals.documents_changing.connected_to(changing, sender=Person),
        em.signals.documents_added.connected_to(added, sender=Person),
        em.signals.documents_changed.connected_to(changed, sender=Person),
    ):
        confirmed = write(mapper, "add", doc)

    assert [p.doc for p in confirmed] == [doc]
    [(actions, _)] = writer(mapper).calls
    assert actions[0].index == "unit_people"  # the alias, whose index was ensured
    assert actions[0].body is not None and actions[0].body["name"] == "ada lovelace"
    assert steps == [
        "adding id=True version=None",  # ids and dates come first: receivers see them
        "normalize ada",
        "validate ada",
        "check id True",
        "changing id=True version=None",
        f"send create:{doc.id}",
        "added id=True version=1:7",  # settled (version written back) before "-ed"
        "changed id=True version=1:7",
    ]


def test_a_confirmed_add_gets_id_dates_version_and_stored_state(mapper: em.Mapper) -> None:
    doc = Person(name="ada", tags=["a"])
    write(mapper, "add", doc, consistency="wait")

    [(actions, refresh)] = writer(mapper).calls
    assert refresh == "wait_for"
    assert [(a.op, a.index, a.id) for a in actions] == [("create", "unit_people", doc.id)]
    assert actions[0].body is not None and actions[0].body["name"] == "ada"
    assert doc.id is not None and doc.version == "1:7"
    assert doc.created_utc is not None and doc.created_utc == doc.updated_utc
    state = state_of(doc)
    assert state is not None and state.index == "people-v1"
    assert state.original is not None and state.original["tags"] == ["a"]


def test_a_save_of_a_versioned_document_is_conditional_on_its_version(
    mapper: em.Mapper,
) -> None:
    [doc] = stored(mapper, "ada")
    doc.name = "ada lovelace"
    writer(mapper).answer = lambda a: ok(a, seq_no=8)
    write(mapper, "save", doc)

    [(actions, _)] = writer(mapper).calls
    assert [(a.op, a.if_seq_no, a.if_primary_term) for a in actions] == [("index", 7, 1)]
    assert doc.version == "1:8"


def test_each_item_gets_its_own_outcome_and_a_failed_one_is_left_as_it_was(
    mapper: em.Mapper,
) -> None:
    a, b, c = stored(mapper, "a", "b", "c")
    state_b = state_of(b)
    assert state_b is not None
    original_b = dict(state_b.original or {})
    for doc in (a, b, c):
        doc.name += "!"
    writer(mapper).answer = lambda action: (
        refused(action) if action.id == b.id else ok(action, seq_no=9)
    )

    with pytest.raises(VersionConflictError) as caught:
        write(mapper, "save", a, b, c)

    assert list(caught.value.ids) == [b.id]
    assert [f.document for f in caught.value.failures] == [b]
    assert caught.value.succeeded == [a, c]
    assert a.version == c.version == "1:9"
    assert b.version == "1:7"  # the failed item: version and stored state untouched
    assert state_of(b) is state_b and state_b.original == original_b
    assert b.name == "b!"  # the caller's change is kept for a retry


def test_a_duplicate_add_raises_duplicate_document_error(mapper: em.Mapper) -> None:
    doc = Person(id="taken", name="ada")
    writer(mapper).answer = refused
    with pytest.raises(DuplicateDocumentError) as caught:
        write(mapper, "add", doc)
    assert list(caught.value.ids) == ["taken"] and caught.value.succeeded == []
    assert doc.version is None and state_of(doc) is None


def test_mixed_failures_raise_one_bulk_write_error_naming_each(mapper: em.Mapper) -> None:
    docs = [Person(id=f"p{i}", name=f"p{i}") for i in range(3)]
    answers = {"p0": refused, "p1": lambda a: refused(a, 400, "mapper_parsing_exception")}
    writer(mapper).answer = lambda a: answers.get(a.id or "", ok)(a)

    with pytest.raises(BulkWriteError) as caught:
        write(mapper, "add", *docs)

    assert [(f.id, f.status, f.document) for f in caught.value.failures] == [
        ("p0", 409, docs[0]),
        ("p1", 400, docs[1]),
    ]
    assert caught.value.succeeded == [docs[2]]
    assert docs[2].version == "1:7" and docs[0].version is None


def test_a_veto_in_an_ing_signal_sends_nothing_and_undoes_ids_and_dates(
    mapper: em.Mapper,
) -> None:
    doc = Person(name="ada")

    def veto(sender: type, **kwargs: Any) -> None:
        raise RuntimeError("not today")

    with (
        em.signals.documents_adding.connected_to(veto, sender=Person),
        pytest.raises(RuntimeError, match="not today"),
    ):
        write(mapper, "add", doc)

    assert writer(mapper).calls == []
    assert doc.id is None and doc.created_utc is None and doc.updated_utc is None


def test_an_invalid_document_sends_nothing_for_any_item(mapper: em.Mapper) -> None:
    good, bad = Person(name="good"), Person(name="invalid")
    with pytest.raises(DocumentValidationError, match="must not be 'invalid'"):
        write(mapper, "add", good, bad)
    assert writer(mapper).calls == []
    assert good.id is None and bad.id is None


def test_validate_false_skips_the_models_checks(mapper: em.Mapper, steps: list[str]) -> None:
    doc = Person(name="invalid")
    write(mapper, "add", doc, validate=False)
    assert not [s for s in steps if s.startswith("validate")]
    assert doc.version == "1:7"


def test_a_list_mutated_in_place_is_checked_before_anything_is_sent(mapper: em.Mapper) -> None:
    doc = Person(name="ada")
    doc.tags.append(3)  # type: ignore[arg-type]  # not a str: caught by normalization
    with pytest.raises(DocumentValidationError, match="tags"):
        write(mapper, "add", doc)
    assert writer(mapper).calls == []


def test_removing_a_document_already_gone_is_no_failure(mapper: em.Mapper) -> None:
    [doc] = stored(mapper, "ada")
    heard: list[Any] = []
    writer(mapper).answer = lambda a: refused(a, 404, "not_found")

    def removed(sender: type, **kwargs: Any) -> None:
        heard.append(kwargs)

    with em.signals.documents_removed.connected_to(removed, sender=Person):
        confirmed = write(mapper, "remove", doc)

    assert confirmed == [] and heard == []  # nothing was removed by this call
    assert state_of(doc) is None  # but the document is no longer a stored one


def test_a_failing_ed_receiver_is_logged_and_the_write_stands(
    mapper: em.Mapper, caplog: pytest.LogCaptureFixture
) -> None:
    doc = Person(name="ada")

    def broken(sender: type, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    with (
        em.signals.documents_added.connected_to(broken, sender=Person),
        caplog.at_level(logging.ERROR),
    ):
        confirmed = write(mapper, "add", doc)

    assert [p.doc for p in confirmed] == [doc] and doc.version == "1:7"
    assert "receiver bug" in caplog.text


def test_a_request_error_settles_the_answered_items_then_raises(mapper: em.Mapper) -> None:
    a, b = Person(id="a", name="a"), Person(id="b", name="b")

    def half(actions: Sequence[BulkAction], *, refresh: Any = None) -> list[BulkOutcome]:
        # the first chunk was answered, the second request rejected as a whole
        raise BulkRequestError("second chunk rejected", status=400, outcomes=[ok(actions[0])])

    writer(mapper).write = half  # type: ignore[method-assign]
    with pytest.raises(BulkRequestError, match="second chunk rejected"):
        write(mapper, "add", a, b)
    assert a.version == "1:7" and state_of(a) is not None
    assert b.version is None and state_of(b) is None


def test_no_pendings_sends_nothing(mapper: em.Mapper) -> None:
    assert _writes.write_documents(mapper.services, [], Options()) == []
    assert writer(mapper).calls == []


def test_the_servers_items_settle_applied_writes_as_outcomes_do(mapper: em.Mapper) -> None:
    # the real writer answers an applied write with the server's item itself
    items: dict[str, BulkItem] = {}

    def answers(actions: Sequence[BulkAction], *, refresh: Any = None) -> list[Any]:
        STEPS.append("send")
        return [refused(a) if items.get(a.id or "") is None else items[a.id or ""] for a in actions]

    a, b, c, d = (Person(id=i, name=i) for i in "abcd")
    items["a"] = decode_items(
        b'{"items":[{"create":{"_id":"a","_index":"people-v3","status":201,"_seq_no":4,'
        b'"_primary_term":2}}]}'
    )[0]  # type: ignore[index]
    items["b"] = item_of({"_id": "b", "status": 201, "_seq_no": 5, "_primary_term": 2})
    items["c"] = item_of({"_id": "c", "status": 201})  # a server that says nothing of versions
    writer(mapper)._write = answers  # type: ignore[method-assign]

    with pytest.raises(DuplicateDocumentError) as caught:
        write(mapper, "add", a, b, c, d)

    assert caught.value.succeeded == [a, b, c] and list(caught.value.ids) == ["d"]
    assert (a.version, b.version, c.version, d.version) == ("2:4", "2:5", None, None)
    states = [state_of(doc) for doc in (a, b, c)]
    assert [s.index if s else None for s in states] == ["people-v3", "unit_people", "unit_people"]
    assert all(s is not None and s.original is not None for s in states)
    assert state_of(d) is None  # the failed add: nothing stored


def test_an_add_sends_the_encoders_bytes_and_keeps_them_as_the_original(
    mapper: em.Mapper,
) -> None:
    doc = Person(name="ada", tags=["a"])
    write(mapper, "add", doc)

    [(actions, _refresh)] = writer(mapper).calls
    sent = actions[0].source
    assert sent is not None and actions[0].body_as_held is sent  # no dict was built
    assert sent == _json.dumps(Person.__esmapper__.to_source(doc))
    state = state_of(doc)
    assert state is not None and state.original_or_bytes is sent
    assert state.original == Person.__esmapper__.to_source(doc)  # decoded when read


def test_a_save_of_a_document_whose_original_is_bytes_sends_bytes_without_decoding(
    mapper: em.Mapper,
) -> None:
    [doc] = stored(mapper, "ada")
    doc.name = "grace"
    write(mapper, "save", doc)

    [(actions, _refresh)] = writer(mapper).calls
    assert actions[0].op == "index" and actions[0].source is not None
    assert actions[0].body_as_held is actions[0].source
    assert _json.loads(actions[0].source)["name"] == "grace"


def test_a_save_keeps_undeclared_stored_fields_through_the_dict_path(mapper: em.Mapper) -> None:
    source = {"name": "ada", "tags": [], "added_by_a_newer_deploy": {"x": 1}}
    doc = Person.__esmapper__.from_source(source, "p1", "1:3", DocState(_json.dumps(source)))
    doc.name = "grace"
    write(mapper, "save", doc)

    [(actions, _refresh)] = writer(mapper).calls
    assert actions[0].source is None
    assert actions[0].body is not None and actions[0].body["added_by_a_newer_deploy"] == {"x": 1}


def test_a_value_the_encoder_cannot_express_takes_the_dict_path(mapper: em.Mapper) -> None:
    doc = Person(name="ada")
    object.__setattr__(doc, "name", 2**70)  # beyond orjson's ints: the dict path decides
    write(mapper, "add", doc)

    [(actions, _refresh)] = writer(mapper).calls
    assert actions[0].source is None and actions[0].body_as_held == {
        **Person.__esmapper__.to_source(doc),
        "name": 2**70,
    }
    with pytest.raises(TypeError, match="not JSON serializable"):  # what the writer says
        encode_all(actions)
