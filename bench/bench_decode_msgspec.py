"""Issue 28 feasibility: msgspec for the read side's decoding (a script, not a test).

Needs a server (``ESMAPPER_URL``, else ``esmapper.testing.elasticsearch_url()``).

1. **The answer's bytes on a client copy.** ``client.options(...)`` shares the user's
   ``Transport`` (and so its ``SerializerCollection``): no option gives a copy its own
   serializers. :func:`raw_client` (now :mod:`esmapper._raw_answers`, which the reads
   use; this study was its prototype) makes one: a shallow copy of the transport (the same
   node pool, connections and sniffing lock) whose JSON mimetypes (``application/json``,
   ``application/vnd.elasticsearch+json``) load to :class:`RawJson` (the body's bytes,
   unparsed; request bodies are still dumped by the user's serializer), under a client
   made by ``client.options()`` (its headers, timeouts, retries). Its search/mget answers
   come back as ``BinaryApiResponse`` whose body is the bytes; an error answer is raised by
   the client with the bytes as its body, so :func:`raw_call` re-raises it as the user's
   client would (same class, message and decoded body). The script checks that the
   user's client, its transport and its serializers are unchanged and still answer dicts.
2. **Per hit, in process**, on the real answers (a ``_search`` of ``--hits`` bench
   ``Employee`` s, read as ``repo.find`` reads them, and their ``_mget``) captured once,
   best of ``--repeat``, every candidate touching ``name`` of every model:

   * ``orjson.loads``: the whole answer to dicts, what elastic-transport does (the raw
     client's decoding);
   * ``current``: ``orjson.loads`` + the page loop of ``_search_answers.results``
     (``version_of``, ``DocState(source, ...)``, ``info.from_source``);
   * ``envelope + orjson``: a ``msgspec`` typed envelope whose hits keep ``_source`` as
     ``msgspec.Raw``, then ``orjson.loads`` of it + ``from_source`` per hit (the same dicts);
   * ``envelope, msgspec dicts``: the envelope decoding ``_source`` into dicts itself;
   * ``mirror + lazy original``: the envelope, then per hit a generated ``msgspec.Struct``
     mirror of the stored fields (unknown keys forbidden, absent ones ``UNSET``: either
     sends the hit to ``current``'s path) turned into the model by the codec's own value
     expressions (``model.codec._load_expr``: the same conversions as ``from_source``),
     ``DocState.original`` left as the ``Raw`` bytes (decoded when first needed: would
     need a lazy ``original``); ``+ original`` decodes it at once;
   * ``msgspec into attrs``: ``msgspec.json.Decoder(Employee)`` on each ``Raw`` (msgspec
     builds the attrs class in C) + a ``DocState`` holding the ``Raw``;
   * the same figures for the ``_mget`` answer (``current`` / best exact candidate);
   * the parts: the envelope alone, ``orjson.loads`` of each source, the mirror's decode,
     a plain typed ``msgspec.Struct`` of the bench source (every object built in C: the
     floor of any decoding into objects), ``version_of`` + ``DocState``, ``from_source``
     alone, ``msgspec.json.Decoder(Employee)`` alone (its attributes go through the
     model's tracking descriptors).

   Then whether each candidate's models equal ``current``'s (every field's value and
   type, a datetime's tzinfo, the ``DocState``'s original, version, index, condition), on
   the bench answer and on an edge answer (an undeclared field, dates with an offset,
   naive and in epoch milliseconds, a missing field, ``null`` s, a scalar for a list).
3. **Baselines over the server** (client CPU per hit, best of ``--repeat``): raw
   ``client.search`` reading ``_source["name"]`` (the denominator), ``repo.find``, raw
   ``client.mget``, ``repo.get_many``; and the projected ratio of each candidate::

    python bench/bench_decode_msgspec.py [--hits 1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
from elasticsearch import ApiError, Elasticsearch
from elasticsearch.serializer import OrjsonSerializer

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_models import Employee, construct_esmapper, values

import esmapper as em
from esmapper import _raw_answers
from esmapper.model import codec
from esmapper.model.state import DocState, state_of, version_of
from esmapper.testing import elasticsearch_url

# -- 1. the answer's bytes on a client copy: esmapper._raw_answers (what the reads use) ----


def raw_client(client: Elasticsearch) -> Elasticsearch:
    """:func:`esmapper._raw_answers.raw_client` (the client here is always orjson's)."""
    raw = _raw_answers.raw_client(client)
    assert raw is not None, "the bench's client serializes with orjson"
    return raw


raw_call = _raw_answers.answer
RawJson = _raw_answers.RawJson


# -- 2. the candidates ----------------------------------------------------------------------


class Hit(msgspec.Struct):
    """A search hit or an mget doc, its ``_source`` left as bytes."""

    _id: str
    _index: str | None = None
    _seq_no: int | None = None
    _primary_term: int | None = None
    _source: msgspec.Raw = msgspec.Raw(b"null")  # (Raw | None is refused)
    _score: float | None = None
    found: bool | None = None
    sort: list[Any] | None = None
    highlight: dict[str, Any] | None = None


class DictHit(msgspec.Struct):
    _id: str
    _index: str | None = None
    _seq_no: int | None = None
    _primary_term: int | None = None
    _source: dict[str, Any] | None = None


class Hits(msgspec.Struct):
    hits: list[Hit]
    total: dict[str, Any] | None = None


class Answer(msgspec.Struct):
    hits: Hits | None = None
    docs: list[Hit] | None = None


class DictHits(msgspec.Struct):
    hits: list[DictHit]


class DictAnswer(msgspec.Struct):
    hits: DictHits


ANSWER = msgspec.json.Decoder(Answer)
DICT_ANSWER = msgspec.json.Decoder(DictAnswer)
INFO = Employee.__esmapper__  # type: ignore[attr-defined]


def mirror_loader(cls: type) -> Callable[[bytes, Any, Any, Any], Any]:
    """``load(raw, id, version, state)``: the model from its ``_source`` bytes through a
    generated Struct mirror (stored fields, unknown keys forbidden, absent keys ``UNSET``),
    each value converted by the codec's own expression; ``None`` when the mirror refuses
    the source or it lacks a key (the caller then takes ``from_source``)."""
    info = cls.__esmapper__  # type: ignore[attr-defined]
    specs = [s for s in info.fields if s.stored]
    struct = msgspec.defstruct(
        f"{cls.__name__}SourceMirror",
        [(s.name, Any, msgspec.UNSET) for s in specs],
        forbid_unknown_fields=True,
    )
    decoder = msgspec.json.Decoder(struct)
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_UNSET": msgspec.UNSET}
    ns["_decode"], ns["_Err"] = decoder.decode, msgspec.ValidationError
    setter = codec._setters(cls, {}, ns)
    lines = [
        "def load(raw, id, version, state):",
        "    try:",
        "        s = _decode(raw)",
        "    except _Err:",
        "        return None",
        "    self = _new(_cls)",
        f"    {setter('_esm_state')}state)",
    ]
    for spec in specs:
        if spec.name == "id":
            lines.append(f"    {setter('id')}id)")
            continue
        lines.append(f"    _v = s.{spec.name}")
        lines.append("    if _v is _UNSET:")
        lines.append("        return None")
        lines.append(f"    {setter(spec.name)}{codec._load_expr(spec, '_v', ns)})")
    if any(s.name == "version" for s in info.fields):
        lines.append(f"    {setter('version')}version)")
    lines.append("    return self")
    exec(compile("\n".join(lines) + "\n", f"<mirror {cls.__qualname__}>", "exec"), ns)
    return ns["load"]  # type: ignore[no-any-return]


MIRROR = mirror_loader(Employee)
MIRROR_DECODE = msgspec.json.Decoder(
    msgspec.defstruct(
        "Mirror",
        [(s.name, Any, msgspec.UNSET) for s in INFO.fields if s.stored],
        forbid_unknown_fields=True,
    )
).decode


class TypedAddress(msgspec.Struct):
    city: str = ""
    zip_code: str = ""


class TypedSource(msgspec.Struct):
    """The bench source as a plain typed Struct: what decoding costs with every object
    built in C (no tracking descriptors, no DocState, no leniency)."""

    id: str
    name: str
    email: str
    age: int
    company_id: str
    hired_utc: dt.datetime | None
    created_utc: dt.datetime
    updated_utc: dt.datetime
    is_deleted: bool
    tags: list[str]
    address: TypedAddress | None


DIRECT = msgspec.json.Decoder(Employee)


def current(body: bytes) -> list[Any]:
    response = orjson.loads(body)
    raw_hits = response["hits"]["hits"] if "hits" in response else response["docs"]
    from_source, documents = INFO.from_source, []
    for raw in raw_hits:
        version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
        source = raw.get("_source")
        state = DocState(source, raw.get("_index"), None, False, version, condition)
        documents.append(from_source(source, raw["_id"], version, state))
    return documents


def _hits_of(body: bytes) -> list[Hit]:
    answer = ANSWER.decode(body)
    return answer.hits.hits if answer.hits is not None else answer.docs or []


def envelope_orjson(body: bytes) -> list[Any]:
    from_source, loads, documents = INFO.from_source, orjson.loads, []
    for h in _hits_of(body):
        version, condition = version_of(h._seq_no, h._primary_term)
        source = loads(memoryview(h._source))
        state = DocState(source, h._index, None, False, version, condition)
        documents.append(from_source(source, h._id, version, state))
    return documents


def envelope_dicts(body: bytes) -> list[Any]:
    from_source, documents = INFO.from_source, []
    for h in DICT_ANSWER.decode(body).hits.hits:
        version, condition = version_of(h._seq_no, h._primary_term)
        state = DocState(h._source, h._index, None, False, version, condition)
        documents.append(from_source(h._source, h._id, version, state))
    return documents


def _mirror(body: bytes, eager: bool) -> list[Any]:
    from_source, documents = INFO.from_source, []
    for h in _hits_of(body):
        version, condition = version_of(h._seq_no, h._primary_term)
        raw = h._source
        state = DocState(
            orjson.loads(memoryview(raw)) if eager else raw,
            h._index,
            None,
            False,
            version,
            condition,
        )  # type: ignore[arg-type]
        doc = MIRROR(raw, h._id, version, state)  # type: ignore[arg-type]
        if doc is None:
            state.original = source = orjson.loads(memoryview(raw))  # type: ignore[arg-type]
            doc = from_source(source, h._id, version, state)
        documents.append(doc)
    return documents


def mirror_lazy(body: bytes) -> list[Any]:
    return _mirror(body, eager=False)


def mirror_eager(body: bytes) -> list[Any]:
    return _mirror(body, eager=True)


def direct(body: bytes) -> list[Any]:
    decode, put, documents = DIRECT.decode, object.__setattr__, []
    for h in _hits_of(body):
        version, condition = version_of(h._seq_no, h._primary_term)
        doc = decode(h._source)  # type: ignore[arg-type]
        put(doc, "id", h._id)
        put(doc, "version", version)
        put(doc, "_esm_state", DocState(h._source, h._index, None, False, version, condition))  # type: ignore[arg-type]
        documents.append(doc)
    return documents


CANDIDATES: dict[str, Callable[[bytes], Any]] = {
    "orjson.loads (raw client)": orjson.loads,
    "current": current,
    "envelope + orjson": envelope_orjson,
    "envelope, msgspec dicts": envelope_dicts,
    "mirror + lazy original": mirror_lazy,
    "mirror + original": mirror_eager,
    "msgspec into attrs": direct,
}


def per_hit(fn: Callable[[bytes], Any], body: bytes, hits: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        out = fn(body)
        if isinstance(out, list):
            assert len([d.name for d in out]) == hits
        else:
            assert len([h["_source"]["name"] for h in out["hits"]["hits"]]) == hits
        best = min(best, time.perf_counter() - start)
    return best / hits


# -- exactness ------------------------------------------------------------------------------


def _fields(doc: Any) -> list[tuple[str, Any]]:
    def norm(v: Any) -> Any:
        if hasattr(v, "__esmapper__"):
            return (type(v).__name__, [(k, norm(x)) for k, x in _fields(v)])
        if isinstance(v, list):
            return [norm(x) for x in v]
        return (type(v).__name__, repr(v))

    return [(f.name, norm(getattr(doc, f.name))) for f in type(doc).__esmapper__.fields]


def _state(doc: Any) -> tuple[Any, ...]:
    s = state_of(doc)
    assert s is not None
    original = s.original
    if isinstance(original, msgspec.Raw):  # the lazy original, decoded when needed
        original = orjson.loads(memoryview(original))
    return (original, s.index, s.partial, s.version, s.condition)


def edge_answer(body: bytes) -> bytes:
    """The captured answer's first hits with edge sources (see the module docstring)."""
    answer = orjson.loads(body)
    hits = answer["hits"]["hits"][:8]
    sources = [h["_source"] for h in hits]
    sources[0]["undeclared"] = {"kept": [1, 2.5]}
    sources[1]["hired_utc"] = "2026-05-06T09:08:09.5+02:00"
    sources[2]["hired_utc"] = "2026-05-06T07:08:09"
    sources[3]["hired_utc"] = 1767225600123
    del sources[4]["age"]
    sources[5]["address"] = None
    sources[5]["hired_utc"] = None
    sources[6]["tags"] = "single"
    sources[7]["age"] = 2**70
    answer["hits"]["hits"] = hits
    return msgspec.json.encode(answer)  # orjson refuses ints beyond 64 bits


def exactness(body: bytes) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for label, data in (("bench answer", body), ("edge answer", edge_answer(body))):
        try:
            want = [(_fields(d), _state(d)) for d in current(data)]
        except Exception as e:  # orjson refuses a 70-bit integer: so does today's read
            want = None
            out.setdefault("current", {})[label] = f"raises {type(e).__name__}: {e}"
        for name, fn in CANDIDATES.items():
            if name in ("orjson.loads (raw client)", "current"):
                continue
            try:
                got = [(_fields(d), _state(d)) for d in fn(data)]
            except Exception as e:
                out.setdefault(name, {})[label] = f"raises {type(e).__name__}: {e}"[:150]
                continue
            if want is None:
                out.setdefault(name, {})[label] = "reads what current refuses"
                continue
            bad = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b]
            verdict = "exact" if not bad else f"{len(bad)}/{len(want)} differ: "
            if bad:
                (fa, sa), (fb, _) = got[bad[0]], want[bad[0]]
                diff = [(x, y) for x, y in zip(fa, fb, strict=True) if x != y]
                verdict += f"{diff[:1]} vs current" if diff else f"state {sa[0]!r:.90}"
            out.setdefault(name, {})[label] = verdict
    return out


# -- 3. over the server ---------------------------------------------------------------------


def cpu_per_hit(fn: Callable[[], Any], hits: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        cpu = time.process_time()
        fn()
        best = min(best, time.process_time() - cpu)
    return best / hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    n, repeat = args.hits, args.repeat
    print(
        f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}, "
        f"orjson {orjson.__version__}"
    )
    with elasticsearch_url() as url:
        client = Elasticsearch(url, request_timeout=120, serializer=OrjsonSerializer())
        before = (
            client.transport,
            client.transport.serializers,
            dict(client.transport.serializers.serializers),
        )
        mapper = em.Mapper(
            client, models=[Employee], index_prefix=f"bench-dec-{uuid.uuid4().hex[:8]}-"
        )
        try:
            mapper.configure_indexes()
            repo = mapper.repository(Employee)
            alias = mapper.spec(Employee).alias
            repo.add([construct_esmapper(values(i)) for i in range(n)])
            client.indices.refresh(index=alias)
            request = repo.search(limit=n).body()
            ids = [f"{d.id}" for d in repo.find(limit=n).documents]

            raw = raw_client(client)
            answer = raw_call(lambda: raw.search(index=alias, body=request))
            mget = raw_call(lambda: raw.mget(index=alias, ids=ids))
            assert type(answer.body) is RawJson and type(mget.body) is RawJson
            user = client.search(index=alias, body=request)
            assert (
                isinstance(user.body, dict)
                and type(client.mget(index=alias, ids=ids[:3]).body) is dict
            )
            assert (
                client.transport,
                client.transport.serializers,
                dict(client.transport.serializers.serializers),
            ) == before
            parsed = orjson.loads(bytes(answer.body))
            assert parsed["hits"]["hits"] == user.body["hits"]["hits"]
            print(
                f"1. raw copy: search answer {len(answer.body)} bytes ({type(answer).__name__}, "
                f"{answer.meta.mimetype}), mget {len(mget.body)} bytes; "
                "the user's client unchanged "
                "(same transport and serializers, dict bodies, the same hits)"
            )
            errors = []
            for c in (client, raw):
                try:
                    raw_call(lambda c=c: c.search(index=f"{alias}-missing", body=request))
                except ApiError as e:
                    errors.append((type(e).__name__, e.message, e.body))
            assert errors[0] == errors[1], errors
            print(
                f"   an error answer through raw_call: {errors[0][0]}({errors[0][1]!r}), "
                "body as the user's client's"
            )

            raw_search_cpu = cpu_per_hit(
                lambda: [
                    h["_source"]["name"]
                    for h in client.search(index=alias, body=request).body["hits"]["hits"]
                ],
                n,
                repeat,
            )
            find_cpu = cpu_per_hit(
                lambda: [d.name for d in repo.find(limit=n).documents], n, repeat
            )
            raw_mget_cpu = cpu_per_hit(
                lambda: [
                    d["_source"]["name"] for d in client.mget(index=alias, ids=ids).body["docs"]
                ],
                n,
                repeat,
            )
            many_cpu = cpu_per_hit(lambda: [d.name for d in repo.get_many(ids)], n, repeat)
            raw_copy_cpu = cpu_per_hit(lambda: raw.search(index=alias, body=request), n, repeat)
        finally:
            client.indices.delete(
                index=mapper.spec(Employee).physical_name(), ignore_unavailable=True
            )
            mapper.close()
            client.close()

    print(f"2. in process, µs per hit ({n} hits, best of {repeat}):")
    figures = {}
    for name, fn in CANDIDATES.items():
        figures[name] = per_hit(fn, bytes(answer.body), n, repeat)
        print(f"   {name:<28} {figures[name] * 1e6:6.2f}")
    body = bytes(answer.body)
    raws = [h._source for h in _hits_of(body)]
    sources = [orjson.loads(memoryview(r)) for r in raws]
    typed = msgspec.json.Decoder(TypedSource)
    parts: dict[str, Callable[[], Any]] = {
        "envelope decode (Raw sources)": lambda: _hits_of(body),
        "orjson.loads of each source": lambda: [orjson.loads(memoryview(r)) for r in raws],
        "mirror Struct decode of each": lambda: [MIRROR_DECODE(r) for r in raws],
        "typed Struct decode (C floor)": lambda: [typed.decode(r) for r in raws],
        "version_of + DocState": lambda: [
            DocState(s, "i", None, False, *version_of(1, 1)) for s in sources
        ],
        "from_source (hydration)": lambda: [INFO.from_source(s, "x", None, None) for s in sources],
        "msgspec into attrs, decode only": lambda: [DIRECT.decode(r) for r in raws],
    }
    for name, fn in parts.items():
        best = float("inf")
        for _ in range(repeat):
            gc.collect()
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        print(f"     part: {name:<32} {best / n * 1e6:6.2f}")
    mget_current = per_hit(current, bytes(mget.body), n, repeat)
    mget_lazy = per_hit(mirror_lazy, bytes(mget.body), n, repeat)
    mget_orjson = per_hit(envelope_orjson, bytes(mget.body), n, repeat)
    print(
        f"   mget: current {mget_current * 1e6:.2f}, envelope + orjson {mget_orjson * 1e6:.2f}, "
        f"mirror + lazy original {mget_lazy * 1e6:.2f}"
    )
    print("   exactness against current's models and DocState:")
    for name, verdicts in exactness(bytes(answer.body)).items():
        for label, verdict in verdicts.items():
            print(f"     {name:<26} {label:<13} {verdict}")

    print(f"3. over the server, client CPU µs per hit (best of {repeat}):")
    print(
        f"   client.search {raw_search_cpu * 1e6:.2f} "
        f"(raw copy, no decoding: {raw_copy_cpu * 1e6:.2f}), "
        f"repo.find {find_cpu * 1e6:.2f} ({find_cpu / raw_search_cpu:.2f}x)"
    )
    print(
        f"   client.mget {raw_mget_cpu * 1e6:.2f}, repo.get_many {many_cpu * 1e6:.2f} "
        f"({many_cpu / raw_mget_cpu:.2f}x)"
    )
    print(
        "   projected (repo.find - current + candidate: "
        "the candidate's own bytes, no orjson.loads):"
    )
    for name in (
        "envelope + orjson",
        "envelope, msgspec dicts",
        "mirror + original",
        "mirror + lazy original",
        "msgspec into attrs",
    ):
        find = find_cpu - figures["current"] + figures[name]
        print(
            f"     {name:<26} find {find * 1e6:6.2f} µs/hit = "
            f"{find / raw_search_cpu:.2f}x client.search"
        )
    many = many_cpu - mget_current + mget_lazy
    print(
        f"     mirror + lazy original     get_many {many * 1e6:6.2f} µs/hit = "
        f"{many / raw_mget_cpu:.2f}x client.mget"
    )


if __name__ == "__main__":
    main()
