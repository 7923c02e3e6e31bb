"""Model micro benchmark (a script, not a test; no server needed).

Measures, per document, for three implementations of the same Employee-like model (text
``name`` with a ``keyword`` subfield, keyword ``email``, integer ``age``, keyword
``company_id``, a date ``hired_utc``, a list of keyword ``tags``, an embedded ``address``
object with two fields, plus ``created_utc``/``updated_utc``/``is_deleted`` and the
``_seq_no``/``_primary_term`` version):

* build: construct the object from Python values and get its ``_source`` dict
  - esmapper: ``Employee(...)`` + ``to_source()``
    (``em.Document, em.HasDates, em.SoftDeletes, em.Versioned``);
  - dsl: ``elasticsearch.dsl.Document`` ``Employee(...)`` + ``to_dict(include_meta=True)``;
  - dict: a dict literal (dates through ``isoformat()``) + ``dict(...)``;
* hydrate: turn 10,000 raw hits (``_id``, ``_source``, ``_seq_no``, ``_primary_term``)
  into objects
  - esmapper: ``Employee.from_hit(hit)``;
  - dsl: ``Employee.from_es(hit)``;
  - dict: ``dict(hit["_source"])``.

Each figure is the best of ``--repeat`` timings (``time.perf_counter``) of a loop over
all the documents, divided by their number. Prints a table and the ratios
esmapper-vs-dsl (how many times faster esmapper is; the target is >= 3x on both) and
esmapper-vs-dict (how many times slower than plain dicts)::

    python bench/bench_models.py [--docs 10000] [--repeat 7]

The esmapper model and the document values are also used by ``bench_repository.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import sys
import time
from collections.abc import Callable
from typing import Any

from elasticsearch import dsl

import esmapper as em

UTC = dt.timezone.utc
BASE = dt.datetime(2026, 1, 1, tzinfo=UTC)

# -- esmapper --------------------------------------------------------------------------


class Address(em.InnerDoc):
    city: str = em.field(em.Keyword(), default="")
    zip_code: str = em.field(em.Keyword(), default="")


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "bench_employees"
        version = 1

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    hired_utc: dt.datetime | None = None
    tags: list[str] = em.field(em.Keyword(), factory=list)
    address: Address | None = None


# -- elasticsearch.dsl ---------------------------------------------------------------


class DslAddress(dsl.InnerDoc):
    city = dsl.Keyword()
    zip_code = dsl.Keyword()


class DslEmployee(dsl.Document):
    name = dsl.Text(fields={"keyword": dsl.Keyword()})
    email = dsl.Keyword()
    age = dsl.Integer()
    company_id = dsl.Keyword()
    hired_utc = dsl.Date(default_timezone="UTC")
    tags = dsl.Keyword(multi=True)
    address = dsl.Object(DslAddress)
    created_utc = dsl.Date(default_timezone="UTC")
    updated_utc = dsl.Date(default_timezone="UTC")
    is_deleted = dsl.Boolean()

    class Index:
        name = "bench_employees_dsl"


# -- the documents ---------------------------------------------------------------------


def values(i: int) -> dict[str, Any]:
    """The Python values of document ``i`` (the same for every implementation)."""
    return {
        "id": f"emp-{i:06d}",
        "name": f"Employee number {i}",
        "email": f"employee{i}@example.com",
        "age": 20 + i % 45,
        "company_id": f"company-{i % 50}",
        "hired_utc": BASE - dt.timedelta(days=i % 3000),
        "tags": ["a", "b", f"t{i % 7}"],
        "city": f"City {i % 100}",
        "zip_code": f"{10000 + i % 90000}",
        "created_utc": BASE + dt.timedelta(seconds=i),
        "updated_utc": BASE + dt.timedelta(seconds=i, microseconds=123456),
    }


def construct_esmapper(v: dict[str, Any]) -> Employee:
    """Construct the esmapper document (the first half of :func:`build_esmapper`)."""
    return Employee(
        id=v["id"],
        name=v["name"],
        email=v["email"],
        age=v["age"],
        company_id=v["company_id"],
        hired_utc=v["hired_utc"],
        tags=v["tags"],
        address=Address(city=v["city"], zip_code=v["zip_code"]),
        created_utc=v["created_utc"],
        updated_utc=v["updated_utc"],
    )


def build_esmapper(v: dict[str, Any]) -> dict[str, Any]:
    return construct_esmapper(v).to_source()


def build_dsl(v: dict[str, Any]) -> dict[str, Any]:
    doc = DslEmployee(
        meta={"id": v["id"]},
        name=v["name"],
        email=v["email"],
        age=v["age"],
        company_id=v["company_id"],
        hired_utc=v["hired_utc"],
        tags=v["tags"],
        address=DslAddress(city=v["city"], zip_code=v["zip_code"]),
        created_utc=v["created_utc"],
        updated_utc=v["updated_utc"],
        is_deleted=False,
    )
    return doc.to_dict(include_meta=True)


def build_dict(v: dict[str, Any]) -> dict[str, Any]:
    doc = {
        "id": v["id"],
        "name": v["name"],
        "email": v["email"],
        "age": v["age"],
        "company_id": v["company_id"],
        "hired_utc": v["hired_utc"].isoformat(),
        "tags": list(v["tags"]),
        "address": {"city": v["city"], "zip_code": v["zip_code"]},
        "created_utc": v["created_utc"].isoformat(),
        "updated_utc": v["updated_utc"].isoformat(),
        "is_deleted": False,
    }
    return dict(doc)


def make_hits(n: int) -> list[dict[str, Any]]:
    """``n`` raw search hits, their ``_source`` as Elasticsearch returns it (JSON values)."""
    hits = []
    for i in range(n):
        source = build_esmapper(values(i))
        hits.append(
            {
                "_index": "bench_employees-v1",
                "_id": source["id"],
                "_score": 1.0,
                "_source": source,
                "_seq_no": i,
                "_primary_term": 1,
            }
        )
    return hits


def hydrate_esmapper(hit: dict[str, Any]) -> Any:
    return Employee.from_hit(hit)


def hydrate_dsl(hit: dict[str, Any]) -> Any:
    return DslEmployee.from_es(hit)


def hydrate_dict(hit: dict[str, Any]) -> Any:
    return dict(hit["_source"])


IMPLEMENTATIONS: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[Any], Any]]] = {
    "esmapper": (build_esmapper, hydrate_esmapper),
    "dsl": (build_dsl, hydrate_dsl),
    "dict": (build_dict, hydrate_dict),
}


def check_equivalent(hits: list[dict[str, Any]]) -> None:
    """The three implementations produce and read the same documents."""
    v = values(7)
    ours = build_esmapper(v)
    theirs = build_dsl(v)
    plain = build_dict(v)
    assert set(ours) == set(theirs["_source"]) | {"id"} == set(plain), (ours, theirs, plain)
    assert Employee.from_hit(hits[7]).to_source() == hits[7]["_source"]
    hydrated = DslEmployee.from_es(hits[7])
    assert hydrated.hired_utc == v["hired_utc"] and hydrated.address.city == v["city"]
    assert hydrated.meta.seq_no == 7
    assert Employee.from_hit(hits[7]).version == "1:7"


def per_doc(fn: Callable[[Any], Any], items: list[Any], repeat: int) -> float:
    """Best-of-``repeat`` seconds per item of ``for x in items: fn(x)``."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return best / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    inputs = [values(i) for i in range(args.docs)]
    hits = make_hits(args.docs)
    check_equivalent(hits)

    build: dict[str, float] = {}
    hydrate: dict[str, float] = {}
    for name, (build_fn, hydrate_fn) in IMPLEMENTATIONS.items():
        build[name] = per_doc(build_fn, inputs, args.repeat)
        hydrate[name] = per_doc(hydrate_fn, hits, args.repeat)
    construct = per_doc(construct_esmapper, inputs, args.repeat)
    new_docs = [construct_esmapper(v) for v in inputs]
    to_source = per_doc(Employee.to_source, new_docs, args.repeat)
    del new_docs

    print(
        f"{args.docs} documents, best of {args.repeat}, Python {sys.version.split()[0]}"
        f", esmapper {em.__version__}"
    )
    print(f"  {'':<10} {'build + _source':>16} {'hydrate hit':>14}   (µs per document)")
    for name in IMPLEMENTATIONS:
        print(f"  {name:<10} {build[name] * 1e6:16.2f} {hydrate[name] * 1e6:14.2f}")
    print(
        f"  esmapper build = Employee(...) {construct * 1e6:.2f}"
        f" + to_source() of a new document {to_source * 1e6:.2f}"
    )
    print("ratios (higher is better for esmapper):")
    for op, figures in (("build", build), ("hydrate", hydrate)):
        vs_dsl = figures["dsl"] / figures["esmapper"]
        vs_dict = figures["esmapper"] / figures["dict"]
        verdict = "ok" if vs_dsl >= 3 else "MISSED"
        print(
            f"  {op:<8} esmapper is {vs_dsl:5.1f}x faster than dsl"
            f" (target >= 3x: {verdict}); {vs_dict:5.1f}x the cost of plain dicts"
        )


if __name__ == "__main__":
    main()
