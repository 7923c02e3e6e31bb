"""esmapper._json: both backends write the same bytes for document values."""

from __future__ import annotations

import datetime as dt
import enum
import importlib.util
import sys
import uuid
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

from esmapper import _json


class Color(enum.Enum):
    RED = "red"


VALUE: dict[str, Any] = {
    "s": "Zoë ✓",
    "i": 12,
    "f": 1.5,
    "b": True,
    "n": None,
    "l": [1, "a", (2, 3)],
    "aware": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc),
    "naive": dt.datetime(2026, 1, 2, 3, 4, 5),
    "d": dt.date(2026, 1, 2),
    "u": uuid.UUID(int=1),
    "e": Color.RED,
    "m": MappingProxyType({"k": MappingProxyType({"x": 1})}),
}
EXPECTED = (
    '{"s":"Zoë ✓","i":12,"f":1.5,"b":true,"n":null,"l":[1,"a",[2,3]],'
    '"aware":"2026-01-02T03:04:05.000006+00:00","naive":"2026-01-02T03:04:05",'
    '"d":"2026-01-02","u":"00000000-0000-0000-0000-000000000001","e":"red",'
    '"m":{"k":{"x":1}}}'
).encode()


def _stdlib_backend(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A fresh copy of esmapper._json imported while orjson cannot be imported."""
    monkeypatch.setitem(sys.modules, "orjson", None)
    spec = importlib.util.find_spec("esmapper._json")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_default_backend_is_orjson_when_installed() -> None:
    pytest.importorskip("orjson")
    assert _json.BACKEND == "orjson"


@pytest.mark.parametrize("backend", ["default", "stdlib"])
def test_dumps_is_compact_utf8_and_identical(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _stdlib_backend(monkeypatch) if backend == "stdlib" else _json
    if backend == "stdlib":
        assert module.BACKEND == "json"
    out = module.dumps(VALUE)
    assert isinstance(out, bytes)
    assert out == EXPECTED
    assert module.loads(out)["s"] == "Zoë ✓"
    assert module.loads(out.decode())["i"] == 12


@pytest.mark.parametrize("backend", ["default", "stdlib"])
def test_unserializable_raises_type_error(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _stdlib_backend(monkeypatch) if backend == "stdlib" else _json
    with pytest.raises(TypeError):
        module.dumps({"x": object()})
