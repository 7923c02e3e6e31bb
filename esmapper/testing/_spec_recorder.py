"""Record the distinct shapes of the Elasticsearch requests a process sends, for the check
against the API specification (the plugin's ``--es-spec``, ``tools/es_spec/``).

:func:`install` wraps ``elastic_transport.Transport.perform_request``, which every
``Elasticsearch`` client, its ``.options()`` copies and ``perform_request`` calls go through.
Each request is reduced to a *shape key* (:func:`shape_key`): what the checker reads, with
what it does not read abstracted (the test's index prefix, document ids and sources, long
tokens such as point-in-time ids, hex ids, digit runs, ``_meta`` and script ``params``,
repeated bulk items). The first request of each shape is appended, as sent, to
``<directory>/requests-<pid>.jsonl`` in the checker's format (bulk and msearch bodies keep one
line pair per distinct item shape); the others are only counted. At exit the process writes
its count to ``counts-<pid>.json``.

A request sent to a server that answers as a pinned version (a test's ``ClusterProxy(
version="9.1.0")``: :func:`pin_version`) is recorded with ``"version"``, and checked on
that version's branch only (:mod:`esmapper.testing._spec_check`): a request whose shape
depends on the version (``highlight.fields`` of several fields) conforms where it is sent,
not on every branch.

Only standard-library imports at module level: in a subprocess, the ``sitecustomize`` of
:func:`site_directory` loads this file by path when ``elastic_transport`` is first imported
and calls :func:`patch_transport` (a Python subprocess that never talks to Elasticsearch
pays nothing). Recording never raises into the client. State lives on the wrapper
function, so a second copy of this module in the same process (loaded by path, then
imported) re-targets the one recorder instead of stacking another.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "ENV_LOG",
    "Recorder",
    "install",
    "installed",
    "patch_transport",
    "pin_version",
    "read_counts",
    "shape_key",
    "site_directory",
]

ENV_LOG = "ESMAPPER_SPEC_LOG"
"""The directory a process records into; set by the plugin, read by ``sitecustomize``."""

_MARK = "_esmapper_spec_recorder"
_NDJSON = ("/_bulk", "/_msearch", "/_msearch/template")
_SOURCE_ACTIONS = frozenset({"index", "create", "update"})
_ACTIONS = _SOURCE_ACTIONS | {"delete"}
#: Path segments followed by a document id (the segment after them is abstracted).
_ID_BEFORE = frozenset(
    {"_doc", "_create", "_update", "_source", "_explain", "_termvectors", "_tasks"}
)
#: Whose value is user data the checker never inspects.
_OPAQUE_KEYS = frozenset({"_meta", "params"})
#: Whose string values (or lists of them) are document ids: any string is one.
_ID_KEYS = frozenset({"_id", "ids", "values"})
_DOCUMENT_PATH = re.compile(r"/_(doc|create)(/|$)")
_PREFIX = re.compile(r"t-[0-9a-f]{8}-")
_HEX = re.compile(r"[0-9a-f]{16,}")
_DIGITS = re.compile(r"\d{2,}")
_LONG = 40
_RAW_ID = re.compile(rb'"_id"\s*:\s*"(?:[^"\\]|\\.)*"')
_RAW_ACTION = re.compile(rb'\s*\{\s*"(index|create|update|delete)"\s*:')


@functools.lru_cache(maxsize=8192)  # names, keys and enum values repeat in every request
def _text(value: str) -> str:
    """``value`` with the parts that vary between runs but not in validity abstracted: a
    name under a test's prefix (each of a comma list), long tokens, hex ids, digit runs."""
    if _PREFIX.search(value):
        return ",".join("{name}" if _PREFIX.search(v) else _text(v) for v in value.split(","))
    if len(value) > _LONG and " " not in value:
        # PIT and scroll ids, encoded cursors (a leading "_" stays: names may not have one)
        return "_<long>" if value.startswith("_") else "<long>"
    return _DIGITS.sub("0", _HEX.sub("<hex>", value))


def _member(key: str, value: Any) -> Any:
    """The skeleton of ``value`` under ``key`` in an object."""
    if key in _OPAQUE_KEYS:
        return "<opaque>"
    if key in _ID_KEYS:
        if isinstance(value, str):
            return "<id>"
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return ["<id>"]
    return _skeleton(value)


def _skeleton(value: Any) -> Any:
    """The checker-relevant skeleton of a JSON value (see :func:`shape_key`)."""
    if isinstance(value, dict):
        return {_text(str(k)): _member(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(_skeleton(v), sort_keys=True) for v in value})
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.5
    return repr(type(value))


def _update_body(line: Any) -> Any:
    """A bulk update's body with the partial document and the upsert abstracted."""
    if not isinstance(line, dict):
        return _skeleton(line)
    return {k: "<document>" if k in ("doc", "upsert") else _skeleton(v) for k, v in line.items()}


def _items(lines: Sequence[Any], bulk: bool) -> list[tuple[str, list[Any]]] | None:
    """Bulk/msearch lines as (item key, the item's lines); None when malformed (then the
    whole body is kept: the checker reports it)."""
    items: list[tuple[str, list[Any]]] = []
    i = 0
    while i < len(lines):
        head = lines[i]
        if not bulk:
            if i + 1 >= len(lines):
                return None
            pair = [head, lines[i + 1]]
            items.append((json.dumps([_skeleton(x) for x in pair], sort_keys=True), pair))
            i += 2
            continue
        if not isinstance(head, dict) or len(head) != 1:
            return None
        (action,) = head
        if action not in _ACTIONS:
            return None
        if action not in _SOURCE_ACTIONS:
            items.append((json.dumps(_skeleton(head), sort_keys=True), [head]))
            i += 1
            continue
        if i + 1 >= len(lines):
            return None
        source = lines[i + 1]
        body = _update_body(source) if action == "update" else isinstance(source, dict)
        key = json.dumps([_skeleton(head), body], sort_keys=True)
        items.append((key, [head, source]))
        i += 2
    return items


def _distinct_bulk_lines(raw: bytes) -> bytes:
    """The lines of an encoded bulk body, with index, create and delete items whose action
    lines differ only in their ``_id`` string dropped after the first, before any parsing (a
    bulk of 500 documents costs a regex per item; an index/create source line only has to
    start an object). Update items are all kept, and a body not in this form is kept whole."""
    lines = [line for line in raw.splitlines() if line.strip()]
    kept: list[bytes] = []
    seen: set[bytes] = set()
    i = 0
    while i < len(lines):
        head = lines[i]
        action = _RAW_ACTION.match(head)
        if action is None:
            return raw
        name = action.group(1)
        size = 1 if name == b"delete" else 2
        if name != b"update" and i + size <= len(lines):
            source = b"{" if size == 2 and lines[i + 1].lstrip()[:1] == b"{" else b""
            key = _RAW_ID.sub(b'"_id":""', head) + source
            if key in seen:
                i += size
                continue
            seen.add(key)
        kept.extend(lines[i : i + size])
        i += size
    return b"\n".join(kept)


def _loads() -> Callable[[str | bytes], Any]:
    """``orjson.loads`` when installed (bulk bodies decode several times faster), else
    ``json.loads``."""
    try:
        import orjson
    except ImportError:
        return json.loads
    return orjson.loads  # type: ignore[no-any-return]


def _decode(body: Any, ndjson: bool) -> Any:
    """The request body as JSON values (NDJSON: a list of lines)."""
    if body is None:
        return None
    if isinstance(body, bytes | bytearray | memoryview):
        body = bytes(body)
        if ndjson:
            loads = _loads()
            return [loads(line) for line in body.splitlines() if line.strip()]
        body = body.decode("utf-8")
    if isinstance(body, str):
        if ndjson:
            return [json.loads(line) for line in body.splitlines() if line.strip()]
        return json.loads(body) if body.strip() else None
    if ndjson and isinstance(body, list | tuple):
        return [json.loads(x) if isinstance(x, str | bytes) else x for x in body]
    return body


def _path_key(path: str) -> str:
    segments = path.split("/")
    out = []
    for i, segment in enumerate(segments):
        after_id = i > 0 and segments[i - 1] in _ID_BEFORE
        out.append("{id}" if after_id and not segment.startswith("_") else _text(segment))
    return "/".join(out)


def shape_key(method: str, path: str, params: Mapping[str, str], body: Any) -> tuple[str, Any]:
    """The shape key of a decoded request, and the body to record for it.

    Two requests with the same key are the same to the specification checker: same method,
    URL up to names and ids (a name starting with ``_`` is kept), same query parameters
    and values, same body skeleton (keys, value kinds, enum-like strings). Bulk and msearch
    bodies are keyed by the set of distinct item shapes, and recorded with one item of each.
    """
    params_key = sorted((k, _text(v)) for k, v in params.items())
    recorded = body
    if isinstance(body, list) and path.endswith(_NDJSON):
        items = _items(body, bulk=path.endswith("/_bulk"))
        if items is None:
            body_key: Any = _skeleton(body)
        else:
            kept = dict(reversed(items))  # the first item of each shape
            body_key = sorted(kept)
            recorded = [line for key in body_key for line in kept[key]]
    elif body is not None and _DOCUMENT_PATH.search(path):
        body_key = "<document>" if isinstance(body, dict) else _skeleton(body)
    elif "/_update/" in path and isinstance(body, dict):
        body_key = _update_body(body)
    else:
        body_key = _skeleton(body)
    key = json.dumps([method, _path_key(path), params_key, body_key], sort_keys=True)
    return key, recorded


class Recorder:
    """The recording state of one process: the directory, the shapes seen, the count."""

    def __init__(self, directory: str) -> None:
        self.lock = threading.Lock()
        self.directory = directory
        self.seen: set[bytes] = set()
        self.requests = 0
        #: base URL (no trailing slash) -> the version the server there answers as
        self.pinned: dict[str, str] = {}
        os.register_at_fork(after_in_child=self._forked)
        atexit.register(self.write_count)

    def _forked(self) -> None:
        """A forked child records into its own file, and counts its own requests."""
        self.lock = threading.Lock()
        self.requests = 0

    def retarget(self, directory: str) -> None:
        """Record into ``directory`` from now on, as a fresh log."""
        with self.lock:
            if directory != self.directory:
                self.directory, self.seen, self.requests = directory, set(), 0

    def pinned_version(self, transport: Any) -> str | None:
        """The version the server ``transport`` sends to answers as, when pinned."""
        if not self.pinned or transport is None:
            return None
        for node in transport.node_pool.all():
            version = self.pinned.get(str(node.base_url).rstrip("/"))
            if version is not None:
                return version
        return None

    def record(
        self, method: str, target: str, body: Any, headers: Any, transport: Any = None
    ) -> None:
        """Append the request's shape unless seen (with the pinned version of the server
        ``transport`` sends to, if any); never raises."""
        try:
            url = urlsplit(target)
            ctype = ""
            if isinstance(headers, Mapping):
                given = (str(v) for k, v in headers.items() if k.lower() == "content-type")
                ctype = next(given, "")
            ndjson = "ndjson" in ctype or url.path.endswith(_NDJSON)
            params = dict(parse_qsl(url.query, keep_blank_values=True))
            if isinstance(body, bytes | bytearray) and url.path.endswith("/_bulk"):
                body = _distinct_bulk_lines(bytes(body))
            try:
                decoded = _decode(body, ndjson)
            except ValueError:  # not JSON: recorded as text (the checker says so)
                decoded = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
            key, recorded = shape_key(method, url.path, params, decoded)
            version = self.pinned_version(transport)
            if version is not None:
                key = f"{version} {key}"
            digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
            with self.lock:
                self.requests += 1
                if digest in self.seen:
                    return
                self.seen.add(digest)
                line = {"method": method, "path": url.path, "params": params, "body": recorded}
                if version is not None:
                    line["version"] = version
                path = Path(self.directory) / f"requests-{os.getpid()}.jsonl"
                with path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(line, default=str) + "\n")
        except Exception:  # recording must never break the request
            return

    def write_count(self) -> None:
        """Write ``counts-<pid>.json`` (requests sent, shapes recorded); never raises."""
        try:
            with self.lock:
                if not self.requests:
                    return
                counts = {"requests": self.requests, "shapes": len(self.seen)}
                path = Path(self.directory) / f"counts-{os.getpid()}.json"
                path.write_text(json.dumps(counts), encoding="utf-8")
        except Exception:  # at exit, nothing left to tell
            return


def installed() -> Recorder | None:
    """The recorder patched into ``elastic_transport`` (None when there is none, or when
    ``elastic_transport`` is not imported yet). It may come from another copy of this module
    (the one ``sitecustomize`` loads by path): same attributes, another class."""
    module = sys.modules.get("elastic_transport")
    perform = getattr(getattr(module, "Transport", None), "perform_request", None)
    found: Recorder | None = getattr(perform, _MARK, None)
    return found


def patch_transport(module: ModuleType, directory: str) -> Recorder:
    """Wrap ``module.Transport.perform_request`` (``module`` is ``elastic_transport``) with a
    recorder into ``directory``; one already there is re-targeted instead."""
    transport: Any = module.Transport
    existing = getattr(transport.perform_request, _MARK, None)
    if existing is not None:
        existing.retarget(directory)
        return existing  # type: ignore[no-any-return]
    recorder = Recorder(directory)
    original: Callable[..., Any] = transport.perform_request

    def perform_request(self: Any, method: str, target: str, *args: Any, **kwargs: Any) -> Any:
        recorder.record(method, target, kwargs.get("body"), kwargs.get("headers"), self)
        return original(self, method, target, *args, **kwargs)

    setattr(perform_request, _MARK, recorder)
    transport.perform_request = perform_request
    return recorder


def pin_version(url: str, version: str) -> Callable[[], None]:
    """Record the requests sent to ``url`` as sent to ``version`` (``"9.1.0"``: the server
    there answers as that version); returns the function that ends it. Nothing happens
    when no recorder is installed."""
    live = installed()
    pinned: dict[str, str] | None = getattr(live, "pinned", None)
    if live is None or pinned is None:
        return lambda: None
    base = url.rstrip("/")
    with live.lock:
        pinned[base] = version

    def unpin() -> None:
        with live.lock:
            if pinned.get(base) == version:
                del pinned[base]

    return unpin


def install(directory: str) -> Recorder:
    """Record this process's requests into ``directory`` (created); imports
    ``elastic_transport``. Installing again re-targets the same recorder."""
    import elastic_transport

    os.makedirs(directory, exist_ok=True)
    return patch_transport(elastic_transport, os.path.abspath(directory))


def read_counts(directory: str) -> tuple[int, int]:
    """(requests sent, processes) from the ``counts-*.json`` files in ``directory``."""
    requests = processes = 0
    for path in Path(directory).glob("counts-*.json"):
        try:
            requests += int(json.loads(path.read_text(encoding="utf-8"))["requests"])
            processes += 1
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return requests, processes


def site_directory() -> str:
    """The directory whose ``sitecustomize`` installs the recorder in subprocesses that
    have ``ESMAPPER_SPEC_LOG`` set (put it first on their ``PYTHONPATH``)."""
    return str(Path(__file__).resolve().parent / "_spec_site")
