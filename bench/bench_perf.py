"""Performance ratios (a script, not a test), each measured in one run; the targets are
issue 28's (issue 17 set the first ones).

Writes (client CPU per document, against pre-encoded NDJSON sent with one
``perform_request`` per 500 documents and its response parsed, and against
``elasticsearch.helpers.bulk``): ``repo.add`` of new documents, ``repo.save`` of loaded
documents with one field changed, a session flush of new documents. Reads (client CPU per
hit): ``repo.find`` against a raw ``client.search`` whose ``_source`` dicts are read, and
``repo.get_many`` against a raw ``client.mget``; each reads one value of every document
(``doc.name``; the baselines ``_source["name"]``), as a caller would. Cache: an L1
cached ``repo.get`` against an uncached one (a GET round trip), and, for context (no
target), the Redis path: a mapper sharing an embedded Redis (``Mapper(redis=...)``,
``esmapper.testing.redis_url()``) whose in-process L1 is dropped before every read, so
each read is one Redis round trip (as ``bench_cache.py`` measures it).

Every timed write goes into its own fresh index; methods are interleaved (the order
rotates every round), one warm-up round is dropped, and the best of ``--repeat`` is kept.
Every timed call starts from a collected heap (``gc.collect()`` before the clock starts):
otherwise whether one full collection of the whole process (several µs per document
here) falls inside a run or just before it decides a ratio; the collections a call
triggers itself are counted.
CPU (``time.process_time``, this process only) and wall time are reported separately.
``--chart PATH`` also draws the CPU ratios as a PNG (needs matplotlib, the ``dev`` extra)::

    python bench/bench_perf.py [--docs 5000] [--repeat 5] [--chart docs/perf.png]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import platform
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench_models import Employee, build_dict, construct_esmapper, values
from elasticsearch import Elasticsearch, helpers
from elasticsearch.serializer import OrjsonSerializer

import esmapper as em
from esmapper import _json
from esmapper.distributed import HybridCache
from esmapper.testing import elasticsearch_url, redis_url

CHUNK = 500
_HEADERS = {"accept": "application/json", "content-type": "application/x-ndjson"}

#: A cached get's own target: client CPU per get, in µs (issue 28), on the bench model.
CACHED_GET_TARGET_US = 2.0

#: (name, baseline name, target ratio or None, measure: client "cpu" or "wall" time)
RATIOS: list[tuple[str, str, float | None, str]] = [
    ("repo.add", "pre-encoded", 2.0, "cpu"),
    ("repo.save (loaded)", "pre-encoded", 2.0, "cpu"),
    ("session flush", "pre-encoded", 2.0, "cpu"),
    ("helpers.bulk", "pre-encoded", None, "cpu"),
    ("repo.find", "client.search", 1.2, "cpu"),
    ("repo.get_many", "client.mget", 1.2, "cpu"),
    ("uncached get", "cached get", 50.0, "wall"),
    ("uncached get", "Redis get", None, "wall"),
]


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """``(wall seconds, client CPU seconds)`` of one call, from a collected heap."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


class Bench:
    def __init__(self, client: Elasticsearch, n: int) -> None:
        self.client = client
        self.n = n
        self.base = f"bench-perf-{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []
        self.closing: list[em.Mapper] = []
        self.count = 0
        self.index_body = em.Mapper(client, models=[Employee]).spec(Employee).body(with_alias=False)

    def mapper(self, **kwargs: Any) -> em.Mapper:
        self.count += 1
        mapper = em.Mapper(
            self.client,
            models=[Employee],
            index_prefix=f"{self.base}-{self.count}-",
            bulk_chunk_size=CHUNK,
            **kwargs,
        )
        self.created.append(mapper.spec(Employee).physical_name())
        mapper.configure_indexes()
        return mapper

    def raw_index(self) -> str:
        self.count += 1
        index = f"{self.base}-{self.count}-raw"
        self.created.append(index)
        self.client.indices.create(index=index, **self.index_body)
        return index

    def drop(self, index: str) -> None:
        self.client.indices.delete(index=index, ignore_unavailable=True)

    def cleanup(self) -> None:
        for mapper in self.closing:
            mapper.close()
        for index in self.created:  # no wildcard deletes (destructive_requires_name)
            self.drop(index)

    # -- writes --------------------------------------------------------------------------

    def pre_encoded(self) -> tuple[float, float]:
        index = self.raw_index()
        lines = [
            _json.dumps({"create": {"_index": index, "_id": str(i)}})
            + b"\n"
            + _json.dumps(build_dict(values(i)))
            + b"\n"
            for i in range(self.n)
        ]
        bodies = [b"".join(lines[k : k + CHUNK]) for k in range(0, self.n, CHUNK)]
        raw = self.client.options(max_retries=0)

        def send() -> None:
            for body in bodies:
                items = raw.perform_request(
                    "POST", "/_bulk", headers=_HEADERS, body=body, endpoint_id="bulk", path_parts={}
                ).body["items"]
                assert all(next(iter(i.values()))["status"] == 201 for i in items)

        measured = timed(send)
        self.drop(index)
        return measured

    def helpers_bulk(self) -> tuple[float, float]:
        index = self.raw_index()
        dicts = [build_dict(values(i)) for i in range(self.n)]
        actions = (
            {"_op_type": "create", "_index": index, "_id": d["id"], "_source": d} for d in dicts
        )
        measured = timed(lambda: helpers.bulk(self.client, actions, chunk_size=CHUNK))
        self.drop(index)
        return measured

    def repo_add(self) -> tuple[float, float]:
        mapper = self.mapper()
        docs = [construct_esmapper(values(i)) for i in range(self.n)]
        measured = timed(lambda: mapper.repository(Employee).add(docs))
        self.drop(mapper.spec(Employee).physical_name())
        return measured

    def repo_save(self) -> tuple[float, float]:
        mapper = self.mapper()
        repo = mapper.repository(Employee)
        added = repo.add([construct_esmapper(values(i)) for i in range(self.n)])
        ids = [str(d.id) for d in added]
        loaded: list[Employee] = []
        for k in range(0, self.n, 1000):  # loaded documents: read back, state and all
            loaded += repo.get_many(ids[k : k + 1000])
        for doc in loaded:
            doc.age = (doc.age or 0) + 1
        measured = timed(lambda: repo.save(loaded))
        assert len(loaded) == self.n
        self.drop(mapper.spec(Employee).physical_name())
        return measured

    def session_flush(self) -> tuple[float, float]:
        mapper = self.mapper()
        docs = [construct_esmapper(values(i)) for i in range(self.n)]
        session = mapper.session()
        for doc in docs:
            session.add(doc)
        measured = timed(session.flush)
        session.close()
        self.drop(mapper.spec(Employee).physical_name())
        return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--reads", type=int, default=1000, help="hits per find / get_many")
    parser.add_argument("--gets", type=int, default=200, help="single gets per timed loop")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chart", default=None, help="write the CPU ratios as a PNG here")
    parser.add_argument(
        "--pause-gc", action="store_true", help="as with Mapper(pause_gc=True) (batch jobs)"
    )
    args = parser.parse_args()
    if args.pause_gc:
        from esmapper import _gcpause

        _gcpause.enable(True)

    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    per: dict[str, int] = {}

    def record(name: str, measured: tuple[float, float], count: int, keep: bool) -> None:
        per[name] = count
        if keep:
            wall.setdefault(name, []).append(measured[0])
            cpu.setdefault(name, []).append(measured[1])

    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=120, serializer=OrjsonSerializer())
        bench = Bench(client, args.docs)
        try:
            writes: list[tuple[str, Callable[[], tuple[float, float]]]] = [
                ("pre-encoded", bench.pre_encoded),
                ("helpers.bulk", bench.helpers_bulk),
                ("repo.add", bench.repo_add),
                ("repo.save (loaded)", bench.repo_save),
                ("session flush", bench.session_flush),
            ]
            for rep in range(args.repeat + 1):  # round 0 warms up
                shift = rep % len(writes)
                for name, fn in writes[shift:] + writes[:shift]:
                    record(name, fn(), args.docs, rep > 0)

            mapper = bench.mapper(cache=em.InMemoryCache())
            repo = mapper.repository(Employee)
            alias = mapper.spec(Employee).alias
            repo.add([construct_esmapper(values(i)) for i in range(max(args.reads, args.gets))])
            client.indices.refresh(index=alias)
            request = repo.search(limit=args.reads).body()
            ids = [f"{d.id}" for d in repo.find(limit=args.reads).documents]

            # every read touches one value of each document, as a caller would (the
            # baselines read it from the _source dicts): a find page builds its hit
            # objects only when `hits` is read, its documents at once

            def raw_search() -> None:
                hits = client.search(index=alias, body=request).body["hits"]["hits"]
                assert len([h["_source"]["name"] for h in hits]) == len(ids)

            def find() -> None:
                documents = repo.find(limit=args.reads).documents
                assert len([d.name for d in documents]) == len(ids)

            def raw_mget() -> None:
                docs = client.mget(index=alias, ids=ids).body["docs"]
                assert len([d["_source"]["name"] for d in docs if d["found"]]) == len(ids)

            def get_many() -> None:
                assert len([d.name for d in repo.get_many(ids)]) == len(ids)

            cached_repo = repo  # the model is not cached by default: ask per call
            singles = ids[: args.gets]

            def uncached() -> None:
                for id in singles:
                    cached_repo.get(id)

            def cached() -> None:
                for id in singles:
                    cached_repo.get(id, cache=True)

            # the Redis path: another mapper on the same index, sharing an embedded Redis
            shared = em.Mapper(
                client, models=[Employee], index_prefix=mapper.index_prefix, redis=redis_url()
            )
            bench.closing.append(shared)
            hybrid = shared.cache
            assert isinstance(hybrid, HybridCache)
            deadline = time.monotonic() + 20
            while not hybrid.link.lease_valid() and time.monotonic() < deadline:
                time.sleep(0.01)
            redis_repo = shared.repository(Employee)

            def via_redis() -> None:
                for id in singles:
                    hybrid.drop_local()  # no L1: one Redis round trip a read
                    redis_repo.get(id, cache=True)

            cached()  # fills the cache
            via_redis()  # fills Redis
            reads = [
                ("client.search", raw_search, len(ids)),
                ("repo.find", find, len(ids)),
                ("client.mget", raw_mget, len(ids)),
                ("repo.get_many", get_many, len(ids)),
                ("uncached get", uncached, len(singles)),
                ("cached get", cached, len(singles)),
                ("Redis get", via_redis, len(singles)),
            ]
            for rep in range(2 * args.repeat + 1):
                shift = rep % len(reads)
                for name, fn, count in reads[shift:] + reads[:shift]:
                    record(name, timed(fn), count, rep > 0)
        finally:
            bench.cleanup()
            client.close()

    machine = f"{platform.machine()} {platform.processor() or ''} {platform.python_version()}"
    print(f"server: {url}  json={_json.BACKEND}  machine: {machine.strip()}")
    print(
        f"date: {_dt.date.today()}  docs: {args.docs}  reads: {args.reads}  best of {args.repeat}"
    )
    print(f"{'':20} {'cpu µs/item':>12} {'wall µs/item':>13}")
    for name, runs in cpu.items():
        print(
            f"  {name:<18} {min(runs) / per[name] * 1e6:12.2f}"
            f" {min(wall[name]) / per[name] * 1e6:13.2f}"
        )
    print("ratios per item (the chart shows the cpu one; the cached and Redis gets' are wall):")
    rows = []
    for name, base, target, measure in RATIOS:
        ratio = (min(cpu[name]) / per[name]) / (min(cpu[base]) / per[base])
        wall_ratio = (min(wall[name]) / per[name]) / (min(wall[base]) / per[base])
        rows.append((name, base, wall_ratio if measure == "wall" else ratio, target))
        goal = (
            ""
            if target is None
            else f"  (target {'>=' if name == 'uncached get' else '<='} {target})"
        )
        print(f"  {name:<18} / {base:<14} cpu {ratio:6.2f}  wall {wall_ratio:6.2f}{goal}")
    cached_us = min(cpu["cached get"]) / per["cached get"] * 1e6
    print(f"  cached get: {cached_us:.2f} µs of client CPU  (target <= {CACHED_GET_TARGET_US})")
    for name in ("repo.add", "repo.save (loaded)", "session flush"):
        below = min(cpu[name]) / per[name] < min(cpu["helpers.bulk"]) / per["helpers.bulk"]
        print(f"  {name} below helpers.bulk (cpu): {'yes' if below else 'no'}")
    if args.chart:
        chart(rows, args.chart, f"{machine.strip()}, {_dt.date.today()}")


def chart(rows: list[tuple[str, str, float, float | None]], path: str, subtitle: str) -> None:
    import matplotlib  # a dev dependency, only for --chart

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(figsize=(8, 4.5))
    labels = [f"{name}\n/ {base}" for name, base, _, _ in rows]
    ratios = [ratio for _, _, ratio, _ in rows]
    colours = [
        "grey" if target is None else ("tab:green" if ok else "tab:red")
        for (name, _, ratio, target) in rows
        for ok in [
            target is not None and (ratio >= target if name == "uncached get" else ratio <= target)
        ]
    ]
    bars = axes.barh(labels, ratios, color=colours)
    for (_, _, _, target), bar in zip(rows, bars, strict=True):
        if target is not None:
            y = bar.get_y()
            axes.plot([target, target], [y, y + bar.get_height()], color="black", linewidth=2)
    for (_, _, ratio, target), bar in zip(rows, bars, strict=True):  # right of bar and mark
        x = max(ratio, target or 0.0) * 1.04
        axes.text(x, bar.get_y() + bar.get_height() / 2, f"{ratio:.2f}", va="center")
    axes.set_xscale("log")
    ticks = [1, 1.5, 2, 3, 5, 10, 20, 50, 100]
    axes.set_xticks(ticks, [f"{t:g}" for t in ticks])
    axes.minorticks_off()
    axes.set_xlim(1, max(100.0, max(ratios) * 1.5))
    axes.invert_yaxis()
    axes.set_xlabel("client CPU ratio; cached and Redis get: wall (log scale; black mark: target)")
    axes.set_title(f"esmapper client CPU vs baselines\n{subtitle}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"chart: {path}")


if __name__ == "__main__":
    main()
