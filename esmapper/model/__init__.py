"""Declarative models: documents, embedded objects, traits, fields and their mappings."""

from esmapper.model._sortable import keyword_and_sort_fields
from esmapper.model.catalog import FieldCatalog, FieldInfo
from esmapper.model.document import (
    Document,
    HasCustomFields,
    HasDates,
    HasVirtualCustomFields,
    InnerDoc,
    SoftDeletes,
    Versioned,
)
from esmapper.model.fields import field
from esmapper.model.info import IndexOptions, ModelInfo

__all__ = [
    "Document",
    "FieldCatalog",
    "FieldInfo",
    "HasCustomFields",
    "HasVirtualCustomFields",
    "HasDates",
    "IndexOptions",
    "InnerDoc",
    "ModelInfo",
    "SoftDeletes",
    "Versioned",
    "field",
    "keyword_and_sort_fields",
]
