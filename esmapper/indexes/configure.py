"""``configure_indexes``: create what is missing, update mappings, report what needs a reindex.

Idempotent and safe to call at every start. For each model it sends:

- ``GET /_alias/<alias>`` to learn which physical index the alias points at;
- ``PUT /<physical>`` (with the alias for versioned indexes) when the index is missing;
- ``GET /<physical>/_mapping`` when it exists, and ``PUT /<physical>/_mapping`` with the
  model's mapping unless the stored one already holds it, so new fields are added in place
  (compared as Elasticsearch echoes mappings, without ``"type": "object"`` beside
  ``properties`` and without parameters at their defaults:
  :func:`~esmapper.indexes._echo.covers`; a second run sends no ``PUT``);
- ``GET /<physical>/_settings`` when the index exists and the model's settings declare an
  ``analysis`` block: every analyzer, tokenizer, token filter, normalizer or char filter
  the index lacks is logged (WARNING, ``adding new analyzer <name> to existing index
  <index> requires close/reopen ...``). It is not added: the reference applies it by
  closing and reopening the index, which would fail every read and write meanwhile;
  esmapper leaves that to a version bump (the reindex creates the new index with it);
- versioned: ``HEAD /<index>/_alias/<index>.fence`` on the index behind the alias (``PUT``
  when missing: an index made before fence aliases existed gets its fence,
  :func:`~esmapper.indexes._ensure.fence_if_serving`); a new index is created with it.

The create and the alias are sent once, without the transport's retries
(:mod:`esmapper._transport`); a lost answer is settled by reading back (``HEAD /<physical>``,
``HEAD /<physical>/_alias/<alias>``) and sent once more only if missing.

Several processes may configure at once (every instance of an application at its start):
every step is idempotent, so no lock is taken. A create answered
``resource_already_exists_exception`` (another process created it between our read and our
create, maybe an older version of the application on its first write) is a success once
the index is checked to be what we expect: its mapping holds the model's (``PUT _mapping``
otherwise, refused in place -> the error below) and, for a versioned index, the alias is on
it (added when missing; adding an alias that is there is a no-op); it is reported
``unchanged`` (or ``mapping_updated``). An alias a concurrent process just created is not
taken for a concrete index named like the alias (:func:`~esmapper.indexes._occupied.
concrete_index` asks ``HEAD /_alias/<name>`` too).

A mapping change Elasticsearch refuses in place (a changed field type) logs ``error
updating index (<index>) mappings.`` (ERROR; a versioned model's adds ``Changing existing
fields requires a new index version.``, the reference's lines) and raises
:class:`~esmapper.errors.IndexConfigurationError` telling to bump ``Index.version``. An alias
that points at an older version is reported as ``outdated``: moving it needs a reindex,
which ``configure_indexes`` never starts (see
:func:`esmapper.indexes.reindex.reindex_outdated`; ``Mapper.configure_indexes(
begin_reindexing_outdated=True)`` queues it for a worker instead:
:mod:`esmapper.jobs._reindex_items`).

Time-series models (``daily``/``monthly``) get an index template instead
(``PUT /_index_template/<alias>-v<N>-template``, pattern ``<alias>-v<N>-*``, the mapping,
settings and umbrella alias); existing partitions are left alone and new ones
are created by the first write of their period. ``GET /<alias>-v*/_alias`` tells whether a
live partition is at an older version (``outdated``: a reindex moves it, see
:mod:`esmapper.indexes.partition_reindex`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from esmapper.errors import IndexConfigurationError
from esmapper.indexes._echo import covers
from esmapper.indexes._ensure import (
    alias_targets,
    create_index,
    fence_if_serving,
    put_alias,
    reason_of,
)
from esmapper.indexes._occupied import alias_taken_error, concrete_index
from esmapper.indexes.partition_versions import partition_versions
from esmapper.indexes.pipelines import configure_pipeline
from esmapper.indexes.spec import IndexSpec
from esmapper.indexes.timeseries import put_template

__all__ = ["IndexState", "configure_indexes", "index_state", "is_outdated"]

log = logging.getLogger("esmapper.indexes")


@attrs.frozen(slots=True)
class IndexState:
    """What ``configure_indexes`` found or did for one model.

    ``action`` is ``created``, ``mapping_updated``, ``unchanged`` or ``outdated`` (the alias
    points at ``current_index``, an older version than ``expected_index``). For time-series
    models ``expected_index`` is the partition pattern (``<alias>-v<N>-*``) and ``action``
    ``created``, ``template_updated`` or ``outdated`` (a live partition is at an older
    version; ``current_index`` is then the lowest version's pattern ``<alias>-v<K>-*``,
    else ``None``). ``Mapper.configure_indexes()`` reports ``skipped`` for every model
    when another process configured the same models less than 5 minutes ago (nothing is
    read then, ``current_index`` is ``None``: :mod:`esmapper.indexes._configured`).
    """

    model: str
    alias: str
    expected_index: str
    current_index: str | None
    action: str


def is_outdated(spec: IndexSpec, *, current: str | None, lowest: int | None) -> bool:
    """Whether a reindex must move the model's documents to its version: a ``versioned``
    alias resolves to ``current``, another physical index than the model's (``None``: no
    alias yet), or a time-series model's lowest live partition version ``lowest`` is below
    ``Index.version``. Plain models are never outdated. Sends nothing."""
    if spec.is_time_series:
        return lowest is not None and lowest < spec.version
    return spec.kind == "versioned" and current not in (None, spec.physical_name())


def index_state(client: Elasticsearch, spec: IndexSpec) -> tuple[str | None, bool]:
    """``(physical index the alias resolves to, whether the expected index exists)``."""
    expected = spec.physical_name()
    if spec.kind == "plain":
        exists = bool(client.indices.exists(index=expected))
        return (expected if exists else None), exists
    targets = alias_targets(client, spec.alias)
    current = targets[-1] if targets else None
    exists = expected in targets or bool(client.indices.exists(index=expected))
    return current, exists


def _put_mapping(client: Elasticsearch, spec: IndexSpec, index: str) -> bool:
    """Send the model's mapping unless the index already has it (``GET
    /<index>/_mapping``, compared as Elasticsearch echoes mappings:
    :func:`~esmapper.indexes._echo.covers`); ``True`` if ``PUT /<index>/_mapping`` was
    sent."""
    stored: dict[str, Any] = {}
    with contextlib.suppress(NotFoundError):
        stored = client.indices.get_mapping(index=index).body
    entry: dict[str, Any] = next(iter(stored.values()), {})
    current = entry.get("mappings", {})
    if covers(current, spec.info.mapping):
        return False
    try:
        client.indices.put_mapping(index=index, body=spec.info.mapping)
    except BadRequestError as exc:
        if spec.kind == "versioned":
            log.error(
                "error updating index (%s) mappings. Changing existing fields requires a new "
                "index version.",
                index,
            )
        else:
            log.error("error updating index (%s) mappings.", index)
        raise IndexConfigurationError(
            f"the mapping of {spec.info.name} changed in a way Elasticsearch cannot apply to "
            f"{index!r} in place ({exc.error}: {reason_of(exc)}); bump {spec.info.name}.Index."
            f"version to {spec.version + 1} and reindex",
            index=index,
            error_type=str(exc.error),
            reason=reason_of(exc),
        ) from exc
    return True


#: The analysis components a model's settings may add, and how the warnings name them.
_COMPONENTS: Final = {
    "analyzer": "analyzer",
    "tokenizer": "tokenizer",
    "filter": "token filter",
    "normalizer": "normalizer",
    "char_filter": "char filter",
}


def _desired_analysis(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``analysis`` block of a model's settings (root or under ``index``)."""
    found = settings.get("analysis") or (settings.get("index") or {}).get("analysis")
    return dict(found) if isinstance(found, Mapping) else {}


def _warn_new_analysis(client: Elasticsearch, spec: IndexSpec, index: str) -> list[str]:
    """The analysis components the model's settings declare and the existing ``index``
    lacks, each logged (WARNING); the reference adds them in place by closing and
    reopening the index, which esmapper does not do to an index that serves (reads and
    writes would fail while it is closed): bump the version instead. Sends ``GET
    /<index>/_settings`` only when the model declares an ``analysis`` block; the live one
    is read under ``settings.index.analysis`` (where Elasticsearch answers it)."""
    desired = _desired_analysis(spec.options.settings or {})
    if not desired:
        return []
    body = client.indices.get_settings(index=index).body
    live = (body.get(index) or {}).get("settings", {}).get("index", {}).get("analysis") or {}
    added = []
    for key, label in _COMPONENTS.items():
        for name in sorted(set(desired.get(key) or {}) - set(live.get(key) or {})):
            log.warning(
                "adding new %s %s to existing index %s requires close/reopen, which esmapper "
                "does not do to an index that serves: bump %s.Index.version and reindex",
                label, name, index, spec.info.name,
            )  # fmt: skip
            added.append(f"{label} {name}")
    return added


def _configure_template(client: Elasticsearch, spec: IndexSpec) -> IndexState:
    name = spec.template_name
    existed = bool(client.indices.exists_index_template(name=name))
    put_template(client, spec)
    if not existed:
        log.info("created index template %s for %s", name, spec.info.name)
    lowest = partition_versions(client, spec, spec.clock()).lowest
    outdated = is_outdated(spec, current=None, lowest=lowest)
    return IndexState(
        model=spec.info.name,
        alias=spec.alias,
        expected_index=spec.index_pattern,
        current_index=f"{spec.alias}-v{lowest}-*" if outdated else None,
        action="outdated" if outdated else "template_updated" if existed else "created",
    )


def configure_indexes(client: Elasticsearch, specs: Iterable[IndexSpec]) -> list[IndexState]:
    """Create missing indexes and aliases and update mappings; see the module docstring."""
    states: list[IndexState] = []
    for spec in specs:
        configure_pipeline(client, spec)  # before the first write that runs it
        if spec.is_time_series:
            if concrete_index(client, spec.alias):  # partitions could not join the umbrella
                raise alias_taken_error(
                    spec.info.name, spec.alias, f"the partitions {spec.index_pattern!r}"
                )
            states.append(_configure_template(client, spec))
            continue
        expected = spec.physical_name()
        current, exists = index_state(client, spec)
        if spec.kind == "versioned" and current is None and concrete_index(client, spec.alias):
            raise alias_taken_error(spec.info.name, spec.alias, f"index {expected!r}")
        if not exists:
            with_alias = spec.kind == "versioned" and current is None  # a plain index has none
            created = create_index(client, spec, with_alias=with_alias)
            action = "created"
            if created is False:  # created concurrently: make sure it is what we expect
                log.info("%s was created concurrently by another process", expected)
                action = "mapping_updated" if _put_mapping(client, spec, expected) else "unchanged"
            elif created:
                log.info("created index %s for %s", expected, spec.info.name)
        else:
            _warn_new_analysis(client, spec, expected)
            action = "mapping_updated" if _put_mapping(client, spec, expected) else "unchanged"
            if spec.kind == "versioned" and current is None:
                put_alias(client, expected, spec.alias)
        if spec.kind == "versioned":  # the index serving the model has its fence alias
            # (unless a reindex replaced it since it was read: the new one has its own)
            fence_if_serving(client, spec, current if current is not None else expected)
        if is_outdated(spec, current=current, lowest=None):
            action = "outdated"
        spec.ensured.mark()  # the first write need not check again
        states.append(
            IndexState(
                model=spec.info.name,
                alias=spec.alias,
                expected_index=expected,
                current_index=current if current is not None else expected,
                action=action,
            )
        )
    return states
