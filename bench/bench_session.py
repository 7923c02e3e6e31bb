"""Session benchmarks: flush vs helpers.bulk, flush cost vs identity-map size, cache hits.

Run: ``python bench/bench_session.py`` (starts the local server unless ESMAPPER_URL is set).
Prints, each measured in the same run against its baseline:

1. flush of 10,000 new documents vs ``elasticsearch.helpers.bulk`` of the same dicts
   (target: ratio <= 1.25);
2. flush of 100 changed documents with 100 vs 100,000 clean documents in the identity map
   (target: <= 2x apart; flush cost must follow the changed documents);
3. a cached ``repo.get`` vs an uncached one (ratio reported).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from elasticsearch import helpers

import esmapper as em
from esmapper.testing import delete_prefixed, elasticsearch_url


class Person(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "people"
        settings = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = ""
    age: int = 0
    tags: list[str] = em.field(factory=list)


class CachedPerson(Person):
    class Index:
        name = "cached-people"
        cache = __import__("datetime").timedelta(minutes=5)


def best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_flush_vs_bulk(url: str, n: int = 10_000) -> tuple[float, float]:
    def run_flush() -> float:
        prefix = f"bench-{uuid.uuid4().hex[:6]}-"
        with em.Mapper(url, models=[Person], index_prefix=prefix) as mapper:
            mapper.configure_indexes()
            docs = [
                Person(name=f"P {i}", email=f"p{i}@x", age=i % 90, tags=["a"]) for i in range(n)
            ]
            start = time.perf_counter()
            with mapper.session() as s:
                s.add_all(docs)
            elapsed = time.perf_counter() - start
            delete_prefixed(mapper.client, prefix)
        return elapsed

    def run_bulk() -> float:
        prefix = f"bench-{uuid.uuid4().hex[:6]}-"
        with em.Mapper(url, models=[Person], index_prefix=prefix) as mapper:
            mapper.configure_indexes()
            alias = mapper.spec(Person).alias
            now = "2026-12-02T00:00:00Z"
            start = time.perf_counter()
            actions = (
                {
                    "_op_type": "create",
                    "_index": alias,
                    "_id": str(em.ObjectId.new()),
                    "_source": {
                        "id": None,
                        "created_utc": now,
                        "updated_utc": now,
                        "name": f"P {i}",
                        "email": f"p{i}@x",
                        "age": i % 90,
                        "tags": ["a"],
                    },
                }
                for i in range(n)
            )
            helpers.bulk(mapper.client, actions, chunk_size=500)
            elapsed = time.perf_counter() - start
            delete_prefixed(mapper.client, prefix)
        return elapsed

    flush = min(run_flush() for _ in range(3))
    bulk = min(run_bulk() for _ in range(3))
    return flush, bulk


def bench_dirty_flush(url: str, clean: int, changed: int = 100) -> float:
    prefix = f"bench-{uuid.uuid4().hex[:6]}-"
    with em.Mapper(url, models=[Person], index_prefix=prefix) as mapper:
        mapper.configure_indexes()
        repo = mapper.repository(Person)
        stored = repo.add([Person(id=f"real{i}", age=1) for i in range(changed)])
        ids = [d.id for d in stored if d.id]
        source = Person(name="clean", tags=["x"]).to_source()
        s = mapper.session()
        for i in range(clean):  # documents "loaded" from hits, never changed
            s.add(
                Person.from_hit(
                    {"_id": f"clean{i}", "_source": source, "_seq_no": i, "_primary_term": 1}
                )
            )
        s.flush()  # attaching marks them maybe-dirty once: this flush finds nothing to write
        times = []
        for round_ in range(3):
            docs = s.get_many(Person, ids)
            for doc in docs:
                doc.age = 10 + round_
            start = time.perf_counter()
            s.flush()
            times.append(time.perf_counter() - start)
        s.close()
        delete_prefixed(mapper.client, prefix)
    return min(times)


def bench_cache(url: str, n: int = 2000) -> tuple[float, float]:
    prefix = f"bench-{uuid.uuid4().hex[:6]}-"
    with em.Mapper(url, models=[CachedPerson], index_prefix=prefix) as mapper:
        mapper.configure_indexes()
        repo = mapper.repository(CachedPerson)
        doc = repo.add(CachedPerson(name="cached"))
        assert doc.id is not None
        doc_id = doc.id
        repo.get(doc_id)
        cached = best(lambda: [repo.get(doc_id) for _ in range(n)]) / n
        uncached = best(lambda: [repo.get(doc_id, cache=False) for _ in range(n // 10)]) / (n // 10)
        delete_prefixed(mapper.client, prefix)
    return cached, uncached


def main() -> None:
    with elasticsearch_url() as url:
        flush, bulk = bench_flush_vs_bulk(url)
        print(f"flush 10,000 new docs      {flush * 1000:8.1f} ms")
        print(f"helpers.bulk same dicts    {bulk * 1000:8.1f} ms")
        print(f"  ratio flush/bulk         {flush / bulk:8.2f}   (target <= 1.25)")
        small = bench_dirty_flush(url, clean=100)
        large = bench_dirty_flush(url, clean=100_000)
        print(f"flush 100 changed, 100 clean in map      {small * 1000:8.1f} ms")
        print(f"flush 100 changed, 100,000 clean in map  {large * 1000:8.1f} ms")
        print(f"  ratio                                  {large / small:8.2f}   (target <= 2)")
        cached, uncached = bench_cache(url)
        print(f"get, cached                {cached * 1e6:8.1f} us")
        print(f"get, uncached              {uncached * 1e6:8.1f} us")
        print(f"  ratio uncached/cached    {uncached / cached:8.1f}x")


if __name__ == "__main__":
    main()
