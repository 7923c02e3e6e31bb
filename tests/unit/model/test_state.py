"""DocState: what the store last confirmed, with an original that may arrive as bytes."""

from __future__ import annotations

from esmapper import _json
from esmapper.model.state import DocState


def test_an_original_given_as_bytes_is_decoded_once_when_first_read() -> None:
    sent = {"name": "Ada", "tags": ["a", "b"], "age": 36, "score": 1.5}
    state = DocState(_json.dumps(sent), "employees-v1", version="1:7")

    assert state.original_or_bytes == _json.dumps(sent)  # not decoded yet
    first = state.original
    assert first == sent
    assert state.original is first  # decoded once, then kept
    held: object = state.original_or_bytes
    assert held is first


def test_an_original_given_as_a_dict_is_kept_as_is() -> None:
    source = {"name": "Ada"}
    state = DocState(source)
    assert state.original is source


def test_assigning_bytes_replaces_a_decoded_original() -> None:
    state = DocState({"name": "Ada"})
    state.original = _json.dumps({"name": "Grace"})
    assert state.original == {"name": "Grace"}


def test_no_original() -> None:
    assert DocState(None).original is None
