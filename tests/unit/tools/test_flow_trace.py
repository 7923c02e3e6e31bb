"""tools/flow_trace.py counts what a followed parameter goes through: tried on a tiny
package of two layers written for the test, and the layer table on esmapper itself."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import esmapper
from tools.flow_trace import Follow, followed_ids, measure, trace
from tools.layers import LAYERS, layer_name, layer_of

HIGH = """
from flowpkg import low


class Part:
    pass


class Thing:
    def __init__(self):
        self.part = Part()
        self.n = 3
        self.name = "x"


def entry(thing):
    low.step(thing, 1)
    low.step(thing, 2)
    low.other(thing.part)
    unrelated(5)


def back(thing):
    return None


def unrelated(x):
    return x
"""

LOW = """
def step(thing, i):
    from flowpkg import high

    high.back(thing)


def other(part):
    return None
"""


@pytest.fixture
def flowpkg(tmp_path: Path) -> Iterator[ModuleType]:
    package = tmp_path / "flowpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text(textwrap.dedent(HIGH))
    (package / "low.py").write_text(textwrap.dedent(LOW))
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("flowpkg.high")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "flowpkg" or n.startswith("flowpkg.")]:
            del sys.modules[name]


def _layer(module: str) -> int:
    return {"flowpkg.low": 0, "flowpkg.high": 1}[module]


def _run(high: ModuleType, depth: int, root: Path) -> list[tuple[str, str, int | None]]:
    follow = Follow("flowpkg.high", "entry", "thing", depth=depth, package="flowpkg")
    calls = trace(lambda: high.entry(high.Thing()), follow, root)
    return [(c.file, c.function, c.parent) for c in calls]


def test_calls_receiving_the_object_are_recorded_with_the_frame_that_had_it_before(
    flowpkg: ModuleType, tmp_path: Path
) -> None:
    assert _run(flowpkg, 0, tmp_path) == [
        ("flowpkg/high.py", "entry", None),
        ("flowpkg/low.py", "step", 0),
        ("flowpkg/high.py", "back", 1),
        ("flowpkg/low.py", "step", 0),
        ("flowpkg/high.py", "back", 3),
    ]


def test_depth_one_follows_the_attributes_but_not_scalars(
    flowpkg: ModuleType, tmp_path: Path
) -> None:
    calls = _run(flowpkg, 1, tmp_path)
    assert calls[-1] == ("flowpkg/low.py", "other", 0)
    assert ("flowpkg/high.py", "unrelated", 0) not in calls  # 5 is not followed
    thing = flowpkg.Thing()
    assert followed_ids(thing, 1) == {id(thing), id(thing.part)}
    assert followed_ids(thing, 1, frozenset({"n"})) == {id(thing)}


def test_climbs_and_returns_count_each_call_edge_once(flowpkg: ModuleType, tmp_path: Path) -> None:
    follow = Follow("flowpkg.high", "entry", "thing", depth=1, package="flowpkg")
    figures = measure(trace(lambda: flowpkg.entry(flowpkg.Thing()), follow, tmp_path), _layer)
    assert figures.files == ("flowpkg/high.py", "flowpkg/low.py")
    # low.step -> high.back climbs (twice when run, one edge in the code)
    assert figures.climbs == (("flowpkg.low.step", "flowpkg.high.back"),)
    assert figures.dynamic_climbs == 2
    # first calls of each edge: entry(high) step(low) back(high) other(low)
    assert figures.returns == (
        ("flowpkg/low.py", "flowpkg/high.py"),
        ("flowpkg/high.py", "flowpkg/low.py"),
    )
    assert (figures.dynamic_calls, figures.dynamic_returns) == (6, 4)


def test_nothing_is_recorded_when_the_followed_function_is_not_called(
    flowpkg: ModuleType, tmp_path: Path
) -> None:
    follow = Follow("flowpkg.high", "missing", "thing", package="flowpkg")
    calls = trace(lambda: flowpkg.entry(flowpkg.Thing()), follow, tmp_path)
    assert calls == []
    assert measure(calls, _layer).files == ()


def test_every_module_of_the_package_has_a_layer() -> None:
    root = Path(esmapper.__file__).parent
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        layer_of(module)  # raises KeyError for a module no layer holds


def test_a_module_belongs_to_its_longest_prefix() -> None:
    assert layer_name("esmapper.indexes.spec") == "indexes"
    assert layer_name("esmapper.indexes._timeseries_feature") == "features"
    assert layer_of("esmapper.model.info") < layer_of("esmapper._writes")
    assert layer_of("esmapper.mapper") == len(LAYERS) - 2
    with pytest.raises(KeyError, match="elasticsearch"):
        layer_of("elasticsearch")


def test_through_interfaces_a_context_or_point_call_is_in_its_interface_s_layer() -> None:
    from tools.flow_trace import Call

    calls = [
        Call("esmapper._writes", "esmapper/_writes.py", "write_documents", None),
        Call("esmapper.mapper", "esmapper/mapper.py", "Mapper.spec", 0, "esmapper._context"),
        Call("esmapper._soft_deletes", "esmapper/_soft_deletes.py", "S.settle", 0, None),
    ]
    assert len(measure(calls).climbs) == 2  # as dispatched: the mapper, a feature module
    through = measure(calls, interfaces=True).climbs
    assert through == (("esmapper._writes.write_documents", "esmapper._soft_deletes.S.settle"),)
