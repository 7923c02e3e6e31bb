"""Time-series placement as a feature of the core (:mod:`esmapper._features`): ids of new
documents that encode their date (after the retention check), and the partitions a
search names. Registered when ``esmapper`` is imported; the core never names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, WriteCall, register
from esmapper.errors import DocumentValidationError, QueryValidationError
from esmapper.ids import ObjectId
from esmapper.indexes._pit_target import pit_target
from esmapper.indexes.timeseries import (
    TIME_SERIES_KINDS,
    check_max_age,
    partitions_for_range,
    period_start,
)
from esmapper.model.codec import parse_datetime

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pending import PendingWrite
    from esmapper._pit import PitTarget
    from esmapper.model.info import ModelInfo

__all__ = ["TimeSeries"]


@register
class TimeSeries(Feature):
    """``daily``/``monthly`` models."""

    name = "time_series"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> TimeSeries | None:
        index = info.index
        return cls(info) if index is not None and index.kind in TIME_SERIES_KINDS else None

    # -- writes (point: assign_ids) ------------------------------------------------------

    def assign_ids(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """A new dated document's id is an ObjectId encoding its date (``date_field``,
        ``created_utc`` by default), so that its partition can be told from its id; a
        date in an expired period (``max_age``) raises IndexMaxAgeExceededError first, one
        an ObjectId cannot hold DocumentValidationError. Undated documents are left to
        the core (a new ObjectId of now). Sends nothing."""
        info, spec = self.info, call.ctx.spec(self.info.cls)
        field = spec.date_field
        for pending in pendings:
            doc = pending.doc
            value = getattr(doc, field, None)
            if value is None:
                continue
            at = parse_datetime(value)
            check_max_age(spec, period_start(spec.kind, at), call.now, None)
            try:
                object.__setattr__(doc, "id", str(ObjectId.new(at)))
            except ValueError as exc:
                raise DocumentValidationError(
                    f"{info.name}.{field} = {at}: a new {info.name}'s id encodes this date, "
                    f"and {exc}; give the document an id, or a date in that range",
                    field=field,
                ) from None

    # -- by-query writes (point: by_query) -------------------------------------------------

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """A by-query request names the partitions one by one (:meth:`search_targets`),
        with ``ignore_unavailable`` and ``allow_no_indices`` (a partition retention
        deletes in between is skipped). ``None``: no partition."""
        found = self.search_targets(ctx, None)
        if found is None:
            return None
        return {"index": found.index, "ignore_unavailable": True, "allow_no_indices": True}

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
        """The partitions named one by one (the local test server runs a request on an
        alias of several indexes over one of them only), after ``GET /_alias/<umbrella>``
        (:func:`~esmapper.indexes._pit_target.pit_target`), or the pruned ones."""
        return pit_target(ctx.client, ctx.spec(self.info.cls), pruned)
