"""The tenant rule against what every "-ing" receiver leaves (review of issue 25, item 3):
``documents_changing`` is an "-ing" signal too (receivers may modify documents), so a
write with ``tenant=`` is judged after it, not before."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee


def test_a_changing_receiver_cannot_move_a_document_to_another_tenant_past_the_rule(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    g1 = repo.add(Employee(name="g1", company_id="globex"), consistency="immediate")
    assert g1.id is not None

    def move(sender: Any, documents: Any = (), **kwargs: Any) -> None:
        for change in documents:
            change.value.company_id = "acme"

    em.signals.documents_changing.connect(move, sender=Employee)
    try:
        with pytest.raises(em.DocumentValidationError, match="tenant"):
            repo.save(g1, tenant="globex")
    finally:
        em.signals.documents_changing.disconnect(move, sender=Employee)
    stored = mapper.client.get(index=mapper.spec(Employee).alias, id=g1.id).body["_source"]
    assert stored["company_id"] == "globex"
