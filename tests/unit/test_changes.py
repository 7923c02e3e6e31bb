"""A session's change detection (``esmapper._changes.changed``): its verdicts are the
``to_source`` dict comparison's (the document differs from the stored source and from
what the model makes of it), reached from the encoder's bytes and mirrors, without
decoding an original held as bytes into the state."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from esmapper import _changes, _json
from esmapper.model.state import DocState, state_of
from tests.unit.model.models import Address, Everything

INFO = Everything.__esmapper__
BORN = dt.datetime(2020, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)


def source() -> dict[str, Any]:
    """A stored source as this model writes it."""
    doc = Everything(
        id="e1",
        name="ada",
        age=36,
        rating=1.5,
        born=BORN,
        tags=["a", "b"],
        address=Address(street="s", city="c", zip_code=1),
        meta={"b": 1, "a": [1, 2.5]},
    )
    return INFO.to_source(doc)  # type: ignore[no-any-return]


def loaded(raw: bytes) -> Any:
    """The document of a stored source held as its bytes (as a read holds it)."""
    state = DocState(raw, "everything-v1")
    return INFO.from_source(_json.loads(raw), "e1", None, state)


def dict_verdict(doc: Any, raw: bytes) -> bool:
    """The comparison of ``to_source`` dicts (what the session compared before)."""
    current, stored = INFO.to_source(doc), _json.loads(raw)
    if current == stored:
        return False
    return bool(current != INFO.to_source(INFO.from_source(stored, doc.id, None)))


def spelled(change: Callable[[dict[str, Any]], Any]) -> bytes:
    stored = source()
    change(stored)
    return _json.dumps(stored)


#: stored sources: as written, and spelled or shaped otherwise by another writer
STORED: dict[str, Callable[[], bytes]] = {
    "as written": lambda: _json.dumps(source()),
    "keys in another order": lambda: _json.dumps(dict(reversed(list(source().items())))),
    "with spaces": lambda: _json.dumps(source()).replace(b",", b", "),
    "a field added since": lambda: spelled(lambda s: s.pop("nickname")),
    "an undeclared key": lambda: spelled(lambda s: s.update(extra=1)),
    "an int for a float": lambda: spelled(lambda s: s.update(rating=2)),
    "a date with an offset": lambda: spelled(
        lambda s: s.update(born="2020-01-02T03:04:05.678+00:00")
    ),
    "free-form keys reordered": lambda: spelled(lambda s: s.update(meta={"a": [1, 2.5], "b": 1})),
}


def _set(name: str, value: Any) -> Callable[[Any], None]:
    return lambda doc: setattr(doc, name, value)


#: changes made to the loaded document (some of them change nothing stored)
CHANGES: dict[str, Callable[[Any], Any]] = {
    "nothing": lambda doc: None,
    "an int": _set("age", 37),
    "the same int": _set("age", 36),
    "a float to an int's value": _set("rating", 2.0),
    "a list appended": lambda doc: doc.tags.append("c"),
    "an embedded field": lambda doc: setattr(doc.address, "city", "d"),
    "a date": _set("born", BORN + dt.timedelta(microseconds=1)),
    "the same date": _set("born", BORN),
    "free-form, same content": _set("meta", {"a": [1, 2.5], "b": 1}),
    "free-form, int for float": _set("meta", {"b": 1.0, "a": [1, 2.5]}),
    "free-form changed": _set("meta", {"b": 2, "a": [1, 2.5]}),
    "a value to None": _set("address", None),
}


@pytest.mark.parametrize("stored", list(STORED))
@pytest.mark.parametrize("change", list(CHANGES))
def test_the_verdict_is_the_dict_comparisons(stored: str, change: str) -> None:
    raw = STORED[stored]()
    doc = loaded(raw)
    CHANGES[change](doc)

    assert _changes.changed([doc]) == [dict_verdict(doc, raw)]
    state = state_of(doc)
    assert state is not None and state.original_or_bytes is raw  # never decoded into it


def test_a_batch_holds_each_documents_verdict_in_order() -> None:
    raw = _json.dumps(source())
    docs = [loaded(raw) for _ in range(4)]
    docs[1].age = 1
    docs[3].tags.append("z")
    new = Everything(id="e9")

    assert _changes.changed([*docs, new]) == [False, True, False, True, True]


def test_an_unchanged_document_is_decided_by_its_bytes_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = loaded(_json.dumps(source()))

    def refused(*args: Any) -> Any:
        raise AssertionError("nothing needs the stored source's model form")

    monkeypatch.setattr(_changes, "hydrate", refused)
    assert _changes.changed([doc]) == [False]


@pytest.mark.parametrize(
    ("a", "b", "differs"),
    [
        (1, 1, False),
        (1, 2, True),
        ("x", "y", True),
        (None, 1, True),
        ([1, 2], [1, 2, 3], True),
        ([1.0], [1.0], False),
    ],
)
def test_plain_mirror_values_compare_as_json(a: Any, b: Any, differs: bool) -> None:
    assert _changes._differs(a, b) is differs
