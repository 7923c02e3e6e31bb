"""Ingest pipelines: ``class Index: pipeline = ...`` on every write.

The one owner of "which writes run a model's ingest pipeline" (docs/architecture.md):

- ``create``/``index`` bulk actions (``add``, ``save`` of a fully loaded document, a
  session flush, client-side patches ``JsonPatch``/``ActionPatch``, the scan-driven writes
  of ``patch_all``): ``"pipeline"`` in the action line (the ``shape`` point of
  :class:`~esmapper.indexes._pipeline_feature.Pipelines`, called by
  :func:`esmapper._outcomes.send`, the one place every document write passes);
- ``patch_all`` sent as one ``_update_by_query``: ``?pipeline=<name>`` (its ``by_query``
  point);
- reindex passes (versions, time-series partitions): ``"dest": {"pipeline": <name>}``
  (:func:`reindex_dest`).

Not applied: ``update`` actions (``PartialPatch``/``ScriptPatch`` by id or scanned, the
save of a document loaded with ``includes``/``excludes``): Elasticsearch's Update API has
no pipeline; this is logged once per model at INFO. Nor deletes, re-keying (it
moves stored documents as they are, already processed, and compares stored copies to
resume) and esmapper's own indexes (locks, migration state).

``pipeline = "name"``: an existing pipeline, used as is; ``configure_indexes`` raises
:class:`~esmapper.errors.IndexConfigurationError` when it does not exist (writes would be
refused with 400) and ``mapper.health()`` reports it. ``pipeline = {"processors": [...],
...}``: a definition, named ``<alias>-pipeline``; ``configure_indexes`` puts it (``GET
/_ingest/pipeline/<name>``, ``PUT`` when missing or different: idempotent), and the
model's first write in a process creates it when it is missing (``GET``, ``PUT`` if 404),
like its index; an existing one is left to ``configure_indexes``, so an older process
never reverts a newer definition.

A pipeline changes what is stored, so a write whose answer was lost cannot be read back
by comparing the stored ``_source`` with the body sent: the feature's ``expected_source``
point asks the server what the pipeline makes of the body (``POST
/_ingest/pipeline/<name>/_simulate``).
A pipeline that is not deterministic (a timestamp, a random id) makes such a write
*unknown* rather than applied; it is never resent blindly (:mod:`esmapper._outcomes`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from esmapper import _json
from esmapper.errors import IndexConfigurationError

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.info import IndexOptions

__all__ = [
    "Pipeline",
    "configure_pipeline",
    "normal",
    "pipeline_name",
    "reindex_dest",
]

log = logging.getLogger("esmapper.indexes")


@attrs.define(eq=False)
class Pipeline:
    """A model's pipeline: its ``name`` and, when the model defines it, its
    ``definition``; remembers whether this process made sure it exists."""

    name: str
    definition: Mapping[str, Any] | None = None
    ensured: bool = False
    warned_updates: bool = False
    lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, options: IndexOptions, alias: str) -> Pipeline | None:
        """The pipeline of ``options`` (``None`` when it has none)."""
        value = options.pipeline
        if value is None:
            return None
        if isinstance(value, str):
            return cls(value)
        return cls(f"{alias}-pipeline", dict(value))


def normal(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists...): what a stored body compares to."""
    return _json.loads(_json.dumps(value))


def _stored(client: Elasticsearch, name: str) -> dict[str, Any] | None:
    """``GET /_ingest/pipeline/<name>``: its body, ``None`` when missing."""
    log.debug("GET /_ingest/pipeline/%s", name)
    try:
        body = client.ingest.get_pipeline(id=name).body
    except NotFoundError:
        return None
    found = body.get(name) if isinstance(body, dict) else None
    return dict(found) if isinstance(found, dict) else None


def _put(client: Elasticsearch, spec: IndexSpec, pipeline: Pipeline) -> None:
    assert pipeline.definition is not None
    body = dict(pipeline.definition)
    log.debug("PUT /_ingest/pipeline/%s %s", pipeline.name, body)
    try:
        client.ingest.put_pipeline(id=pipeline.name, body=body)
    except BadRequestError as exc:
        raise IndexConfigurationError(
            f"{spec.info.name}.Index.pipeline was refused by Elasticsearch: {exc.message}",
            index=spec.alias,
            error_type=str(exc.error),
            reason=str(exc.message),
        ) from exc


def configure_pipeline(client: Elasticsearch, spec: IndexSpec) -> str | None:
    """Make sure ``spec``'s pipeline is there: ``None`` (no pipeline), ``"created"``,
    ``"updated"`` or ``"unchanged"`` (see the module docstring). A named pipeline that
    does not exist, or a definition Elasticsearch refuses, raises
    :class:`~esmapper.errors.IndexConfigurationError`."""
    pipeline = spec.pipeline
    if pipeline is None:
        return None
    stored = _stored(client, pipeline.name)
    if pipeline.definition is None:
        if stored is None:
            raise IndexConfigurationError(
                f"{spec.info.name}.Index.pipeline {pipeline.name!r} does not exist: create it "
                f"(PUT /_ingest/pipeline/{pipeline.name}) or give its definition "
                '(pipeline = {"processors": [...]}) for configure_indexes to create',
                index=spec.alias,
            )
        action = "unchanged"
    elif stored is None:
        _put(client, spec, pipeline)
        action = "created"
    elif any(stored.get(k) != v for k, v in normal(pipeline.definition).items()):
        _put(client, spec, pipeline)
        action = "updated"
    else:
        action = "unchanged"
    if action != "unchanged":
        log.info("%s ingest pipeline %s for %s", action, pipeline.name, spec.info.name)
    pipeline.ensured = True
    return action


def pipeline_name(spec: IndexSpec, client: Elasticsearch | None = None) -> str | None:
    """The name of the pipeline ``spec``'s writes run, ``None`` without one. A defined
    pipeline is created first when missing, once per process (``GET``, ``PUT`` on 404)."""
    pipeline = spec.pipeline
    if pipeline is None:
        return None
    if pipeline.definition is not None and not pipeline.ensured:
        client = client or spec.client
        if client is None:
            return pipeline.name
        with pipeline.lock:
            if not pipeline.ensured:
                if _stored(client, pipeline.name) is None:
                    _put(client, spec, pipeline)
                    log.info("created ingest pipeline %s for %s", pipeline.name, spec.info.name)
                pipeline.ensured = True
    return pipeline.name


def reindex_dest(spec: IndexSpec, dest: dict[str, Any]) -> dict[str, Any]:
    """``dest`` of a ``_reindex`` into one of ``spec``'s indexes, with its pipeline."""
    name = pipeline_name(spec)
    return dest if name is None else {**dest, "pipeline": name}
