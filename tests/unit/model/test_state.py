"""DocState: what the store last confirmed, with an original that may arrive as bytes."""

from __future__ import annotations

from typing import Any

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


def _run(lines: list[str], ns: dict[str, object], **given: object) -> dict[str, object]:
    ns.update(given)
    exec("\n".join(lines), ns)
    return ns


def test_generated_state_code_makes_what_the_constructor_makes() -> None:
    from esmapper.model.state import loaded_state_code

    ns: dict[str, object] = {}
    lines = loaded_state_code(
        ns, "st", original="orig", index="idx", version="ver", condition="cond"
    )
    made = _run(lines, ns, orig=b"{}", idx="i-v1", ver="2:7", cond=("2:7", 7, 2))["st"]
    want = DocState(b"{}", "i-v1", None, False, "2:7", ("2:7", 7, 2))
    assert type(made) is DocState
    assert {s: getattr(made, s) for s in DocState.__slots__} == {
        s: getattr(want, s) for s in DocState.__slots__
    }


def test_generated_version_code_gives_what_version_of_gives() -> None:
    from esmapper.model.state import version_code, version_of

    lines = version_code("seq", "term", "v", "c")
    for seq, term in [(7, 2), (0, 1), (None, 1), (3, None), (None, None)]:
        ns = _run(lines, {}, seq=seq, term=term)
        assert (ns["v"], ns["c"]) == version_of(seq, term)
        condition: Any = ns["c"]
        if condition is not None:
            assert condition[0] is ns["v"]  # the condition holds the version itself
