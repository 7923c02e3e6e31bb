"""Time-series placement as a feature of the core (:mod:`esmapper._features`): ids of new
documents that encode their date (after the retention check), and the partitions a
search names. Registered when ``esmapper`` is imported; the core never names it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, register
from esmapper.indexes._pit_target import pit_target

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["TimeSeries"]

_KINDS = ("daily", "monthly")


@register
class TimeSeries(Feature):
    """``daily``/``monthly`` models."""

    name = "time_series"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> TimeSeries | None:
        index = info.index
        return cls(info) if index is not None and index.kind in _KINDS else None

    # -- writes (point: assign_ids) ------------------------------------------------------

    # -- search ---------------------------------------------------------------------------

    # -- by-query writes (point: by_query) -------------------------------------------------

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """A by-query request names the partitions one by one
        (:func:`~esmapper.indexes._pit_target.pit_target`, after ``GET
        /_alias/<umbrella>``), with ``ignore_unavailable=true`` and
        ``allow_no_indices=true`` (a partition retention deletes in between is skipped),
        as the scans' point in time does: the local test server runs a by-query request
        on an alias of several indexes over one of them only. ``None``: no partition."""
        found = pit_target(ctx.client, ctx.spec(self.info.cls), None)
        if found is None:
            return None
        return {"index": found.index, "ignore_unavailable": True, "allow_no_indices": True}
