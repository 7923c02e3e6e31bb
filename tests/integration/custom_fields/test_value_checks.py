"""A custom-field value a slot cannot index is stored, not indexed: never a rejected
document."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("float", 1e39),
        ("float", "1e39"),
        ("long", 2**63 - 1),
        ("date", "99999-01-01"),
        ("int", "1_000"),
    ],
)
def test_a_wrong_valued_custom_field_never_rejects_the_document(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], kind: str, value: Any
) -> None:
    fields.add_field("acme", "X", kind)
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"X": value}), consistency="immediate"
    )
    stored = repo.get(doc.id)
    assert stored is not None
    assert stored.custom_fields == {"X": value}
