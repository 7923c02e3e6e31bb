"""Bulk indexing benchmark (a script, not a test): BulkWriter vs elasticsearch.helpers.bulk.

Indexes the same dict documents with ``elasticsearch.helpers.bulk`` (the baseline) and with
``esmapper.bulk.BulkWriter.write``, each into its own fresh index, alternating, and prints
the best wall time and the best client CPU time (this process only, so without the
server's work) of each, and their ratios (lower is better; < 1.0 means faster than the
baseline). Both use chunks of 500 actions and the same client; the writer also builds a
per-item outcome list (ids, versions), which the baseline does not.

The server: ``ESMAPPER_URL`` if set, else ``esmapper.testing.start_test_server()`` (which
honours ``ESMAPPER_TEST_URL`` / ``ESMAPPER_TEST_DOCKER`` and otherwise starts the local
noida-db server, stopped again at the end)::

    python bench/bench_bulk.py [--docs 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
import uuid
from collections.abc import Callable
from typing import Any

from elasticsearch import Elasticsearch, helpers

from esmapper import _json
from esmapper.bulk import BulkAction, BulkWriter
from esmapper.testing import elasticsearch_url


def make_docs(n: int) -> list[dict[str, Any]]:
    """``n`` employee-like documents (about 250 bytes of JSON each)."""
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return [
        {
            "id": f"emp-{i:06d}",
            "name": f"Employee number {i}",
            "email": f"employee{i}@example.com",
            "age": 20 + i % 45,
            "company_id": f"company-{i % 50}",
            "is_deleted": False,
            "created_utc": (base + dt.timedelta(seconds=i)).isoformat(),
            "updated_utc": (base + dt.timedelta(seconds=i)).isoformat(),
            "tags": ["a", "b", f"t{i % 7}"],
        }
        for i in range(n)
    ]


def run_helpers(client: Elasticsearch, index: str, docs: list[dict[str, Any]]) -> None:
    actions = ({"_index": index, "_id": d["id"], "_source": d} for d in docs)
    ok, errors = helpers.bulk(client, actions, chunk_size=500, max_retries=3)
    assert ok == len(docs) and not errors, errors


def run_writer(writer: BulkWriter, index: str, docs: list[dict[str, Any]]) -> None:
    outcomes = writer.write(BulkAction("index", index, d["id"], d) for d in docs)
    assert len(outcomes) == len(docs) and all(o.ok for o in outcomes)


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    """``(wall seconds, client CPU seconds)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    docs = make_docs(args.docs)
    prefix = f"bench-bulk-{uuid.uuid4().hex[:8]}-"

    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=120)
        writer = BulkWriter(client, chunk_size=500)
        results: dict[str, list[tuple[float, float]]] = {
            "helpers.bulk": [],
            "BulkWriter.write": [],
        }
        created: list[str] = []
        try:
            for rep in range(args.repeat + 1):  # round 0 warms up both paths
                for name, fn in (
                    ("helpers.bulk", lambda i: run_helpers(client, i, docs)),
                    ("BulkWriter.write", lambda i: run_writer(writer, i, docs)),
                ):
                    index = f"{prefix}{name.split('.')[0].lower()}-{rep}"
                    client.indices.create(index=index, settings={"number_of_replicas": 0})
                    created.append(index)
                    measured = timed(lambda fn=fn, index=index: fn(index))
                    if rep:
                        results[name].append(measured)
                    client.indices.delete(index=index)
        finally:
            for index in created:  # no wildcard deletes (destructive_requires_name)
                client.indices.delete(index=index, ignore_unavailable=True)
            client.close()

    base_wall = min(w for w, _ in results["helpers.bulk"])
    base_cpu = min(c for _, c in results["helpers.bulk"])
    print(f"{args.docs} documents, chunks of 500, best of {args.repeat}, json={_json.BACKEND}")
    print(f"  server: {url}")
    print("  (wall = end to end, server included; cpu = this process only)")
    for name, runs in results.items():
        wall = min(w for w, _ in runs)
        cpu = min(c for _, c in runs)
        print(
            f"  {name:<17} wall {wall * 1000:7.1f} ms ({args.docs / wall:6.0f} docs/s)"
            f" ratio {wall / base_wall:4.2f} | client cpu {cpu * 1000:6.1f} ms"
            f" ratio {cpu / base_cpu:4.2f}"
        )


if __name__ == "__main__":
    main()
