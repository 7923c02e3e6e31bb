"""Ingest pipelines as a feature of the core (:mod:`esmapper._features`): the
``pipeline`` of a model's ``create``/``index`` actions, the ``?pipeline=`` of its
``_update_by_query``, and what a write read back after a lost answer should have stored.
The rules are :mod:`esmapper.indexes.pipelines`'; registered when ``esmapper`` is
imported, the core never names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, register
from esmapper.indexes.pipelines import by_query_params, expected_source, log, pipeline_name

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
        none."""
        if action.pipeline is None:
            return source
        return expected_source(ctx.client, action, source)

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """``{"pipeline": <name>}`` for the model's ``_update_by_query`` (the pipeline
        created first when missing); a ``_delete_by_query`` runs none."""
        if request != "update_by_query":
            return {}
        return by_query_params(ctx.spec(self.info.cls))
