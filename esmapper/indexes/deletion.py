"""Deleting a model's indexes: every physical index, alias and index template it owns
(``mapper.delete_indexes([Book])``, ``esmapper indexes delete Book --yes``).

What a model owns is decided by name, from the model's naming rules only (with the mapper's
``index_prefix`` in ``<alias>``):

- indexes: ``<alias>`` itself (a plain index, or a concrete index squatting a versioned
  alias's name), ``<alias>-v<N>`` (every version, leftovers of reindexes included),
  ``<alias>-v<N>-<period>`` (time-series partitions, daily or monthly, any version), the
  reindex error indexes (``<alias>-v<N>-error``, ``<alias>-v<N>.error``) and, for
  time-series models, a concrete index named like a dated alias (``<alias>-<period>``);
- aliases: ``<alias>`` and, for time-series models, the dated aliases ``<alias>-<period>``;
- index templates: ``<alias>-v<N>-template``.

A name another registered model of the mapper also owns (model ``books`` and a plain model
named ``books-v2``) is never touched. Names are listed with wildcard *reads* and deleted by
exact name: Elasticsearch clusters with ``action.destructive_requires_name`` (and the local
test server) refuse wildcard deletes, and a pattern such as ``books*`` would also match
another model's ``books-archive``.

:func:`find_indexes` (read-only) sends ``GET /<alias>*/_alias``, ``GET /_alias/<alias>*``
and ``GET /_index_template/<alias>-v*``. :func:`delete_indexes` then sends:

1. ``POST /_aliases`` removing the model's aliases from indexes it does not own (an alias
   the model's name points at someone else's index); the index itself is kept;
2. ``DELETE /<index>,<index>,...?ignore_unavailable=true`` (50 names per request);
3. ``DELETE /_index_template/<name>`` per template.

Each is sent once, without the transport's retries (:mod:`esmapper._transport`); a 404
(already gone) is fine; a lost answer is settled by reading back (``GET`` the aliases, the
indexes, ``HEAD`` the template) and only what is still there is sent once more. Aliases go
with their indexes. Afterwards the mapper drops its cached state of the model: the
partitions this process ensured, the cached documents and the soft-deleted list.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.indexes._reindex_errors import is_error_index
from esmapper.indexes.timeseries import TIME_SERIES_KINDS

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "IndexDeletion",
    "delete_indexes",
    "delete_template",
    "find_indexes",
    "owns_alias",
    "owns_index",
]

log = logging.getLogger("esmapper.indexes")

_CHUNK: Final = 50  # index names per DELETE request, to keep URLs short
_PERIOD: Final = r"\d{4}\.\d{2}(?:\.\d{2})?"


@attrs.frozen(slots=True)
class IndexDeletion:
    """What :func:`delete_indexes` deleted for one model (with ``dry_run``: would delete).

    ``indexes``: physical indexes; ``aliases``: the model's aliases found (deleted with
    their indexes, or removed from indexes the model does not own: ``detached``, as
    ``(alias, index)`` pairs); ``templates``: index templates. Names are sorted.
    """

    model: str
    alias: str
    indexes: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    detached: tuple[tuple[str, str], ...] = ()
    templates: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def empty(self) -> bool:
        """Nothing of the model exists."""
        return not (self.indexes or self.aliases or self.templates)


def owns_index(spec: IndexSpec, name: str) -> bool:
    """Whether ``name`` is one of ``spec``'s physical index names (module docstring)."""
    alias = re.escape(spec.alias)
    if re.fullmatch(rf"{alias}(?:-v\d+(?:-{_PERIOD})?)?", name) or is_error_index(spec, name):
        return True
    return spec.kind in TIME_SERIES_KINDS and re.fullmatch(rf"{alias}-{_PERIOD}", name) is not None


def owns_alias(spec: IndexSpec, name: str) -> bool:
    """Whether ``name`` is ``spec``'s alias or (time-series) one of its dated aliases."""
    if name == spec.alias:
        return True
    return (
        spec.kind in TIME_SERIES_KINDS
        and re.fullmatch(rf"{re.escape(spec.alias)}-{_PERIOD}", name) is not None
    )


def _owns_template(spec: IndexSpec, name: str) -> bool:
    return re.fullmatch(rf"{re.escape(spec.alias)}-v\d+-template", name) is not None


def _body(response: Any) -> dict[str, Any]:
    """A lenient read's body; ``{}`` for a 404 (nothing of that name)."""
    ok = response.meta.status == 200 and isinstance(response.body, dict)
    return dict(response.body) if ok else {}


def find_indexes(
    client: Elasticsearch, spec: IndexSpec, others: Sequence[IndexSpec] = ()
) -> IndexDeletion:
    """What of ``spec``'s model exists (a dry-run :class:`IndexDeletion`); names that one
    of ``others`` (the mapper's other models) owns too are left out. Sends the reads of
    the module docstring; changes nothing."""
    lenient = client.options(ignore_status=404)
    pattern = f"{spec.alias}*"
    found: dict[str, set[str]] = {}
    for body in (
        _body(lenient.indices.get_alias(index=pattern, expand_wildcards="all")),
        _body(lenient.indices.get_alias(name=pattern, expand_wildcards="all")),
    ):
        for index, entry in body.items():
            aliases = entry.get("aliases", {}) if isinstance(entry, dict) else {}
            found.setdefault(str(index), set()).update(str(a) for a in aliases)

    def mine(owns: Any, name: str) -> bool:
        return bool(owns(spec, name)) and not any(owns(other, name) for other in others)

    indexes = sorted(name for name in found if mine(owns_index, name))
    aliases = sorted({a for names in found.values() for a in names if mine(owns_alias, a)})
    detached = sorted(
        (alias, index)
        for index, names in found.items()
        if index not in indexes
        for alias in names
        if alias in aliases
    )
    body = _body(lenient.indices.get_index_template(name=f"{spec.alias}-v*"))
    templates = sorted(
        str(item.get("name"))
        for item in body.get("index_templates", [])
        if isinstance(item, dict) and mine(_owns_template, str(item.get("name")))
    )
    return IndexDeletion(
        spec.info.name,
        spec.alias,
        tuple(indexes),
        tuple(aliases),
        tuple(detached),
        tuple(templates),
        dry_run=True,
    )


def _remaining(client: Elasticsearch, names: Sequence[str]) -> list[str]:
    """Which of ``names`` still exist (``GET /<names>`` lenient)."""
    body = _body(
        client.options(ignore_status=404).indices.get(
            index=list(names), ignore_unavailable=True, allow_no_indices=True
        )
    )
    return [name for name in names if name in body]


def _detach(client: Elasticsearch, pairs: Sequence[tuple[str, str]]) -> None:
    def still_there() -> list[tuple[str, str]]:
        lenient = client.options(ignore_status=404)
        body = _body(lenient.indices.get_alias(name=sorted({a for a, _ in pairs})))
        return [(a, i) for a, i in pairs if a in (body.get(i, {}) or {}).get("aliases", {})]

    def send() -> None:
        actions = [{"remove": {"index": index, "alias": alias}} for alias, index in pairs]
        with contextlib.suppress(NotFoundError):  # removed meanwhile
            once(client).indices.update_aliases(actions=actions)

    send_or_read_back(send, lambda: not still_there(), what="POST /_aliases (remove)")


def _delete_chunk(client: Elasticsearch, names: Sequence[str]) -> None:
    left = list(names)

    def send() -> None:
        with contextlib.suppress(NotFoundError):  # already gone
            once(client).indices.delete(index=left, ignore_unavailable=True)

    def applied() -> bool:
        left[:] = _remaining(client, left)  # a resend names only what is still there
        return not left

    send_or_read_back(send, applied, what=f"DELETE /{','.join(names)}")


def delete_template(client: Elasticsearch, name: str) -> None:
    """``DELETE /_index_template/<name>`` once; 404 is fine; a lost answer is read back
    (``HEAD``) and sent once more only if the template is still there."""

    def send() -> None:
        with contextlib.suppress(NotFoundError):  # already gone
            once(client).indices.delete_index_template(name=name)

    send_or_read_back(
        send,
        lambda: not client.indices.exists_index_template(name=name),
        what=f"DELETE /_index_template/{name}",
    )


def delete_indexes(
    client: Elasticsearch,
    specs: Iterable[IndexSpec],
    others: Sequence[IndexSpec] = (),
    *,
    dry_run: bool = False,
) -> list[IndexDeletion]:
    """Delete what each of ``specs`` owns (see the module docstring); one
    :class:`IndexDeletion` per spec, in order. ``others``: every spec of the mapper (names
    they own too are kept, unless that spec shares the index and is among ``specs``: a
    parent and its children deleted together delete their index, under the first).
    ``dry_run``: only :func:`find_indexes`. Raises the client's
    errors (``ApiError`` when Elasticsearch refuses a delete; a transport error when an
    unknown outcome stays unknown after the read back)."""
    chosen = list(specs)
    reports: list[IndexDeletion] = []
    for spec in chosen:
        # the models sharing the index that are deleted too (a parent and its children:
        # one index) do not keep it; one that is not deleted does
        rest = [
            other
            for other in others
            if other is not spec and not (other.alias == spec.alias and other in chosen)
        ]
        found = find_indexes(client, spec, rest)
        if dry_run or found.empty:
            reports.append(attrs.evolve(found, dry_run=dry_run))
            continue
        if found.detached:
            _detach(client, found.detached)
        for start in range(0, len(found.indexes), _CHUNK):
            _delete_chunk(client, found.indexes[start : start + _CHUNK])
        for template in found.templates:
            delete_template(client, template)
        log.info(
            "deleted the indexes of %s: %s", spec.info.name, ", ".join(found.indexes) or "none"
        )
        reports.append(attrs.evolve(found, dry_run=False))
    return reports
