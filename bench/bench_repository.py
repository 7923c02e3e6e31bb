"""Repository benchmark (a script, not a test): ``repo.add`` vs ``helpers.bulk``, and
``repo.find`` vs a raw ``client.search``.

1. Adding: ``repo.add(docs)`` of ``--docs`` new esmapper ``Employee`` documents (one call
   with the list; ``bulk_chunk_size=500``) against ``elasticsearch.helpers.bulk`` of the
   equivalent ``_source`` dicts as ``create`` operations (``chunk_size=500``), each into its
   own fresh index with the same mappings, on the same server and client, alternating which
   goes first, best of ``--repeat`` (after one warm-up round). The documents and dicts are
   built before the clock starts; ``repo.add`` also sets ``updated_utc``, checks ids, fires
   signals (none connected here) and writes versions and stored state back onto the
   documents. Prints wall time (server included), client CPU time (this process only) and
   their ratios to the baseline (target: wall ratio <= 1.25).
2. Reading, for context: ``repo.find(limit=1000)`` (query compilation, search, hydration of
   1000 documents into models) against ``client.search`` of the same request body, whose
   hits are left as dicts.

The server: ``ESMAPPER_URL`` if set, else ``esmapper.testing.start_test_server()`` (the
local noida-db server unless ``ESMAPPER_TEST_URL`` / ``ESMAPPER_TEST_DOCKER`` say
otherwise), stopped again at the end. Indexes are deleted by exact name::

    ESMAPPER_URL=http://127.0.0.1:9200 python bench/bench_repository.py [--docs 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench_models import Employee, build_dict, construct_esmapper, values
from elasticsearch import Elasticsearch, helpers
from elasticsearch.serializer import OrjsonSerializer

import esmapper as em
from esmapper import _json
from esmapper.testing import elasticsearch_url


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """``(wall seconds, client CPU seconds)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def new_employees(n: int) -> list[Employee]:
    return [construct_esmapper(values(i)) for i in range(n)]


class Bench:
    def __init__(self, client: Elasticsearch, n: int) -> None:
        self.client = client
        self.n = n
        self.base = f"bench-repo-{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []  # physical indexes, deleted by exact name
        self.dicts = [build_dict(values(i)) for i in range(n)]
        self.index_body = em.Mapper(client, models=[Employee]).spec(Employee).body(with_alias=False)
        self.mapper: em.Mapper | None = None

    def fresh_mapper(self, tag: str) -> em.Mapper:
        mapper = em.Mapper(
            self.client, models=[Employee], index_prefix=f"{self.base}-{tag}-", bulk_chunk_size=500
        )
        self.created.append(mapper.spec(Employee).physical_name())
        mapper.configure_indexes()
        return mapper

    def run_add(self, tag: str) -> tuple[float, float]:
        mapper = self.fresh_mapper(tag)
        repo = mapper.repository(Employee)
        docs = new_employees(self.n)
        added: list[Employee] = []
        measured = timed(lambda: added.extend(repo.add(docs)))
        assert len(added) == self.n and all(d.version for d in added)
        if self.mapper is not None:
            self.drop(self.mapper.spec(Employee).physical_name())
        self.mapper = mapper  # the last one is kept for the find benchmark
        return measured

    def run_helpers(self, tag: str) -> tuple[float, float]:
        index = f"{self.base}-{tag}-helpers"
        self.created.append(index)
        self.client.indices.create(index=index, **self.index_body)
        actions = (
            {"_op_type": "create", "_index": index, "_id": d["id"], "_source": d}
            for d in self.dicts
        )
        result: list[Any] = []
        measured = timed(
            lambda: result.extend(helpers.bulk(self.client, actions, chunk_size=500, max_retries=3))
        )
        ok, errors = result
        assert ok == self.n and not errors, errors
        self.drop(index)
        return measured

    def drop(self, index: str) -> None:
        self.client.indices.delete(index=index, ignore_unavailable=True)

    def cleanup(self) -> None:
        for index in self.created:  # no wildcard deletes (destructive_requires_name)
            self.drop(index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--find", type=int, default=1000, help="documents per find")
    parser.add_argument("--find-repeat", type=int, default=5)
    args = parser.parse_args()

    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=120, serializer=OrjsonSerializer())
        bench = Bench(client, args.docs)
        add: dict[str, list[tuple[float, float]]] = {"helpers.bulk": [], "repo.add": []}
        find: dict[str, list[tuple[float, float]]] = {"client.search": [], "repo.find": []}
        try:
            runners = {"helpers.bulk": bench.run_helpers, "repo.add": bench.run_add}
            for rep in range(args.repeat + 1):  # round 0 warms up both paths
                order = list(runners) if rep % 2 else list(reversed(runners))
                for name in order:
                    measured = runners[name](f"{rep}")
                    if rep:
                        add[name].append(measured)

            assert bench.mapper is not None
            mapper = bench.mapper
            repo = mapper.repository(Employee)
            alias = mapper.spec(Employee).alias
            client.indices.refresh(index=alias)
            request = repo.search(limit=args.find).body()
            got: dict[str, int] = {}

            def raw() -> None:
                got["raw"] = len(client.search(index=alias, body=request).body["hits"]["hits"])

            def hydrated() -> None:
                got["find"] = len(repo.find(limit=args.find).documents)

            for rep in range(args.find_repeat + 1):
                pairs = [("client.search", raw), ("repo.find", hydrated)]
                for name, fn in pairs if rep % 2 else reversed(pairs):
                    measured = timed(fn)
                    if rep:
                        find[name].append(measured)
            assert got["raw"] == got["find"] == min(args.find, args.docs), got
        finally:
            bench.cleanup()
            client.close()

    print(f"server: {url}  json={_json.BACKEND}  (wall = end to end; cpu = this process only)")
    print(f"adding {args.docs} new documents, chunks of 500, best of {args.repeat}:")
    report(add, "helpers.bulk", args.docs)
    print(f"reading {args.find} documents with one search, best of {args.find_repeat}:")
    report(find, "client.search", min(args.find, args.docs))


def report(results: dict[str, list[tuple[float, float]]], baseline: str, n: int) -> None:
    base_wall = min(w for w, _ in results[baseline])
    base_cpu = min(c for _, c in results[baseline])
    for name, runs in results.items():
        wall = min(w for w, _ in runs)
        cpu = min(c for _, c in runs)
        print(
            f"  {name:<14} wall {wall * 1000:8.1f} ms ({n / wall:7.0f} docs/s)"
            f" ratio {wall / base_wall:4.2f} | client cpu {cpu * 1000:7.1f} ms"
            f" ({cpu / n * 1e6:5.1f} µs/doc) ratio {cpu / base_cpu:4.2f}"
        )


if __name__ == "__main__":
    main()
