"""Cached get benchmark (a script, not a test): L1 hit, Redis hit, and a plain GET.

Times ``repo.get(id)`` of one small document three ways, in one run, on one mapper
sharing Redis (``Mapper(redis=...)``):

- **L1**: the document is in the in-process L1 of the HybridCache (the usual hot read);
- **InMemoryCache**: the same read on a mapper without Redis (today's in-process cache);
- **Redis**: L1 is dropped before every read, so each read is one Redis round trip
  (``GET`` + ``PTTL``) and the document is built from what Redis returned;
- **GET**: ``cache=False``, the real-time GET of Elasticsearch.

Prints the median and best microseconds per read and the ratios against the plain GET.
The Elasticsearch is ``ESMAPPER_URL`` or the embedded local server; the Redis is
``ESMAPPER_REDIS_URL`` or an embedded one (``esmapper.testing.redis_url()``)::

    python bench/bench_cache.py [--reads 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
import uuid
from collections.abc import Callable

import esmapper as em
from esmapper.distributed import HybridCache
from esmapper.testing import elasticsearch_url, redis_url


class Employee(em.Document, em.Versioned):
    class Index:
        name = "bench_cache_employees"
        cache = dt.timedelta(minutes=5)

    name: str = ""
    email: str = ""
    title: str = ""
    age: int = 0


def per_read(run: Callable[[], object], reads: int, repeat: int) -> list[float]:
    """Microseconds per read of ``repeat`` timed batches of ``reads`` reads."""
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(reads):
            run()
        timings.append((time.perf_counter() - start) / reads * 1e6)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    redis = os.environ.get("ESMAPPER_REDIS_URL") or redis_url()
    prefix = f"bench-{uuid.uuid4().hex[:6]}-"
    with elasticsearch_url() as url, em.Mapper(url, index_prefix=prefix, redis=redis) as mapper:
        mapper.configure_indexes([Employee])
        repo = mapper.repository(Employee)
        repo.add(Employee(id="e1", name="Ada Lovelace", email="ada@example.com", age=36))
        cache = mapper.cache
        assert isinstance(cache, HybridCache)
        deadline = time.monotonic() + 20
        while not cache.link.lease_valid() and time.monotonic() < deadline:
            time.sleep(0.01)
        repo.get("e1")  # fills Redis and L1

        def from_redis() -> object:
            cache.drop_local()
            return repo.get("e1")

        with em.Mapper(url, index_prefix=prefix, redis="") as local:
            alone = local.repository(Employee)
            alone.get("e1")
            in_memory = per_read(lambda: alone.get("e1"), args.reads, args.repeat)
        rows = {
            "L1 (in process)": per_read(lambda: repo.get("e1"), args.reads, args.repeat),
            "InMemoryCache": in_memory,
            "Redis": per_read(from_redis, args.reads, args.repeat),
            "plain GET": per_read(
                lambda: repo.get("e1", cache=False), max(args.reads // 4, 1), args.repeat
            ),
        }
        mapper.delete_indexes([Employee])
    plain = statistics.median(rows["plain GET"])
    print(f"cached get of one document, {args.repeat} batches (us per read):")
    for name, timings in rows.items():
        median = statistics.median(timings)
        print(
            f"  {name:16} median {median:8.1f}  best {min(timings):8.1f}  "
            f"x{median / plain:.3f} of a plain GET"
        )
    l1, via_redis = (statistics.median(rows[k]) for k in ("L1 (in process)", "Redis"))
    print(f"  Redis / L1: x{via_redis / l1:.1f}; plain GET / Redis: x{plain / via_redis:.1f}")


if __name__ == "__main__":
    main()
