"""The write path in process (a script, not a test; no server): client CPU per document.

The client is a real ``Elasticsearch`` whose one node is :class:`FakeNode`, an in-memory
stand-in answering ``/_bulk`` as a server does (each item ``created``/``updated`` with its
``_index``, ``_id``, ``_version``, ``_seq_no``, ``_primary_term``, ``result``, ``status``,
``filter_path`` honoured) and ``_mget`` from what it stored, so every layer of the client
(transport, serializers) runs as against a server. The time spent inside the node (the
"server") is subtracted from each measurement. Cases, over ``--docs`` documents of
``bench_models.Employee``, best of ``--repeat``:

* ``pre-encoded``: NDJSON bytes built beforehand, one ``perform_request`` per 500 and the
  answer's items read (the limit ``bench_perf.py`` compares with);
* ``helpers.bulk`` of the source dicts;
* ``repo.add`` of new documents; ``repo.save (loaded)`` of documents read back with
  ``get_many`` (their originals the hits' bytes), one field changed;
* ``session flush`` of new documents; ``session flush (loaded)``: documents loaded in the
  session, one field changed on each.

The index is marked ensured (``spec.ensured.mark()``): no index requests. ``--profile
CASE`` prints a cProfile of one run of that case (top functions by own time)::

    python bench/bench_write_path.py [--docs 2000] [--repeat 7] [--profile repo.add]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from bench_models import Employee, build_dict, construct_esmapper, values
from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders
from elastic_transport._node import NodeApiResponse
from elasticsearch import Elasticsearch, helpers
from elasticsearch.serializer import OrjsonSerializer

import esmapper as em
from esmapper import _json

CHUNK = 500
_HEADERS = {"accept": "application/json", "content-type": "application/x-ndjson"}
_UNFILTERED = b'"_version":1,"_shards":{"total":2,"successful":1,"failed":0},'
_RESULT = {"create": ("created", 201), "index": ("updated", 200), "update": ("updated", 200)}


class FakeNode(BaseNode):
    """An in-memory Elasticsearch node: ``_bulk`` (create/index/delete), ``_mget``, ``/``.

    ``spent`` sums the seconds spent answering (subtracted from the client's CPU)."""

    spent = 0.0
    stored: ClassVar[dict[tuple[str, str], tuple[bytes, int]]] = {}
    seq_no = 0

    def perform_request(  # type: ignore[override]
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: Any = None,
        request_timeout: Any = None,
    ) -> NodeApiResponse:
        start = time.process_time()
        url = urlsplit(target)
        query = parse_qs(url.query)
        if url.path.endswith("/_bulk"):
            answer = self._bulk(body or b"", "filter_path" in query)
        elif url.path.endswith("/_mget"):
            answer = self._mget(url.path, _json.loads(body or b"{}"))
        elif url.path == "/":
            answer = b'{"version":{"number":"9.1.0","build_flavor":"default"},"tagline":"x"}'
        else:
            raise AssertionError(f"the bench sends no {method} {target}")
        meta = ApiResponseMeta(
            status=200,
            http_version="1.1",
            headers=HttpHeaders(
                {"content-type": "application/json", "x-elastic-product": "Elasticsearch"}
            ),
            duration=0.0,
            node=self.config,
        )
        FakeNode.spent += time.process_time() - start
        return NodeApiResponse(meta, answer)

    @staticmethod
    def physical(index: str) -> str:
        return index if index.endswith("-v1") else f"{index}-v1"

    def _bulk(self, body: bytes, filtered: bool) -> bytes:
        lines = body.split(b"\n")
        items: list[bytes] = []
        k = 0
        while k < len(lines) and lines[k]:
            ((op, meta),) = _json.loads(lines[k]).items()
            index = self.physical(meta["_index"])
            doc_id = meta["_id"]
            FakeNode.seq_no += 1
            seq = FakeNode.seq_no
            if op == "delete":
                FakeNode.stored.pop((index, doc_id), None)
                result, status = "deleted", 200
                k += 1
            else:
                before = FakeNode.stored.get((index, doc_id))
                version = 1 if before is None else before[1] + 1
                FakeNode.stored[index, doc_id] = (lines[k + 1], version)
                result, status = _RESULT[op]
                k += 2
            extra = (
                b""
                if filtered
                else b'"_version":1,"_shards":{"total":2,"successful":1,"failed":0},'
            )
            items.append(
                b'{"%s":{"_index":"%s","_id":"%s",%s"result":"%s","_seq_no":%d,'
                b'"_primary_term":1,"status":%d}}'
                % (
                    op.encode(),
                    index.encode(),
                    doc_id.encode(),
                    extra,
                    result.encode(),
                    seq,
                    status,
                )
            )
        took = b"" if filtered else b'"took":3,"errors":false,'
        return b'{%s"items":[%s]}' % (took, b",".join(items))

    def _mget(self, path: str, request: dict[str, Any]) -> bytes:
        docs = []
        specs = request.get("docs") or [
            {"_index": path.split("/")[1], "_id": doc_id} for doc_id in request["ids"]
        ]
        for spec in specs:
            index = self.physical(spec["_index"])
            found = FakeNode.stored.get((index, spec["_id"]))
            if found is None:
                docs.append(
                    b'{"_index":"%s","_id":"%s","found":false}'
                    % (index.encode(), spec["_id"].encode())
                )
                continue
            docs.append(
                b'{"_index":"%s","_id":"%s","_version":%d,"_seq_no":%d,"_primary_term":1,'
                b'"found":true,"_source":%s}'
                % (index.encode(), spec["_id"].encode(), found[1], found[1], found[0])
            )
        return b'{"docs":[%s]}' % b",".join(docs)


def client() -> Elasticsearch:
    return Elasticsearch(
        "http://bench-fake:9200", node_class=FakeNode, serializer=OrjsonSerializer()
    )


def mapper(es: Elasticsearch, count: list[int]) -> em.Mapper:
    count[0] += 1
    made = em.Mapper(
        es, models=[Employee], index_prefix=f"bench-{count[0]}-", bulk_chunk_size=CHUNK
    )
    made.spec(Employee).ensured.mark()  # no index requests
    return made


def timed(fn: Callable[[], Any], collect: bool = True) -> float:
    """Client CPU seconds of one call (the fake server's time taken off), from a collected
    heap; ``collect=False``: with the cyclic garbage collector off during the call."""
    gc.collect()
    FakeNode.spent = 0.0
    if not collect:
        gc.disable()
    cpu = time.process_time()
    try:
        fn()
    finally:
        took = time.process_time() - cpu - FakeNode.spent
        gc.enable()
    return took


def cases(es: Elasticsearch, n: int) -> dict[str, Callable[[], Callable[[], Any]]]:
    """Each case's set-up (the fake store emptied first), returning the call to time."""
    count = [0]
    raw = es.options(max_retries=0)

    def pre_encoded() -> Callable[[], Any]:
        index = f"raw-{count[0]}"
        count[0] += 1
        lines = [
            _json.dumps({"create": {"_index": index, "_id": str(i)}})
            + b"\n"
            + _json.dumps(build_dict(values(i)))
            + b"\n"
            for i in range(n)
        ]
        bodies = [b"".join(lines[k : k + CHUNK]) for k in range(0, n, CHUNK)]

        def send() -> None:
            for body in bodies:
                items = raw.perform_request(
                    "POST", "/_bulk", headers=_HEADERS, body=body, endpoint_id="bulk", path_parts={}
                ).body["items"]
                assert all(next(iter(i.values()))["status"] == 201 for i in items)

        return send

    def helpers_bulk() -> Callable[[], Any]:
        index = f"raw-{count[0]}"
        count[0] += 1
        dicts = [build_dict(values(i)) for i in range(n)]

        def send() -> None:
            actions = (
                {"_op_type": "create", "_index": index, "_id": d["id"], "_source": d} for d in dicts
            )
            helpers.bulk(es, actions, chunk_size=CHUNK)

        return send

    def repo_add() -> Callable[[], Any]:
        repo = mapper(es, count).repository(Employee)
        docs = [construct_esmapper(values(i)) for i in range(n)]
        return lambda: repo.add(docs)

    def loaded(repo: Any) -> list[Any]:
        added = repo.add([construct_esmapper(values(i)) for i in range(n)])
        ids = [str(d.id) for d in added]
        docs: list[Any] = []
        for k in range(0, n, 1000):
            docs += repo.get_many(ids[k : k + 1000])
        assert len(docs) == n
        return docs

    def repo_save() -> Callable[[], Any]:
        repo = mapper(es, count).repository(Employee)
        docs = loaded(repo)
        for doc in docs:
            doc.age = (doc.age or 0) + 1
        return lambda: repo.save(docs)

    def session_flush() -> Callable[[], Any]:
        session = mapper(es, count).session()
        for i in range(n):
            session.add(construct_esmapper(values(i)))
        return session.flush

    def session_flush_loaded() -> Callable[[], Any]:
        made = mapper(es, count)
        docs = loaded(made.repository(Employee))
        session = made.session()
        for doc in docs:
            session.add(doc)
            doc.age = (doc.age or 0) + 1
        return session.flush

    def emptied(setup: Callable[[], Callable[[], Any]]) -> Callable[[], Callable[[], Any]]:
        def fresh() -> Callable[[], Any]:
            FakeNode.stored.clear()  # the heap holds one case's documents at a time
            return setup()

        return fresh

    made = {
        "pre-encoded": pre_encoded,
        "helpers.bulk": helpers_bulk,
        "repo.add": repo_add,
        "repo.save (loaded)": repo_save,
        "session flush": session_flush,
        "session flush (loaded)": session_flush_loaded,
    }
    return {name: emptied(setup) for name, setup in made.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", default=None, help="a case to profile (one run)")
    parser.add_argument("--top", type=int, default=35, help="rows of the profile")
    parser.add_argument("--no-gc", action="store_true", help="profile with the collector off")
    parser.add_argument("--cases", default=None, help="comma-separated cases (pre-encoded always)")
    args = parser.parse_args()
    es = client()
    made = cases(es, args.docs)
    if args.cases:
        chosen = {"pre-encoded", *args.cases.split(",")}
        made = {name: setup for name, setup in made.items() if name in chosen}
    if args.profile:
        call = made[args.profile]()
        call()  # warm: compiled encoders, first-use caches
        call = made[args.profile]()
        gc.collect()
        if args.no_gc:
            gc.disable()
        profile = cProfile.Profile()
        profile.runcall(call)
        gc.enable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
        return
    best: dict[tuple[str, bool], float] = {}
    names = list(made)
    for rep in range(args.repeat + 1):  # round 0 warms up
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            for collect in (True, False):
                took = timed(made[name](), collect)
                if rep:
                    key = (name, collect)
                    best[key] = min(best.get(key, took), took)
    print(f"{args.docs} documents, best of {args.repeat}, client CPU without the fake server")
    print(f"{'case':<26}{'us/doc':>9}{'x pre-enc':>11}{'no GC':>9}{'x pre-enc':>11}")
    for name in names:
        row = f"{name:<26}"
        for collect in (True, False):
            seconds = best[name, collect]
            limit = best["pre-encoded", collect]
            row += f"{seconds / args.docs * 1e6:>9.2f}{seconds / limit:>11.2f}"
        print(row)


if __name__ == "__main__":
    main()
