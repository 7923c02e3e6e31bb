"""Follow a parameter through the code as it runs: which files it enters, how often it
climbs back up the layers, how often it returns to a file it had left.

    python -m tools.flow_trace                 # every scenario, on a local test server
    python -m tools.flow_trace patch_all --depth 0 --url http://127.0.0.1:9200

What is measured (issue 27's "Done when"). A scenario runs an operation; the followed
object is the argument ``param`` of the first call of ``target`` (``repo`` of
``esmapper._by_query.patch_all``). During that call, every Python call of a function of
the package (``sys.setprofile``, every thread; generated code such as attrs' ``__init__``
left out) is *recorded* when one of its arguments
(``self`` included; ``*args`` items and ``**kwargs`` values too) is *followed*: the object
itself or, with ``depth`` n, an object reached from it by up to n instance attributes
(``__dict__`` and ``__slots__`` values at the moment it was captured; properties are not
called) that is not a scalar, a class, a function or a module (those are shared by
everything: following them would follow the whole program). ``attrs`` limits the
attributes followed to the ones named. ``closures``: a function's free variables count as
arguments too (a nested function that uses the object without receiving it).

A recorded call's *parent* is the nearest recorded frame up its stack (the frame that had
the object before it). From the recorded calls, in the order they were made:

- ``files``: the distinct files of the package the recorded calls are in;
- ``climbs``: recorded calls whose module is in a higher layer (``tools/layers.py``) than
  their parent's;
- ``returns``: in the sequence of recorded calls, a call into a file already entered
  earlier, whose previous call was in another file (the object came back to a file it had
  left).

Loops repeat calls (one per hit, per chunk): the headline figures count each call edge
(parent function -> function) once, as a reading of the code does: ``climbs`` are distinct
climbing edges, ``returns`` are counted on the sequence of first calls of each edge. The
``dynamic`` figures count every call.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import enum
import json
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tools.layers import layer_name, layer_of

__all__ = [
    "Call",
    "Figures",
    "Follow",
    "followed_ids",
    "measure",
    "trace",
]

_SCALARS = (type(None), bool, int, float, complex, str, bytes, enum.Enum, dt.date, dt.timedelta)
_SHARED = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)
_VARARGS = 0x04
_VARKEYWORDS = 0x08


@dataclasses.dataclass(frozen=True)
class Follow:
    """What to follow: the argument ``param`` of the first call of the function ``name``
    of module ``module``; ``depth``/``attrs``/``closures``: see the module docstring."""

    module: str
    name: str
    param: str
    depth: int = 1
    attrs: frozenset[str] | None = None
    closures: bool = False
    package: str = "esmapper"


@dataclasses.dataclass(frozen=True)
class Call:
    """One recorded call: the function's module, file (relative to the package's parent
    directory) and qualified name, and the index of its parent call (``None``: the
    followed call itself, or a call in a thread started under it)."""

    module: str
    file: str
    function: str
    parent: int | None
    #: the module of the interface the call was made through (``esmapper._context`` for
    #: a ``Context`` method of the mapper, ``esmapper._features`` for a feature point),
    #: ``None`` for a direct call
    interface: str | None = None


def _attributes(obj: object) -> Iterator[tuple[str, object]]:
    names = getattr(obj, "__dict__", None)
    if isinstance(names, dict):
        yield from names.items()
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                with contextlib.suppress(AttributeError):
                    yield slot, getattr(obj, slot)


def _followable(obj: object) -> bool:
    return not isinstance(obj, _SCALARS + _SHARED)


def followed_ids(obj: object, depth: int, attrs: frozenset[str] | None = None) -> set[int]:
    """The ids of ``obj`` and of what ``depth`` levels of its attributes reach (named in
    ``attrs``, when given), scalars, classes, functions and modules left out."""
    found = {id(obj)}
    frontier = [obj]
    for _ in range(depth):
        reached = []
        for item in frontier:
            for name, value in _attributes(item):
                wanted = attrs is None or name in attrs
                if wanted and _followable(value) and id(value) not in found:
                    found.add(id(value))
                    reached.append(value)
        frontier = reached
    return found


def _arguments(frame: types.FrameType, closures: bool) -> Iterator[object]:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    if code.co_flags & _VARARGS:
        names.append(code.co_varnames[count])
        count += 1
    if code.co_flags & _VARKEYWORDS:
        names.append(code.co_varnames[count])
    local = frame.f_locals
    for i, name in enumerate(names):
        value = local.get(name)
        if i >= code.co_argcount + code.co_kwonlyargcount:  # *args / **kwargs
            items = value.values() if isinstance(value, dict) else value
            yield from items or ()
        else:
            yield value
    if closures:
        for name in code.co_freevars:
            yield local.get(name)


def _interface(frame: types.FrameType) -> str | None:
    """The module declaring the interface a method call was made through: a method of
    the ``Context`` (``esmapper._context``'s alias of the mapper's ``Services``), a
    feature point."""
    from esmapper._features import POINTS, Feature
    from esmapper._services import Services

    name = frame.f_code.co_name
    code = frame.f_code
    this = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
    if isinstance(this, Feature) and name in POINTS:
        return Feature.__module__
    members = {n for n in vars(Services) if not n.startswith("_")}
    if name in members and frame.f_globals.get("__name__") == Services.__module__:
        return "esmapper._context"
    return None


def trace(run: Callable[[], Any], follow: Follow, root: Path) -> list[Call]:
    """Run ``run`` and return the calls recorded during the first call of the followed
    function (module docstring). ``root``: the directory file names are made relative to."""
    calls: list[Call] = []
    recorded: dict[types.FrameType, int] = {}
    state: dict[str, Any] = {"ids": None, "target": None}
    prefix = follow.package
    lock = threading.Lock()

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not (module == prefix or module.startswith(prefix + ".")):
            return
        if frame.f_code.co_filename.startswith("<"):  # generated code (attrs' __init__...)
            return
        if event == "return":
            if frame is state["target"]:
                state["ids"] = None
                state["target"] = None
            with lock:
                recorded.pop(frame, None)
            return
        ids = state["ids"]
        if ids is None:
            if (
                state["target"] is None
                and module == follow.module
                and frame.f_code.co_name == follow.name
                and not calls
            ):
                obj = frame.f_locals[follow.param]
                state["ids"] = followed_ids(obj, follow.depth, follow.attrs)
                state["target"] = frame
                _record(frame, module, None)
            return
        if any(id(value) in ids for value in _arguments(frame, follow.closures)):
            parent = frame.f_back
            with lock:
                while parent is not None and parent not in recorded:
                    parent = parent.f_back
                _record(frame, module, None if parent is None else recorded[parent])

    def _record(frame: types.FrameType, module: str, parent: int | None) -> None:
        path = Path(frame.f_code.co_filename)
        with contextlib.suppress(ValueError):
            path = path.relative_to(root)
        recorded[frame] = len(calls)
        qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # 3.11+
        calls.append(Call(module, path.as_posix(), qualname, parent, _interface(frame)))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return calls


@dataclasses.dataclass(frozen=True)
class Figures:
    """What :func:`measure` found (module docstring)."""

    files: tuple[str, ...]
    climbs: tuple[tuple[str, str], ...]
    returns: tuple[tuple[str, str], ...]
    dynamic_calls: int
    dynamic_climbs: int
    dynamic_returns: int

    def summary(self) -> dict[str, int]:
        return {
            "files": len(self.files),
            "climbs": len(self.climbs),
            "returns": len(self.returns),
            "calls": self.dynamic_calls,
            "dynamic_climbs": self.dynamic_climbs,
            "dynamic_returns": self.dynamic_returns,
        }


def _returns(files: Sequence[str]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    found = []
    for i, file in enumerate(files):
        if i and file != files[i - 1] and file in seen:
            found.append((files[i - 1], file))
        seen.add(file)
    return found


def measure(
    calls: Sequence[Call], layer: Callable[[str], int] = layer_of, *, interfaces: bool = False
) -> Figures:
    """Files, climbs and returns of a recorded call sequence (module docstring).
    ``interfaces``: a call made through an interface (a ``Context`` method, a feature
    point) is in the layer of the module that declares the interface, as a reader
    following the code meets it (the caller names only the interface)."""

    def name(call: Call) -> str:
        return f"{call.module}.{call.function}"

    edges: dict[tuple[str, str], int] = {}
    climbs: list[tuple[str, str]] = []
    dynamic_climbs = 0
    for i, call in enumerate(calls):
        if call.parent is None:
            continue
        parent = calls[call.parent]
        edge = (name(parent), name(call))
        called = call.interface if interfaces and call.interface else call.module
        climbing = layer(called) > layer(parent.module)
        dynamic_climbs += climbing
        if edge not in edges:
            edges[edge] = i
            if climbing:
                climbs.append(edge)
    first = sorted({0, *edges.values()}) if calls else []
    files: list[str] = []
    for call in calls:
        if call.file not in files:
            files.append(call.file)
    return Figures(
        files=tuple(files),
        climbs=tuple(climbs),
        returns=tuple(_returns([calls[i].file for i in first])),
        dynamic_calls=len(calls),
        dynamic_climbs=dynamic_climbs,
        dynamic_returns=len(_returns([c.file for c in calls])),
    )


# -- scenarios (a real mapper against a test server) ----------------------------------


def _models() -> tuple[type, type, type]:
    import esmapper as em

    class FlowWidget(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
        class Index:
            name = "flow_widgets"
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
            cache = dt.timedelta(minutes=5)

        name: str = em.field(em.Keyword(), default="")
        group: str = em.field(em.Keyword(), default="")
        n: int = em.field(em.Integer(), default=0)

    class FlowEmployee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
        class Index:
            name = "flow_employees"
            tenant_field = "company_id"
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

        name: str = em.field(em.Keyword(), default="")
        company_id: str = em.field(em.Keyword(), default="")

    class FlowNote(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
        class Index:
            name = "flow_notes"
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

        text: str = em.field(em.Keyword(), default="")
        n: int = em.field(em.Integer(), default=0)

    return FlowWidget, FlowEmployee, FlowNote


def _scenarios(url: str) -> dict[str, tuple[Follow, Callable[[], Any]]]:
    """name -> (what to follow, the operation); each runs on its own index prefix."""
    import esmapper as em

    widget, employee, note = _models()

    def mapper(tag: str) -> em.Mapper:
        made = em.Mapper(url, models=[widget, employee, note], index_prefix=f"flow-{tag}-")
        made.delete_indexes()
        made.configure_indexes()
        return made

    def patch_all() -> None:
        m = mapper("patch")
        repo: em.Repository[Any] = m.repository(widget)
        repo.add([widget(name=f"w{i}", group="a", n=i) for i in range(3)], consistency="immediate")
        run(lambda: repo.patch_all("group:a", em.PartialPatch({"n": 7}), consistency="immediate"))
        m.delete_indexes()
        m.close()

    def patch_all_custom() -> None:
        m = mapper("custom")
        m.custom_fields(employee).add_field("acme", "Level", "int")
        repo: em.Repository[Any] = m.repository(employee)
        docs = [
            employee(name=f"e{i}", company_id="acme", custom_fields={"Level": i}) for i in range(3)
        ]
        repo.add(docs, consistency="immediate")
        run(
            lambda: repo.patch_all(
                "Level:>=0",
                em.PartialPatch({"custom_fields": {"Level": 5}}),
                tenant="acme",
                consistency="immediate",
            )
        )
        m.delete_indexes()
        m.close()

    def patch_all_script() -> None:  # a model not cached: one _update_by_query
        m = mapper("script")
        repo: em.Repository[Any] = m.repository(note)
        repo.add([note(text=f"t{i}", n=i) for i in range(3)], consistency="immediate")
        script = em.ScriptPatch("ctx._source.n += params.k", params={"k": 1})
        run(lambda: repo.patch_all("n:>=0", script, consistency="immediate"))
        m.delete_indexes()
        m.close()

    def remove_all() -> None:  # a cached model: the scan's pages as conditional deletes
        m = mapper("remove")
        repo: em.Repository[Any] = m.repository(widget)
        repo.add([widget(name=f"w{i}", group="a", n=i) for i in range(3)], consistency="immediate")
        run(lambda: repo.remove_all("group:a", consistency="immediate"))
        m.delete_indexes()
        m.close()

    def remove_all_by_query() -> None:  # a model not cached, no receivers: _delete_by_query
        m = mapper("delete")
        repo: em.Repository[Any] = m.repository(note)
        repo.add([note(text=f"t{i}", n=i) for i in range(3)], consistency="immediate")
        run(lambda: repo.remove_all("n:>=0", consistency="immediate"))
        m.delete_indexes()
        m.close()

    def write_documents() -> None:
        m = mapper("write")
        repo: em.Repository[Any] = m.repository(widget)
        run(lambda: repo.add([widget(name=f"w{i}", group="a") for i in range(3)]))
        m.delete_indexes()
        m.close()

    patch = Follow("esmapper._by_query", "patch_all", "listing")
    remove = Follow("esmapper._by_query", "remove_all", "listing")
    write = Follow("esmapper._writes", "write_documents", "options")
    return {
        "patch_all": (patch, patch_all),
        "patch_all_custom": (patch, patch_all_custom),
        "patch_all_script": (patch, patch_all_script),
        "remove_all": (remove, remove_all),
        "remove_all_by_query": (remove, remove_all_by_query),
        "write_documents": (write, write_documents),
    }


_running: dict[str, Any] = {}


def run(operation: Callable[[], Any]) -> None:
    """Run ``operation`` traced (a scenario calls it for the part that is measured)."""
    _running["calls"] = trace(operation, _running["follow"], _running["root"])


def _module_of(name: str) -> str:
    """The module of ``module.qualified.name`` (the longest prefix placed in a layer)."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:end])
        with contextlib.suppress(KeyError):
            layer_of(module)
            return module
    raise KeyError(f"{name!r}: no module of it is in a layer")


def _report(
    name: str, follow: Follow, calls: Sequence[Call], verbose: bool, interfaces: bool = False
) -> dict[str, Any]:
    figures = measure(calls, interfaces=interfaces)
    how = ", through interfaces" if interfaces else ""
    followed = f"{follow.module}.{follow.name}({follow.param})"
    print(f"{name}: follow {followed}, depth {follow.depth}{how}")
    print("  " + ", ".join(f"{k} {v}" for k, v in figures.summary().items()))
    if verbose:
        print("  files:", *figures.files, sep="\n    ")
        print("  climbs:")
        for low, high in figures.climbs:
            print(f"    {low} [{layer_name(_module_of(low))}] -> {high}")
        print("  returns:", *(f"{a} -> {b}" for a, b in figures.returns), sep="\n    ")
    return {"scenario": name, "depth": follow.depth, "interfaces": interfaces, **figures.summary()}


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--url", help="an Elasticsearch to use (default: start a local one)")
    parser.add_argument("--depth", type=int, action="append", help="attribute depth (repeatable)")
    parser.add_argument("--attrs", help="follow only these attributes (comma-separated)")
    parser.add_argument("--closures", action="store_true", help="free variables count too")
    parser.add_argument(
        "--interfaces",
        action="store_true",
        help="a Context method or feature point call is in its interface's layer",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list files, climbs, returns")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(list(argv) if argv is not None else None)

    import esmapper

    root = Path(esmapper.__file__).resolve().parent.parent
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            from esmapper.testing.server import LocalServer

            url = stack.enter_context(LocalServer()).url
        scenarios = _scenarios(url)
        results = []
        for name in args.scenarios or list(scenarios):
            base, operation = scenarios[name]
            for depth in args.depth or [1]:
                follow = dataclasses.replace(
                    base,
                    depth=depth,
                    attrs=frozenset(args.attrs.split(",")) if args.attrs else None,
                    closures=args.closures,
                )
                _running.update(follow=follow, root=root)
                operation()
                calls = _running.pop("calls")
                results.append(_report(name, follow, calls, args.verbose, args.interfaces))
        if args.json:
            print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
