"""A ClusterProxy rule: Elasticsearch's built-in data-stream templates refuse regular
indexes named like data streams.

Elasticsearch installs index templates (priority 100, ``data_stream``) for
``logs-*-*``, ``metrics-*-*``, ``synthetics-*-*`` and ``traces-*-*`` (Elastic Agent's
data streams; ``stack.templates.enabled`` turns them off). When the composable template of
highest priority that matches a new index's name creates data streams:

- ``PUT /<name>`` (create index) answers 400 ``illegal_argument_exception``: "cannot create
  index with name [logs-app-v1], because it matches with template [logs] that creates data
  streams only, use create data stream api instead";
- a write that would auto-create the index (``PUT /<name>/_doc/<id>``, ``_create``, and
  each ``index``/``create`` item of a ``_bulk``) creates a data stream instead, into which
  only ``create`` writes with an ``@timestamp`` go: an ``index`` write answers 400
  ``illegal_argument_exception`` ("only write ops with an op_type of create are allowed in
  data streams"), a ``create`` without ``@timestamp`` 400 ``document_parsing_exception``
  (in a bulk: the item's error, the other items are applied).

The local server has no such templates: it creates the index. :class:`DataStreamTemplates`
answers as Elasticsearch does, taking into account the templates the upstream server holds
(``GET /_index_template``): one of a higher priority matching the name (such as a
time-series model's, priority 501) wins over the built-in one, as on Elasticsearch.
Limits: it acts on the names a built-in pattern matches only (it reads the upstream's
templates for those); the data stream a refused write creates on Elasticsearch is not
created; a ``create`` that carries an ``@timestamp`` and an ``update`` with an upsert are
forwarded (the local server then makes a regular index where Elasticsearch makes a data
stream).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any, Final

import attrs

from esmapper.testing._fault_plans import merge_items, parse_bulk
from esmapper.testing._real_aliases import Upstream
from esmapper.testing._rules import Exchange, Reply, error_body, json_reply

__all__ = ["BUILT_IN_DATA_STREAM_TEMPLATES", "DataStreamTemplates", "create_refused"]

#: ``(template name, index pattern)`` of Elasticsearch's built-in data-stream templates,
#: each at priority :data:`BUILT_IN_PRIORITY`.
BUILT_IN_DATA_STREAM_TEMPLATES: Final = (
    ("logs", "logs-*-*"),
    ("metrics", "metrics-*-*"),
    ("synthetics", "synthetics-*-*"),
    ("traces", "traces-*-*"),
)
BUILT_IN_PRIORITY: Final = 100
_BUILT_IN: Final = tuple(pattern for _, pattern in BUILT_IN_DATA_STREAM_TEMPLATES)

_CREATE: Final = re.compile(r"^/([^/_][^/]*)$")
_DOC: Final = re.compile(r"^/([^/_][^/]*)/(_doc|_create)(/[^/]+)?$")
_BULK: Final = re.compile(r"^(?:/([^/_][^/]*))?/_bulk$")
_INDEX_ONLY: Final = "only write ops with an op_type of create are allowed in data streams"
_NO_TIMESTAMP: Final = "data stream timestamp field [@timestamp] is missing"


@attrs.frozen(slots=True)
class _Template:
    name: str
    patterns: tuple[str, ...]
    priority: int
    data_stream: bool


def create_refused(name: str, template: str) -> dict[str, Any]:
    """The body of Elasticsearch's 400 for creating the index ``name`` that ``template``
    (a data-stream template) matches."""
    reason = (
        f"cannot create index with name [{name}], because it matches with template "
        f"[{template}] that creates data streams only, use create data stream api instead"
    )
    return error_body(400, _error("illegal_argument_exception", reason))


def _error(kind: str, reason: str) -> dict[str, Any]:
    return {"type": kind, "reason": reason}


class DataStreamTemplates:
    """Refuse regular indexes whose name a data-stream template claims (see the module
    docstring)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def before(self, exchange: Exchange) -> Reply | None:
        method, path = exchange.method, exchange.path
        if method == "PUT" and (match := _CREATE.match(path)) is not None:
            name = urllib.parse.unquote(match.group(1))
            template = self._data_stream_template(name)
            if template is not None:
                return json_reply(400, create_refused(name, template))
            return None
        if method in ("PUT", "POST") and (match := _DOC.match(path)) is not None:
            name = urllib.parse.unquote(match.group(1))
            create = match.group(2) == "_create" or exchange.params.get("op_type") == "create"
            error = self._auto_created(name, "create" if create else "index", exchange.json())
            if error is not None:
                return json_reply(400, error_body(400, error))
            return None
        if method in ("PUT", "POST") and (match := _BULK.match(path)) is not None:
            return self._bulk(exchange, match.group(1))
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        failed: dict[int, dict[str, Any]] | None = exchange.notes.get("data_stream_items")
        if not failed or reply.status != 200:
            return reply
        return Reply(reply.status, merge_items(reply.body, failed))

    def _bulk(self, exchange: Exchange, default: str | None) -> Reply | None:
        items = parse_bulk(exchange.body)
        failed: dict[int, dict[str, Any]] = {}
        templates: list[_Template] | None = None  # read once per bulk, when needed
        for pos, (meta, lines) in enumerate(items):
            op = next(iter(meta), "")
            params = meta.get(op) if isinstance(meta.get(op), dict) else {}
            if op not in ("index", "create") or not isinstance(params, dict):
                continue
            name = params.get("_index") or (urllib.parse.unquote(default) if default else None)
            if not isinstance(name, str) or params.get("require_alias") is True:
                continue
            if not _built_in(name):
                continue
            templates = self._templates() if templates is None else templates
            source = _json(lines[1]) if len(lines) > 1 else None
            error = self._auto_created(name, op, source, templates)
            if error is not None:
                item = {"_index": name, "_id": params.get("_id"), "status": 400, "error": error}
                failed[pos] = {op: item}
        if not failed:
            return None
        if len(failed) == len(items):
            answer = {"took": 0, "errors": True, "items": [failed[p] for p in range(len(items))]}
            return json_reply(200, answer)
        exchange.body = b"".join(
            b"".join(lines) for pos, (_, lines) in enumerate(items) if pos not in failed
        )
        exchange.notes["data_stream_items"] = failed
        return None

    def _auto_created(
        self, name: str, op: str, source: Any, templates: list[_Template] | None = None
    ) -> dict[str, Any] | None:
        """The error of an ``op`` write of ``source`` that would auto-create ``name`` as a
        data stream, or ``None`` (the index exists, or no data-stream template claims it,
        or a ``create`` with an ``@timestamp``, which this rule does not emulate)."""
        if self._data_stream_template(name, templates) is None:
            return None
        if self.upstream("HEAD", f"/{urllib.parse.quote(name, safe='')}").status != 404:
            return None  # an existing index or alias: no auto-creation
        if op == "index":
            return _error("illegal_argument_exception", _INDEX_ONLY)
        if isinstance(source, dict) and "@timestamp" in source:
            return None
        return _error("document_parsing_exception", f"[1:1] failed to parse: {_NO_TIMESTAMP}")

    def _data_stream_template(
        self, name: str, templates: list[_Template] | None = None
    ) -> str | None:
        """The data-stream template that would win for a new index ``name``, or ``None``
        when ``name`` is none a built-in template claims, or the winner (highest priority
        among the matching ones, the built-in ones included) is a regular template. Asks
        the upstream for its templates unless ``templates`` are given."""
        if not _built_in(name):
            return None
        known = self._templates() if templates is None else templates
        matching = [t for t in known if any(_matches(name, p) for p in t.patterns)]
        if not matching:
            return None
        winner = max(matching, key=lambda t: t.priority)
        return winner.name if winner.data_stream else None

    def _templates(self) -> list[_Template]:
        reply = self.upstream("GET", "/_index_template")
        body = reply.json() if reply.status == 200 else None
        entries = body.get("index_templates", []) if isinstance(body, dict) else []
        found: dict[str, _Template] = {
            name: _Template(name, (pattern,), BUILT_IN_PRIORITY, True)
            for name, pattern in BUILT_IN_DATA_STREAM_TEMPLATES
        }
        for entry in entries:
            template = entry.get("index_template") if isinstance(entry, dict) else None
            if not isinstance(template, dict):
                continue
            patterns = template.get("index_patterns") or []
            if isinstance(patterns, str):
                patterns = [patterns]
            found[str(entry.get("name"))] = _Template(
                str(entry.get("name")),
                tuple(str(p) for p in patterns),
                int(template.get("priority") or 0),
                template.get("data_stream") is not None,
            )
        return list(found.values())


def _built_in(name: str) -> bool:
    """Whether a built-in data-stream template's pattern matches ``name`` (the rule acts
    on those names only, without asking the upstream anything for the others)."""
    return any(_matches(name, pattern) for pattern in _BUILT_IN)


def _matches(name: str, pattern: str) -> bool:
    """Elasticsearch's simple wildcard match (``*`` only)."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, name) is not None


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None
