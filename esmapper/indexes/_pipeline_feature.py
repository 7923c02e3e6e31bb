"""Ingest pipelines as a feature of the core (:mod:`esmapper._features`): the
``pipeline`` of a model's ``create``/``index`` actions, the ``?pipeline=`` of its
``_update_by_query``, and what a write read back after a lost answer should have stored.
The rules are :mod:`esmapper.indexes.pipelines`'; registered when ``esmapper`` is
imported, the core never names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError

from esmapper._features import Feature, register
from esmapper.indexes.pipelines import log, normal, pipeline_name

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.bulk import BulkAction
    from esmapper.model.info import ModelInfo

__all__ = ["Pipelines"]


@register
class Pipelines(Feature):
    """Models with ``class Index: pipeline = ...``."""

    name = "pipeline"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> Pipelines | None:
        index = info.index
        return cls(info) if index is not None and index.pipeline is not None else None

    # -- writes (points: shape, expected_source, by_query) -------------------------------

    def shape(self, ctx: Context, actions: Sequence[BulkAction]) -> None:
        """``pipeline`` on the ``create``/``index`` actions (the pipeline is created first
        when the model defines it and this process has not made sure it exists: see
        :func:`~esmapper.indexes.pipelines.pipeline_name`); ``update`` actions cannot run
        one (Elasticsearch's Update API has none: logged once per model)."""
        spec = ctx.spec(self.info.cls)
        name = pipeline_name(spec, ctx.client)
        if name is None:
            return
        updates = False
        for action in actions:
            if action.op in ("create", "index"):
                action.pipeline = name
            elif action.op == "update":
                updates = True
        pipeline = spec.pipeline
        if updates and pipeline is not None and not pipeline.warned_updates:
            pipeline.warned_updates = True
            log.info(
                "%s: partial updates do not run ingest pipeline %s (Elasticsearch's update "
                "API has none)",
                self.info.name,
                name,
            )

    def expected_source(
        self, ctx: Context, action: BulkAction, source: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        """What the pipeline makes of ``source`` (``POST
        /_ingest/pipeline/<name>/_simulate``); ``source`` itself for an action that runs
        none; ``None`` when it cannot be told (no body, the simulation failed)."""
        if action.pipeline is None:
            return source
        if source is None:
            return None
        doc = {"_index": action.index, "_id": action.id, "_source": normal(source)}
        log.debug("POST /_ingest/pipeline/%s/_simulate", action.pipeline)
        try:
            body = ctx.client.ingest.simulate(id=action.pipeline, docs=[doc]).body
        except ApiError as exc:
            log.warning("simulating ingest pipeline %s failed: %s", action.pipeline, exc)
            return None
        docs = body.get("docs") or []
        stored = (docs[0].get("doc") or {}).get("_source") if docs else None
        return dict(stored) if isinstance(stored, dict) else None

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """``{"pipeline": <name>}`` for the model's ``_update_by_query`` (the pipeline
        created first when missing); a ``_delete_by_query`` runs none."""
        if request != "update_by_query":
            return {}
        name = pipeline_name(ctx.spec(self.info.cls))
        return {} if name is None else {"pipeline": name}
