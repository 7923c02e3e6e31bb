"""Issue 28 feasibility: msgspec for the write side's encoding (a script, not a test).

Measures, per document, in one process, for a batch of ``--docs`` documents of the bench's
``Employee`` (bench_models.py), the cost of turning new documents into the NDJSON lines
the bulk writer sends (``create`` action line + ``_source`` line), best of ``--repeat``:

* ``current``: ``info.to_source(doc)`` + ``BulkAction`` + ``_bulk_encode.encode_all``
  (orjson), what ``repo.add`` does today;
* ``dict+msgspec``: the same dicts, encoded by ``msgspec.json.Encoder`` instead of orjson;
* ``model direct``: ``msgspec.json.Encoder.encode(doc)`` on the attrs model itself
  (msgspec's native attrs support; NOT the same bytes, see the exactness lines);
* ``struct mirror``: a ``msgspec.Struct`` generated from the model's field specs
  (stored fields, declaration order), filled from the raw slots (no tracking hooks),
  dates passed as datetimes when aware UTC, enums as their values, ``any`` values, floats
  of 1e16 and more and ints beyond 64 bits as ``msgspec.Raw`` of ``_json.dumps`` (orjson's
  own bytes: msgspec writes ``1e16`` for orjson's ``1e+16``, encodes any int where orjson
  raises, and writes aware datetimes with ``Z`` inside free-form values), then encoded;
  what a write would cost if the written ``_source`` dict were not needed afterwards;
* ``struct mirror + dict``: the mirror's lines plus ``to_source`` (the write path keeps
  the written ``_source`` dict as the document's ``DocState.original``);
* ``struct mirror + decode``: the mirror's lines plus ``msgspec.json.decode`` of the
  source line (the ``original`` dict made from the bytes instead).

Prints the figures and whether each candidate's bytes equal the current path's, for the
bench model and for the models of the byte-for-byte tests (tests/unit/model/models.py
``Everything``/``Employee``, the edge-value ``Crate`` with embedded subclasses)::

    python bench/bench_codec_msgspec.py [--docs 1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import inspect
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_models import Employee, construct_esmapper, values

import esmapper as em
from esmapper import _bulk_encode, _json
from esmapper.bulk import BulkAction
from esmapper.model._tracking import TrackedSlot
from esmapper.model.dates import UTC, format_datetime

INDEX = "bench_employees-v1"


def _mapping_hook(obj: Any) -> Any:
    """What ``_json``'s orjson ``default`` does: any Mapping as an object."""
    from collections.abc import Mapping

    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


ENCODER = msgspec.json.Encoder(enc_hook=_mapping_hook)


# -- the struct mirror (prototype of what compile_codec would generate) -----------------


def _raw_getter(cls: type, name: str) -> Callable[[Any], Any]:
    found = inspect.getattr_static(cls, name)
    if isinstance(found, TrackedSlot):
        found = found.slot
    assert isinstance(found, types.MemberDescriptorType), (cls, name, found)
    return found.__get__  # type: ignore[no-any-return]


_MIRRORS: dict[type, Callable[[Any], Any]] = {}


def mirror(cls: type) -> Callable[[Any], Any]:
    """``to_struct(doc)`` for ``cls``: a generated function building its Struct mirror."""
    made = _MIRRORS.get(cls)
    if made is not None:
        return made
    specs = [s for s in cls.__esmapper__.fields if s.stored]  # type: ignore[attr-defined]
    struct = msgspec.defstruct(f"{cls.__name__}Mirror", [(s.name, Any) for s in specs])
    ns: dict[str, Any] = {
        "_S": struct,
        "_UTC": UTC,
        "_fmt": format_datetime,
        "_Raw": msgspec.Raw,
        "_dumps": _json.dumps,
        "_mirror": mirror,
    }
    reads, args = [], []
    for s in specs:
        ns[f"_g_{s.name}"] = _raw_getter(cls, s.name)
        var = f"_v_{s.name}"
        reads.append(f"    {var} = _g_{s.name}(doc)")
        if s.kind == "datetime":
            one = "({0} if {0}.tzinfo is _UTC else _fmt({0}))"
        elif s.kind == "enum":
            one = "{0}.value"
        elif s.kind == "inner":
            ns[f"_inner_{s.name}"] = s.inner
            ns[f"_imirror_{s.name}"] = mirror(s.inner)
            one = (
                f"(_imirror_{s.name}({{0}}) if type({{0}}) is _inner_{s.name} "
                "else _mirror(type({0}))({0}))"
            )
        elif s.kind == "any":  # msgspec writes aware datetimes, Decimals, int keys otherwise
            one = "_Raw(_dumps({0}))"
        elif s.kind == "float":  # msgspec writes 1e16 where orjson writes 1e+16
            one = "({0} if -1e16 < {0} < 1e16 else _Raw(_dumps({0})))"
        elif s.kind == "int":  # msgspec writes any int; orjson refuses beyond 64 bits
            ns["_LO"], ns["_HI"] = -(2**63), 2**64 - 1
            one = "({0} if _LO <= {0} <= _HI else _Raw(_dumps({0})))"
        else:
            one = None
        if one is None:
            args.append(var)
        elif s.many:
            args.append(f"(None if {var} is None else [{one.format('_x')} for _x in {var}])")
        else:
            args.append(f"(None if {var} is None else {one.format(var)})")
    source = "def to_struct(doc):\n" + "\n".join(reads) + f"\n    return _S({', '.join(args)})\n"
    exec(compile(source, f"<mirror {cls.__qualname__}>", "exec"), ns)
    _MIRRORS[cls] = ns["to_struct"]
    return ns["to_struct"]  # type: ignore[no-any-return]


# -- the candidates: new documents -> NDJSON lines of a create batch ---------------------

_HEAD = _json.dumps({"create": {"_index": INDEX}})[:-2] + b',"_id":'
_END = b"}}\n"
_NL = b"\n"


def current(docs: list[Any]) -> list[bytes]:
    to_source = type(docs[0]).__esmapper__.to_source
    dumps, join = _json.dumps, b"".join
    return [join((_HEAD, dumps(d.id), _END, dumps(to_source(d)), _NL)) for d in docs]


def current_writer(docs: list[Any]) -> list[bytes]:
    to_source = type(docs[0]).__esmapper__.to_source
    actions = [BulkAction("create", INDEX, d.id, to_source(d)) for d in docs]
    return _bulk_encode.encode_all(actions)


def dict_msgspec(docs: list[Any]) -> list[bytes]:
    to_source = type(docs[0]).__esmapper__.to_source
    enc, dumps, join = ENCODER.encode, _json.dumps, b"".join
    return [join((_HEAD, dumps(d.id), _END, enc(to_source(d)), _NL)) for d in docs]


def model_direct(docs: list[Any]) -> list[bytes]:
    enc, dumps, join = ENCODER.encode, _json.dumps, b"".join
    return [join((_HEAD, dumps(d.id), _END, enc(d), _NL)) for d in docs]


def struct_mirror(docs: list[Any]) -> list[bytes]:
    to_struct = mirror(type(docs[0]))
    enc, dumps, join = ENCODER.encode, _json.dumps, b"".join
    return [join((_HEAD, dumps(d.id), _END, enc(to_struct(d)), _NL)) for d in docs]


def struct_mirror_and_dict(docs: list[Any]) -> list[bytes]:
    to_struct = mirror(type(docs[0]))
    to_source = type(docs[0]).__esmapper__.to_source
    enc, dumps, join = ENCODER.encode, _json.dumps, b"".join
    out = []
    for d in docs:
        to_source(d)  # the DocState.original the write keeps
        out.append(join((_HEAD, dumps(d.id), _END, enc(to_struct(d)), _NL)))
    return out


def struct_mirror_and_decode(docs: list[Any]) -> list[bytes]:
    to_struct = mirror(type(docs[0]))
    enc, dumps, join, decode = ENCODER.encode, _json.dumps, b"".join, msgspec.json.decode
    out = []
    for d in docs:
        source = enc(to_struct(d))
        decode(source)  # the DocState.original, made from the bytes
        out.append(join((_HEAD, dumps(d.id), _END, source, _NL)))
    return out


CANDIDATES: dict[str, Callable[[list[Any]], list[bytes]]] = {
    "current (to_source+orjson)": current,
    "current, via BulkAction+encode_all": current_writer,
    "dict+msgspec": dict_msgspec,
    "model direct (msgspec attrs)": model_direct,
    "struct mirror": struct_mirror,
    "struct mirror + to_source dict": struct_mirror_and_dict,
    "struct mirror + decode dict": struct_mirror_and_decode,
}


def per_doc(fn: Callable[[list[Any]], Any], docs: list[Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn(docs)
        best = min(best, time.perf_counter() - start)
    return best / len(docs)


# -- exactness on the byte-for-byte tests' models ----------------------------------------


def test_models() -> dict[str, list[Any]]:
    """Documents of the models the byte-for-byte tests use, with edge values."""
    from tests.integration.repository.test_reads_encoding import BigPart, Crate, Part
    from tests.unit.model import models as m

    naive = dt.datetime(2026, 5, 6, 7, 8, 9, 123456)
    offset = dt.datetime(2026, 5, 6, 9, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    crates = [
        Crate(
            name='ünï "q" \\ \u2028 \x00\x1f\x7f',
            tags=["a", "ü", "\ud7ff"],
            part=BigPart(label="big", size=3),
            parts=[Part(label="p"), BigPart(label="q", size=4)],
            seen=naive,
        ),
        Crate(name="x", seen=offset),
        Crate(name="", seen=dt.datetime(1, 1, 1, tzinfo=UTC)),
        Crate(name="y", seen=dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        Crate(name="z", seen=dt.datetime(2026, 1, 1, 0, 0, 0, 120000, tzinfo=UTC)),
    ]
    floats = [
        1e300,
        -1.5e16,
        0.0,
        -0.0,
        1.5,
        1e16,
        1e-7,
        123456789.125,
        5e-324,
        1.7976931348623157e308,
        0.1,
    ]
    floats += [1 / 3, 2.0**53, 1e22, 1e21, 123e-20]
    everything = [
        m.Everything(
            id=f"e{i}",
            name="Zoë ✓",
            age=-(2**63) if i % 2 else 2**63 - 1,
            rating=f,
            active=bool(i % 2),
            born=dt.datetime(2026, 3, 4, 12, 0, 0, i, tzinfo=UTC),
            birthday=dt.date(2000, 1, 2),
            tags=["a", "b"],
            scores=[1, 2, 3],
            address=m.Address(street="s", city="c", zip_code=150),
            addresses=[m.Address(city="a"), m.Address(city="b", zip_code=None)],
            reviews=[m.Review(author="r", rating=5, posted=naive)],
            meta={"k": [1, {"x": None}], "when": dt.datetime(2026, 1, 2, tzinfo=UTC), "t": (1, 2)},
            color=m.Color.GREEN if i % 2 else m.Color.RED,
            priority=m.Priority.HIGH,
            nickname=None if i % 3 else "nick",
        )
        for i, f in enumerate(floats)
    ]
    employees = [m.Employee(id="e", name="n", email="x@y", age=3, company_id="c")]
    bench = [construct_esmapper(values(i)) for i in range(50)]
    return {
        "bench Employee": bench,
        "Crate": crates,
        "Everything": everything,
        "Employee": employees,
    }


def exactness() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for model, docs in test_models().items():
        expected = current(docs)
        for name, fn in CANDIDATES.items():
            if name.startswith("current"):
                continue
            try:
                got = fn(docs)
            except Exception as e:
                out.setdefault(name, {})[model] = f"raises {type(e).__name__}: {e}"
                continue
            bad = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
            if bad:
                a, b = got[bad[0]], expected[bad[0]]
                at = next(
                    (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                    min(len(a), len(b)),
                )
                start = max(0, at - 40)
                out.setdefault(name, {})[model] = (
                    f"{len(bad)}/{len(docs)} differ, e.g. at byte {at}:\n"
                    f"      got  ...{a[start : at + 40]!r}\n      want ...{b[start : at + 40]!r}"
                )
            else:
                out.setdefault(name, {})[model] = "exact"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    docs = [construct_esmapper(values(i)) for i in range(args.docs)]
    assert isinstance(docs[0], Employee) and isinstance(em.__version__, str)
    print(
        f"{args.docs} new Employee documents -> create lines, best of {args.repeat}, "
        f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}"
    )
    base = 0.0
    for name, fn in CANDIDATES.items():
        figure = per_doc(fn, docs, args.repeat)
        base = base or figure
        print(f"  {name:<32} {figure * 1e6:6.2f} µs/doc  ({figure / base:4.2f}x current)")
    parts = {
        "to_source": lambda ds: [Employee.__esmapper__.to_source(d) for d in ds],
        "to_struct": lambda ds: [mirror(Employee)(d) for d in ds],
        "encode(struct)": lambda ss: [ENCODER.encode(x) for x in ss],
        "msgspec decode(line)": lambda bs: [msgspec.json.decode(b) for b in bs],
        "orjson loads(line)": lambda bs: [_json.loads(b) for b in bs],
    }
    inputs = {
        "encode(struct)": [mirror(Employee)(d) for d in docs],
        "msgspec decode(line)": [ENCODER.encode(mirror(Employee)(d)) for d in docs],
        "orjson loads(line)": [ENCODER.encode(mirror(Employee)(d)) for d in docs],
    }
    for name, fn in parts.items():
        figure = per_doc(fn, inputs.get(name, docs), args.repeat)
        print(f"    {name:<30} {figure * 1e6:6.2f} µs/doc")
    print("exactness against the current path's bytes:")
    for name, verdicts in exactness().items():
        for model, verdict in verdicts.items():
            print(f"  {name:<32} {model:<15} {verdict}")


if __name__ == "__main__":
    main()
