"""Issue #17 performance at scale (a script, not a test), each ratio measured in one run.

* **writes** (goal 3): ``repo.add`` of ``--docs`` models through
  ``Mapper(bulk_concurrency=T)`` against ``elasticsearch.helpers.parallel_bulk`` of the
  same documents as dicts with ``thread_count=T`` (both 500 a request, every item's
  result read); also a session flush with the same setting. Wall time is the goal (the
  threads exist to overlap server time), client CPU is printed too.
* **reindex** (goal 4): a version bump (``esmapper.indexes.reindex``, ``-v1 -> -v2``) of
  ``--docs`` documents, alone and with a thread writing through the alias meanwhile
  (``--write-rate`` writes/s), against a bare ``POST /_reindex``
  (``wait_for_completion=true``) into a fresh index with the same mapping, on the same
  server. Each bump is bracketed: a bare ``_reindex`` of its ``-v1`` index just before
  it and one of its result just after it, the baseline being their mean (the local
  server slows as it ages, so a baseline measured once, first, on a fresh server would
  flatter it). The bump's phases are timed from its progress reports.
* **memory** (goal 5): tracemalloc peak of ``repo.batch_process`` and of snapshot paging
  (``repo.find(snapshot=True)`` then ``next_page()`` until the end) over ``--docs``
  documents against the same over ``--small`` documents.

Every timed write or reindex has a fresh index; the methods compared are interleaved (the
order rotates every round) and the best of ``--repeat`` rounds is kept. CPU
(``time.process_time``, this process only) and wall time are reported separately::

    python bench/bench_scale.py [--docs 200000] [--small 20000] [--threads 4] [--repeat 1]
                                [--only writes,reindex,memory] [--pause-gc]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as _dt
import gc
import platform
import sys
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from bench_models import Address, build_dict, construct_esmapper, values
from elasticsearch import Elasticsearch, helpers
from elasticsearch.serializer import OrjsonSerializer

import esmapper as em
from esmapper import _json
from esmapper.indexes import reindex
from esmapper.testing import elasticsearch_url

CHUNK = 500
SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "1s"}


class Row(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """The bench_models Employee at version 1 of its own alias."""

    class Index:
        name = "bench_rows"
        version = 1
        settings = SETTINGS

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    hired_utc: _dt.datetime | None = None
    tags: list[str] = em.field(em.Keyword(), factory=list)
    address: Address | None = None


class RowV2(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """Version 2: ``age`` becomes a long (a mapping change that needs a reindex)."""

    class Index:
        name = "bench_rows"
        version = 2
        settings = SETTINGS

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Long(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    hired_utc: _dt.datetime | None = None
    tags: list[str] = em.field(em.Keyword(), factory=list)
    address: Address | None = None


def row(i: int, model: type[Any] = Row) -> Any:
    doc = construct_esmapper(values(i))
    return model(**{k: getattr(doc, k) for k in ("id", *_FIELDS)})


_FIELDS = (
    "name",
    "email",
    "age",
    "company_id",
    "hired_utc",
    "tags",
    "address",
    "created_utc",
    "updated_utc",
)


def _an_hour_ago() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(hours=1)


class _FullPasses:
    """Wall seconds and count of the cyclic collector's full (generation 2) passes in this
    process since :meth:`reset` (a ``gc.callbacks`` hook): where the client CPU of a
    large write went that the documents' own work does not explain."""

    def __init__(self) -> None:
        self.seconds, self.count, self._start = 0.0, 0, 0.0
        gc.callbacks.append(self._on_pass)

    def _on_pass(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.count += 1

    def reset(self) -> None:
        self.seconds, self.count = 0.0, 0


FULL_PASSES = _FullPasses()


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """``(wall seconds, client CPU seconds)`` of one call (the collector's full passes
    during it printed)."""
    FULL_PASSES.reset()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    measured = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"  ... ({FULL_PASSES.count} full GC passes, {FULL_PASSES.seconds:.2f}s)", file=sys.stderr
    )
    return measured


class Bench:
    def __init__(
        self, client: Elasticsearch, n: int, threads: int, write_rate: float = 200.0
    ) -> None:
        self.client = client
        self.write_rate = write_rate
        self.n = n
        self.threads = threads
        self.base = f"bench-scale-{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []
        self.count = 0
        self.next_id = n  # ids of the documents written during reindex runs

    def mapper(self, model: type[Any] = Row, **kwargs: Any) -> em.Mapper:
        self.count += 1
        return self.named_mapper(f"{self.base}-{self.count}-", model, **kwargs)

    def named_mapper(self, prefix: str, model: type[Any], **kwargs: Any) -> em.Mapper:
        mapper = em.Mapper(
            self.client, models=[model], index_prefix=prefix, bulk_chunk_size=CHUNK, **kwargs
        )
        self.created.append(mapper.spec(model).physical_name())
        return mapper

    def drop(self, index: str) -> None:
        self.client.options(ignore_status=404).indices.delete(index=index)

    def cleanup(self) -> None:
        for index in self.created:  # no wildcard deletes (destructive_requires_name)
            self.drop(index)

    # -- goal 3: large writes ------------------------------------------------------------

    def parallel_bulk(self) -> tuple[float, float]:
        mapper = self.mapper()
        mapper.configure_indexes()
        index = mapper.spec(Row).physical_name()
        dicts = [build_dict(values(i)) for i in range(self.n)]
        actions = (
            {"_op_type": "create", "_index": index, "_id": d["id"], "_source": d} for d in dicts
        )

        def send() -> None:
            ok = sum(
                1
                for good, _ in helpers.parallel_bulk(
                    self.client, actions, thread_count=self.threads, chunk_size=CHUNK
                )
                if good
            )
            assert ok == self.n, ok

        measured = timed(send)
        self.drop(index)
        return measured

    def repo_add(self) -> tuple[float, float]:
        mapper = self.mapper(bulk_concurrency=self.threads)
        mapper.configure_indexes()
        docs = [row(i) for i in range(self.n)]
        measured = timed(lambda: mapper.repository(Row).add(docs))
        assert all(d.version for d in docs)
        self.drop(mapper.spec(Row).physical_name())
        return measured

    def session_flush(self) -> tuple[float, float]:
        mapper = self.mapper(bulk_concurrency=self.threads)
        mapper.configure_indexes()
        docs = [row(i) for i in range(self.n)]
        session = mapper.session()
        session.add_all(docs)
        measured = timed(session.flush)
        session.close()
        assert all(d.version for d in docs)
        self.drop(mapper.spec(Row).physical_name())
        return measured

    # -- goal 4: reindex -----------------------------------------------------------------

    def seed_v1(self) -> tuple[em.Mapper, str]:
        """A fresh ``-v1`` index of ``n`` Rows; returns a RowV2 mapper on it and ``-v1``."""
        self.count += 1
        prefix = f"{self.base}-{self.count}-"
        # written an hour ago: a catch-up pass finds only what the run's writes changed
        seeder = self.named_mapper(prefix, Row, bulk_concurrency=self.threads, clock=_an_hour_ago)
        seeder.configure_indexes()
        repo = seeder.repository(Row)
        for start in range(0, self.n, 20_000):
            repo.add([row(i) for i in range(start, min(self.n, start + 20_000))])
        old = seeder.spec(Row).physical_name()
        self.client.indices.refresh(index=old)
        mapper = self.named_mapper(prefix, RowV2, bulk_concurrency=1)
        return mapper, old

    def bare_reindex(self, source: str, mapper: em.Mapper, writes: bool) -> tuple[float, float]:
        """A bare ``POST /_reindex`` of ``source`` into a fresh index with the v2 mapping;
        with ``writes``, the same paced writes as during a bump go through ``mapper``'s
        alias meanwhile (the server's load from them is not the bump's)."""
        self.count += 1
        target = f"{self.base}-{self.count}-bare"
        self.created.append(target)
        self.client.indices.create(index=target, **mapper.spec(RowV2).body(with_alias=False))
        expected = self.client.count(index=source)["count"]

        def send() -> None:
            self.client.options(request_timeout=24 * 3600).reindex(
                source={"index": source}, dest={"index": target}, wait_for_completion=True
            )

        with self.paced_writes(mapper.repository(RowV2), writes):
            measured = timed(send)
        self.client.indices.refresh(index=target)
        assert self.client.count(index=target)["count"] >= expected
        self.drop(target)
        return measured

    @contextlib.contextmanager
    def paced_writes(self, repo: em.Repository[Any], writes: bool) -> Iterator[None]:
        """With ``writes``: a thread adding and saving new documents through ``repo`` at
        ``write_rate`` writes/s for the duration of the block (an application's steady
        writes, not a load test of the server)."""
        if not writes:
            yield
            return
        stop = threading.Event()

        def writer() -> None:
            written, began = 0, time.perf_counter()
            while not stop.is_set():
                batch = [row(k, RowV2) for k in range(self.next_id, self.next_id + 25)]
                self.next_id += 25
                try:
                    repo.add(batch)
                    for d in batch:
                        d.age += 1
                    repo.save(batch)
                    written += 50
                except em.EsmapperError:
                    time.sleep(0.01)  # e.g. a write block held past write_block_wait
                stop.wait(max(0.0, written / self.write_rate - (time.perf_counter() - began)))

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        time.sleep(0.2)
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def bracketed_bump(
        self, phases: dict[str, float], writes: bool
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """``(bump, bare)``: a version bump of a fresh ``-v1`` index, bracketed by a bare
        ``_reindex`` of that ``-v1`` just before it and one of the bump's result just after
        it, each under the same writes as the bump (none, or ``write_rate`` writes/s);
        ``bare`` is the mean of the two, so a server that slows as it ages (the local one
        does) weighs on both sides of the ratio alike."""
        mapper, old = self.seed_v1()
        before = self.bare_reindex(old, mapper, writes)
        bump, new = self.version_bump(mapper, old, phases, writes)
        after = self.bare_reindex(new, mapper, writes)
        self.drop(new)
        bare = ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2)
        print(
            f"  ... bare _reindex before {before[0]:.2f}s, after {after[0]:.2f}s",
            file=sys.stderr,
        )
        return bump, bare

    def version_bump(
        self, mapper: em.Mapper, old: str, phases: dict[str, float], writes: bool
    ) -> tuple[tuple[float, float], str]:
        """The bump of ``old`` (``-v1``) to ``-v2`` (alone or with paced writes through the
        alias); returns ``(wall, cpu)`` and the new index (``old`` is dropped)."""
        last = [time.perf_counter(), "start"]

        def progress(p: Any) -> None:
            now = time.perf_counter()
            phases[last[1]] = phases.get(last[1], 0.0) + now - last[0]
            last[:] = [now, p.phase]

        with self.paced_writes(mapper.repository(RowV2), writes):
            last[0] = time.perf_counter()
            measured = timed(lambda: reindex(mapper, RowV2, progress=progress))
        new = mapper.spec(RowV2).physical_name()
        self.client.indices.refresh(index=new)
        assert self.client.count(index=new)["count"] >= self.n
        self.drop(old)
        return measured, new

    # -- goal 5: memory of big reads -----------------------------------------------------

    def seed_rows(self, n: int) -> em.Repository[Any]:
        mapper = self.mapper(bulk_concurrency=self.threads)
        mapper.configure_indexes()
        repo = mapper.repository(Row)
        for start in range(0, n, 20_000):
            repo.add([row(i) for i in range(start, min(n, start + 20_000))])
        self.client.indices.refresh(index=mapper.spec(Row).physical_name())
        return repo


def batch_process(repo: em.Repository[Any], n: int, batch: int) -> None:
    seen = [0]

    def fn(docs: list[Any]) -> None:
        seen[0] += len(docs)

    assert repo.batch_process(None, fn, batch_size=batch) == n == seen[0]


def snapshot_pages(repo: em.Repository[Any], n: int, batch: int) -> None:
    results = repo.find(snapshot=True, limit=batch, sort="id")
    seen = len(results.documents)
    while results.next_page():
        seen += len(results.documents)
    assert seen == n, seen


def peak(fn: Callable[[], Any]) -> tuple[int, float]:
    """``(tracemalloc peak bytes, wall seconds)`` of one call."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        fn()
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - start
    finally:
        tracemalloc.stop()


def rounds(
    methods: list[tuple[str, Callable[[], tuple[float, float]]]], repeat: int, warm_up: bool
) -> Iterator[tuple[str, tuple[float, float]]]:
    """Each method once per round, the order rotating; the first round dropped if
    ``warm_up``."""
    for rep in range(repeat + int(warm_up)):
        shift = rep % len(methods)
        for name, fn in methods[shift:] + methods[:shift]:
            measured = fn()
            if rep > 0 or not warm_up:
                yield name, measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--small", type=int, default=20_000, help="the memory baseline run")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--write-rate", type=float, default=200.0, help="writes/s during 'bump + writes'"
    )
    parser.add_argument("--batch", type=int, default=1000, help="documents per page (memory)")
    parser.add_argument("--only", default="writes,reindex,memory")
    parser.add_argument(
        "--bumps", default="alone,writes", help="the version bumps timed: alone, with writes"
    )
    parser.add_argument(
        "--pause-gc",
        action="store_true",
        help="as with Mapper(pause_gc=True): the collector off during batches (default: "
        "its full passes deferred)",
    )
    args = parser.parse_args()
    if args.pause_gc:
        from esmapper import _gcpause

        _gcpause.enable(True)
    only = set(args.only.split(","))
    best: dict[str, tuple[float, float]] = {}
    phases: dict[str, dict[str, float]] = collections.defaultdict(dict)

    def keep(name: str, measured: tuple[float, float]) -> None:
        print(f"  ... {name}: wall {measured[0]:.2f}s cpu {measured[1]:.2f}s", file=sys.stderr)
        old = best.get(name)
        best[name] = measured if old is None or measured[0] < old[0] else old

    memory: dict[str, tuple[int, float]] = {}
    bump_ratios: dict[str, float] = {}
    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=600, serializer=OrjsonSerializer())
        bench = Bench(client, args.docs, args.threads, args.write_rate)
        try:
            if "writes" in only:
                writes = [
                    ("helpers.parallel_bulk", bench.parallel_bulk),
                    ("repo.add", bench.repo_add),
                    ("session flush", bench.session_flush),
                ]
                for name, measured in rounds(writes, args.repeat, warm_up=args.docs <= 20_000):
                    keep(name, measured)
            if "reindex" in only:
                # each bump is bracketed by bare _reindex runs of the same index (see
                # bracketed_bump); the ratio is taken per pair, the best pair kept
                for _ in range(args.repeat):
                    kinds = (("version bump", False, "alone"), ("bump + writes", True, "writes"))
                    for name, writes, _ in (k for k in kinds if k[2] in args.bumps.split(",")):
                        kind = "with writes" if writes else "alone"
                        bump, bare = bench.bracketed_bump(phases[kind], writes)
                        keep(name, bump)
                        keep(f"bare _reindex ({kind})", bare)
                        pair = bump[0] / bare[0]
                        bump_ratios[name] = min(bump_ratios.get(name, pair), pair)
            if "memory" in only:
                for n in (args.small, args.docs):
                    repo = bench.seed_rows(n)
                    for name, fn in (
                        ("batch_process", lambda r=repo, n=n: batch_process(r, n, args.batch)),
                        ("snapshot paging", lambda r=repo, n=n: snapshot_pages(r, n, args.batch)),
                    ):
                        if n == args.small:  # warm-up (imports, connections) before both
                            fn()
                        memory[f"{name} {n}"] = min(peak(fn) for _ in range(args.repeat))
                    bench.drop(repo.spec.physical_name())
        finally:
            bench.cleanup()
            client.close()

    machine = f"{platform.machine()} {platform.processor() or ''} {platform.python_version()}"
    print(f"server: {url}  json={_json.BACKEND}  machine: {machine.strip()}")
    print(
        f"date: {_dt.date.today()}  docs: {args.docs}  threads: {args.threads}"
        f"  best of {args.repeat}"
    )
    if best:
        if "reindex" in only:
            print(f"  bump + writes: {args.write_rate:.0f} writes/s (adds and saves) meanwhile")
        print(f"{'':30} {'wall s':>9} {'cpu s':>9} {'docs/s':>9}")
        for name, (wall, cpu) in best.items():
            print(f"  {name:<28} {wall:9.2f} {cpu:9.2f} {args.docs / wall:9.0f}")
    ratios = [
        ("repo.add", "helpers.parallel_bulk", 1.0),
        ("session flush", "helpers.parallel_bulk", 1.0),
    ]
    for name, base, target in ratios:
        if name in best and base in best:
            wall = best[name][0] / best[base][0]
            cpu = best[name][1] / max(best[base][1], 1e-9)
            print(
                f"  {name:<14} / {base:<22} wall {wall:6.2f} (target <= {target})  cpu {cpu:6.2f}"
            )
    for name, ratio in bump_ratios.items():
        print(
            f"  {name:<14} / bare _reindex (same index, mean of before and after) "
            f"wall {ratio:6.2f} (target <= 1.3 alone)"
        )
    for kind, spent in phases.items():
        listed = "  ".join(f"{p} {s:.2f}s" for p, s in spent.items() if s >= 0.005)
        print(f"  bump phases ({kind}, summed over rounds): {listed}")
    for name in ("batch_process", "snapshot paging"):
        small, big = memory.get(f"{name} {args.small}"), memory.get(f"{name} {args.docs}")
        if small and big:
            print(
                f"  {name:<16} peak {big[0] / 1e6:7.2f} MB over {args.docs}, "
                f"{small[0] / 1e6:7.2f} MB over {args.small}: ratio {big[0] / small[0]:5.2f} "
                f"(target <= 1.1); wall {big[1]:.1f}s / {small[1]:.1f}s"
            )


if __name__ == "__main__":
    main()
