"""The features esmapper ships, registered in this order when ``esmapper`` is imported
(each module registers its feature with :func:`esmapper._features.register`). The core
never imports them; this list is the one place that names them."""

from __future__ import annotations

from esmapper import _join, _routing, _soft_deletes
from esmapper.custom_fields import _feature as _custom_fields
from esmapper.indexes import _pipeline_feature, _timeseries_feature

__all__ = ["BUILTIN"]

BUILTIN = (
    _soft_deletes.SoftDeleteFeature,
    _timeseries_feature.TimeSeries,
    _custom_fields.CustomFields,
    _pipeline_feature.Pipelines,
    _routing.Routing,
    _join.ParentJoin,
    _join.ChildJoin,
    _custom_fields.CustomFieldDefinitions,
)
