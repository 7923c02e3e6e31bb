"""The mapping every query-layer unit test compiles against.

It has a text field with a keyword subfield (``name``), a text-only field (``bio``), a
keyword, integer, long, float, boolean and date field, an object (``address``) and a nested
field (``reviews``) holding a second nested level (``reviews.replies``).
"""

from __future__ import annotations

from typing import Any

from esmapper.model.catalog import FieldCatalog

MAPPING: dict[str, Any] = {
    "properties": {
        "name": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
        "bio": {"type": "text"},
        "email": {"type": "keyword"},
        "company_id": {"type": "keyword"},
        "age": {"type": "integer"},
        "visits": {"type": "long"},
        "score": {"type": "float"},
        "is_active": {"type": "boolean"},
        "is_deleted": {"type": "boolean"},
        "created_utc": {"type": "date"},
        "address": {
            "properties": {
                "street": {"type": "text"},
                "city": {"type": "keyword"},
            }
        },
        "reviews": {
            "type": "nested",
            "properties": {
                "rating": {"type": "integer"},
                "author": {"type": "keyword"},
                "comment": {"type": "text"},
                "replies": {
                    "type": "nested",
                    "properties": {"by": {"type": "keyword"}, "text": {"type": "text"}},
                },
            },
        },
    }
}

CATALOG = FieldCatalog(MAPPING)

#: The same mapping with a mapped ``id`` keyword field (as esmapper Documents have).
CATALOG_WITH_ID = FieldCatalog({"properties": {**MAPPING["properties"], "id": {"type": "keyword"}}})

#: A mapping without any text field (bare terms have nowhere to go).
CATALOG_NO_TEXT = FieldCatalog({"properties": {"email": {"type": "keyword"}}})
