"""The fault plans of :class:`~esmapper.testing.faults.FaultProxy`: what a scripted fault
is (:class:`Fault`: its kind, how many matching requests it takes, which ones), what the
proxy records of each request (:class:`RequestRecord`), a held request's handle
(:class:`HeldRequest`), and how an injected bulk item failure rewrites a ``_bulk`` request
and its response (the chosen items removed before forwarding, a synthetic item error put
back at their positions). Nothing here opens a socket: the proxy server is
:mod:`esmapper.testing.faults`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Collection
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import attrs

__all__ = [
    "ITEM_ERRORS",
    "Fault",
    "FaultKind",
    "HeldRequest",
    "ItemSelector",
    "RequestRecord",
    "compile_path",
    "item_error",
    "merge_items",
    "parse_bulk",
    "request_matches",
    "select_items",
    "take_next",
]

ItemSelector: TypeAlias = int | Collection[int] | Callable[[int, dict[str, Any]], bool]
FaultKind: TypeAlias = Literal["status", "items", "drop", "delay", "truncate", "hold"]

ITEM_ERRORS = {
    429: "es_rejected_execution_exception",
    503: "unavailable_shards_exception",
}


@attrs.define(slots=True)
class RequestRecord:
    """One request the proxy received.

    ``bulk_items`` is the number of actions in a ``_bulk`` body (``None`` for other
    requests); ``fault`` the kind of fault injected into it, if any.
    """

    method: str
    path: str
    query: str
    body_bytes: int
    bulk_items: int | None = None
    fault: FaultKind | None = None


class HeldRequest:
    """A request held by :meth:`FaultProxy.hold`: not forwarded until :meth:`forward`.

    :meth:`wait_arrived` blocks until the request reaches the proxy (its client is then
    waiting for the answer); :meth:`forward` sends it upstream (and the answer back, if
    the client is still there), :meth:`drop` closes the connection without forwarding.
    :meth:`wait_done` blocks until either has been carried out. Stopping the proxy drops
    a request still held.
    """

    def __init__(self) -> None:
        self._arrived = threading.Event()
        self._released = threading.Event()
        self._done = threading.Event()
        self._forward = False
        self.status: int | None = None
        """The upstream's status once forwarded (``None`` when dropped, not yet handled, or
        when the upstream could not be reached)."""

    @property
    def arrived(self) -> bool:
        """Whether the request has reached the proxy."""
        return self._arrived.is_set()

    def wait_arrived(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the request; whether it arrived."""
        return self._arrived.wait(timeout)

    def forward(self) -> None:
        """Let the request through to the upstream."""
        self._forward = True
        self._released.set()

    def drop(self) -> None:
        """Close its connection without forwarding it (the upstream never sees it)."""
        self._released.set()

    def wait_done(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until the request was forwarded or dropped."""
        return self._done.wait(timeout)


@attrs.define(slots=True)
class Fault:
    kind: FaultKind | None  # None: no fault (what a request none takes gets)
    remaining: int
    method: str | None
    path: re.Pattern[str] | None
    status: int = 0
    body: bytes | None = None
    items: ItemSelector = 0
    after_forwarding: bool = False
    seconds: float = 0.0
    skip: int = 0
    held: HeldRequest | None = None


def compile_path(path: str | None) -> re.Pattern[str] | None:
    return re.compile(path) if path is not None else None


def request_matches(
    want_method: str | None, want_path: re.Pattern[str] | None, method: str, path: str
) -> bool:
    """Whether a request is one a filter names: ``want_method`` exact (``None``: any),
    ``want_path`` searched in the path (``None``: any)."""
    if want_method is not None and want_method != method:
        return False
    return want_path is None or want_path.search(path) is not None


def parse_bulk(body: bytes) -> list[tuple[dict[str, Any], list[bytes]]]:
    """Split a bulk body into ``(action_line_dict, raw_lines)`` per action."""
    raw = [line for line in body.splitlines(keepends=True) if line.strip()]
    out: list[tuple[dict[str, Any], list[bytes]]] = []
    i = 0
    while i < len(raw):
        try:
            meta = json.loads(raw[i])
        except ValueError:
            meta = {}
        op = next(iter(meta), "") if isinstance(meta, dict) else ""
        lines = [raw[i] if raw[i].endswith(b"\n") else raw[i] + b"\n"]
        if op != "delete" and i + 1 < len(raw):
            src = raw[i + 1]
            lines.append(src if src.endswith(b"\n") else src + b"\n")
            i += 1
        out.append((meta if isinstance(meta, dict) else {}, lines))
        i += 1
    return out


def select_items(
    selector: ItemSelector, lines: list[tuple[dict[str, Any], list[bytes]]]
) -> list[int]:
    if isinstance(selector, int):
        return list(range(min(selector, len(lines))))
    if callable(selector):
        return [pos for pos, (meta, _) in enumerate(lines) if selector(pos, meta)]
    return sorted(p for p in set(selector) if 0 <= p < len(lines))


def item_error(meta: dict[str, Any], status: int, default_index: str | None) -> dict[str, Any]:
    op = next(iter(meta), "index")
    params = meta.get(op) if isinstance(meta.get(op), dict) else {}
    assert isinstance(params, dict)
    etype = ITEM_ERRORS.get(status, "injected_exception")
    return {
        op: {
            "_index": params.get("_index", default_index),
            "_id": params.get("_id"),
            "status": status,
            "error": {"type": etype, "reason": f"injected by FaultProxy (status {status})"},
        }
    }


def merge_items(resp_body: bytes, failed: dict[int, dict[str, Any]]) -> bytes:
    try:
        doc = json.loads(resp_body)
    except ValueError:
        return resp_body
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        return resp_body
    upstream_items = iter(doc["items"])
    total = len(doc["items"]) + len(failed)
    doc["items"] = [failed[p] if p in failed else next(upstream_items) for p in range(total)]
    doc["errors"] = True
    return json.dumps(doc).encode()


class _Plan(Protocol):
    remaining: int
    skip: int
    method: str | None
    path: re.Pattern[str] | None


P = TypeVar("P", bound=_Plan)


def take_next(plans: list[P], method: str, path: str) -> P | None:
    """The first plan of ``plans`` that takes this request (the caller holds its lock):
    a matching plan still skipping lets it through (one skip fewer) and the search goes
    on; the plan taken has one use fewer and leaves ``plans`` with its last."""
    for plan in plans:
        if plan.remaining > 0 and request_matches(plan.method, plan.path, method, path):
            if plan.skip > 0:
                plan.skip -= 1
                continue
            plan.remaining -= 1
            if plan.remaining <= 0:
                plans.remove(plan)
            return plan
    return None
