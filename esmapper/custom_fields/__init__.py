"""Tenant custom fields: a fixed pool of typed slots
(``idx.<type>-<n>``, mapped by one dynamic template per type), definitions per (entity
type, tenant) mapping logical names to slots, and queries by logical name.

- :mod:`~esmapper.custom_fields.types`: the types, their slot mappings, what a slot indexes;
- :mod:`~esmapper.custom_fields.definition`: ``CustomFieldDefinition``;
- :mod:`~esmapper.custom_fields.repository`: ``mapper.custom_fields(Model)`` (definitions,
  field mappings and their cache);
- :mod:`~esmapper.custom_fields.slots`: slot allocation and the tenant lock;
- :mod:`~esmapper.custom_fields.indexing`: ``idx`` recomputed on every write path;
- :mod:`~esmapper.custom_fields.catalog` / :mod:`~esmapper.custom_fields.search`: a
  tenant's view of the model's fields, and what ``tenant=`` adds to searches.
"""

from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.custom_fields.types import (
    CustomFieldType,
    ProcessResult,
    StandardFieldType,
    standard_field_types,
)

__all__ = [
    "CustomFieldDefinition",
    "CustomFieldType",
    "ProcessResult",
    "StandardFieldType",
    "standard_field_types",
]
