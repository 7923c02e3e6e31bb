"""``FieldCatalog.with_server``: declared names win and never call the server; names not
declared resolve in the server's fields; ``in`` answers for declared names only."""

from __future__ import annotations

from esmapper.model.catalog import FieldCatalog

DECLARED = FieldCatalog({"properties": {"name": {"type": "text"}, "age": {"type": "long"}}})
SERVER = FieldCatalog({"properties": {"name": {"type": "keyword"}, "color": {"type": "keyword"}}})


def test_the_server_is_asked_only_for_names_not_declared() -> None:
    calls: list[int] = []

    def server() -> FieldCatalog:
        calls.append(1)
        return SERVER

    widened = DECLARED.with_server(server)
    assert widened.resolve("name").type == "text"
    assert "color" not in widened and "name" in widened
    assert calls == []
    assert widened.resolve("color").type == "keyword"
    assert calls == [1]
    assert widened.names() == ["age", "color", "name"]
    assert DECLARED.get("color") is None  # the original is not widened


def test_a_server_without_fields_leaves_the_declared_ones() -> None:
    widened = DECLARED.with_server(lambda: None)
    assert widened.get("color") is None
    assert widened.names() == ["age", "name"]
