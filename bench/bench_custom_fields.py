"""Custom-field benchmark (a script, not a test): ``repo.add``/``repo.save`` of documents
carrying 20 tenant custom fields against the same documents without them.

Three models with the same declared fields (a keyword ``name``, a keyword ``company_id``, an
integer ``age``, dates and versions): ``Plain`` (only those), ``Custom``
(``em.HasCustomFields``, ``tenant_field = "company_id"``: one tenant has 20 definitions,
string, keyword, int, long, float, double, bool, date, 2 or 3 of each, and every document
holds a value for each) and, for context, ``Declared`` (the same 20 values as declared
attributes: the indexing work without the slot machinery, and the mapping that custom
fields keep from growing with every tenant). Measured, each model into its own fresh
index, rotating which goes first, best of ``--repeat`` after a warm-up round:

1. ``add``: one ``repo.add(docs)`` of ``--docs`` new documents (bulk, chunks of 500);
2. ``save``: the same documents, one value changed on each, one ``repo.save(docs)``;
3. ``add one``: ``--singles`` calls of ``repo.add(doc)`` (one request each: the per-call
   cost of finding the tenant's definitions, cached after the first).

For ``Custom`` every write recomputes ``idx`` (20 slots) and indexes 20 more fields.
Printed: wall time (server included), client CPU time (this process) and both ratios to
``Plain``, measured in the same run. The server: ``ESMAPPER_URL`` if set, else
``esmapper.testing.elasticsearch_url()`` (the local test server by default)::

    python bench/bench_custom_fields.py [--docs 2000] [--singles 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
import uuid
from collections.abc import Callable
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.serializer import OrjsonSerializer

import esmapper as em
from esmapper.testing import elasticsearch_url

TYPES = ["string", "keyword", "int", "long", "float", "double", "bool", "date"]
FIELDS = [(f"Field{i:02d}", TYPES[i % len(TYPES)]) for i in range(20)]
TENANT = "acme"


class Plain(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "bench_plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    company_id: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


_DECLARED = {
    "string": "em.field(em.Text(fields={'keyword': em.Keyword(ignore_above=256)}), default=None)",
    "keyword": "em.field(em.Keyword(), default=None)",
    "int": "em.field(em.Integer(), default=None)",
    "long": "em.field(em.Long(), default=None)",
    "float": "em.field(em.Float(), default=None)",
    "double": "em.field(em.Double(), default=None)",
    "bool": "em.field(em.Boolean(), default=None)",
    "date": "em.field(em.Date(), default=None)",
}
_ANNOTATIONS = {
    "string": "str", "keyword": "str", "int": "int", "long": "int",
    "float": "float", "double": "float", "bool": "bool", "date": "dt.datetime",
}  # fmt: skip

# The same 20 values as declared attributes (one mapped field each: what custom fields
# replace, and what would grow the mapping with every tenant's fields).
exec(  # a model with 20 generated attribute declarations
    "class Declared(em.Document, em.HasDates, em.Versioned):\n"
    "    class Index:\n"
    "        name = 'bench_declared'\n"
    "        settings = {'number_of_shards': 1, 'number_of_replicas': 0}\n"
    "    name: str = em.field(em.Keyword(), default='')\n"
    "    company_id: str = em.field(em.Keyword(), default='')\n"
    "    age: int = em.field(em.Integer(), default=0)\n"
    + "".join(
        f"    {name.lower()}: {_ANNOTATIONS[kind]} | None = {_DECLARED[kind]}\n"
        for name, kind in FIELDS
    )
)
Declared: type = globals()["Declared"]


class Custom(em.Document, em.HasDates, em.Versioned, em.HasCustomFields):
    class Index:
        name = "bench_custom"
        tenant_field = "company_id"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    company_id: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


def value(kind: str, i: int) -> Any:
    return {
        "string": f"some words {i}",
        "keyword": f"k{i % 50}",
        "int": i,
        "long": i * 1_000_003,
        "float": i / 3,
        "double": i / 7,
        "bool": i % 2 == 0,
        "date": dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i),
    }[kind]


def build(model: type, n: int) -> list[Any]:
    if model is Plain:
        return [Plain(name=f"e{i}", company_id=TENANT, age=i % 60) for i in range(n)]
    if model is Declared:
        return [
            Declared(
                name=f"e{i}",
                company_id=TENANT,
                age=i % 60,
                **{name.lower(): value(kind, i) for name, kind in FIELDS},
            )
            for i in range(n)
        ]
    return [
        Custom(
            name=f"e{i}",
            company_id=TENANT,
            age=i % 60,
            custom_fields={name: value(kind, i) for name, kind in FIELDS},
        )
        for i in range(n)
    ]


def change(model: type, docs: list[Any]) -> None:
    for doc in docs:
        doc.age += 1
        if model is Custom:
            doc.custom_fields["Field02"] += 1
        elif model is Declared:
            doc.field02 += 1


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


class Bench:
    def __init__(self, client: Elasticsearch, docs: int, singles: int) -> None:
        self.client = client
        self.docs = docs
        self.singles = singles
        self.base = f"bench-cf-{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []

    def mapper(self, model: type, tag: str) -> em.Mapper:
        mapper = em.Mapper(self.client, models=[model], index_prefix=f"{self.base}-{tag}-")
        mapper.configure_indexes()
        for m in mapper.models:
            self.created.append(mapper.spec(m).physical_name())
        if model is Custom:
            fields = mapper.custom_fields(Custom)
            fields.add([em.CustomFieldDefinition(tenant_key=TENANT, name=name, index_type=kind)
                        for name, kind in FIELDS])  # fmt: skip
        return mapper

    def run(self, model: type, tag: str) -> dict[str, tuple[float, float]]:
        mapper = self.mapper(model, tag)
        repo = mapper.repository(model)
        docs = build(model, self.docs)
        out = {"add": timed(lambda: repo.add(docs))}
        change(model, docs)
        out["save"] = timed(lambda: repo.save(docs))
        singles = build(model, self.singles)

        def one_by_one() -> None:
            for doc in singles:
                repo.add(doc)

        out["add one"] = timed(one_by_one)
        if model is Custom:
            assert docs[0].idx["int-1"] == 1 and len(docs[0].idx) == 20, docs[0].idx
        for name in list(self.created):
            self.client.indices.delete(index=name, ignore_unavailable=True)
        self.created.clear()
        return out

    def cleanup(self) -> None:
        for name in self.created:
            self.client.indices.delete(index=name, ignore_unavailable=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--singles", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=120, serializer=OrjsonSerializer())
        bench = Bench(client, args.docs, args.singles)
        try:
            models = [Plain, Declared, Custom]
            for rep in range(args.repeat + 1):  # round 0 warms up
                for model in models[rep % 3 :] + models[: rep % 3]:
                    for step, measured in bench.run(model, f"{rep}").items():
                        if rep:
                            runs = results.setdefault(step, {})
                            runs.setdefault(model.__name__, []).append(measured)
        finally:
            bench.cleanup()
            client.close()
    print(f"server: {url}  (wall = end to end; cpu = this process only; best of {args.repeat})")
    print(
        f"20 custom fields per document (Custom) vs none (Plain) vs 20 declared attributes "
        f"(Declared); ratios to Plain; {args.docs} docs per bulk call"
    )
    for step, runs in results.items():
        n = args.singles if step == "add one" else args.docs
        base_wall = min(w for w, _ in runs["Plain"])
        base_cpu = min(c for _, c in runs["Plain"])
        for name in ("Plain", "Declared", "Custom"):
            measured = runs[name]
            wall = min(w for w, _ in measured)
            cpu = min(c for _, c in measured)
            print(
                f"  {step:<8} {name:<8} wall {wall * 1000:8.1f} ms ({n / wall:7.0f} docs/s)"
                f" ratio {wall / base_wall:4.2f} | client cpu {cpu / n * 1e6:6.1f} µs/doc"
                f" ratio {cpu / base_cpu:4.2f}"
            )


if __name__ == "__main__":
    main()
