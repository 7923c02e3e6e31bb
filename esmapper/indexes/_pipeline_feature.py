"""Ingest pipelines as a feature of the core (:mod:`esmapper._features`): the pipeline a
model's ``_update_by_query`` runs (``Index.pipeline``; :mod:`esmapper.indexes.pipelines`).
Registered when ``esmapper`` is imported; the core never names it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, register
from esmapper.indexes.pipelines import by_query_params

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["Pipelines"]


@register
class Pipelines(Feature):
    """Models with an ``Index.pipeline``."""

    name = "pipelines"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> Pipelines | None:
        index = info.index
        return cls(info) if index is not None and index.pipeline is not None else None

    # -- by-query writes (point: by_query) -------------------------------------------------

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """An ``_update_by_query`` runs the model's pipeline (created first when missing);
        a delete runs none."""
        if request != "update_by_query":
            return {}
        return by_query_params(ctx.spec(self.info.cls))
