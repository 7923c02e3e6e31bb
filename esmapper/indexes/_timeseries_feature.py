"""Time-series placement as a feature of the core (:mod:`esmapper._features`): ids of new
documents that encode their date (after the retention check), and the partitions a
search names. Registered when ``esmapper`` is imported; the core never names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, register
from esmapper.errors import QueryValidationError
from esmapper.indexes._pit_target import pit_target
from esmapper.indexes.timeseries import partitions_for_range

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pit import PitTarget
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

    # -- search (points: compile_search, search_targets) ---------------------------------

    def compile_search(self, ctx: Context, request: Any) -> None:
        """``partitions=(start, end)``: the search names the dated aliases of the period
        (:func:`~esmapper.indexes.timeseries.partitions_for_range`; the umbrella alias
        when the range is open or too long); an end before the start is refused."""
        if request.partitions is None:
            return
        start, end = request.partitions
        try:
            request.targets = partitions_for_range(ctx.spec(self.info.cls), start, end)
        except ValueError as error:
            raise QueryValidationError(str(error), field="partitions") from None

    def search_targets(self, ctx: Context, pruned: Sequence[str] | None) -> PitTarget | None:
        """The partitions named one by one (:func:`~esmapper.indexes._pit_target.pit_target`:
        ``GET /_alias/<umbrella>``), or the pruned ones; ``None``: no partition."""
        return pit_target(ctx.client, ctx.spec(self.info.cls), pruned)
