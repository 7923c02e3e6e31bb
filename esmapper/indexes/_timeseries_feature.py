"""Time-series placement as a feature of the core (:mod:`esmapper._features`): ids of new
documents that encode their date (after the retention check), and the partitions a
search names. Registered when ``esmapper`` is imported; the core never names it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from esmapper._features import Feature, register

if TYPE_CHECKING:
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
