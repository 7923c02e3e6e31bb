"""Types whose process_value modifies their definition (``definition_modified``): the
definition is saved after the document write, on a copy, retried on conflicts; it never
fails the document's write."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

import esmapper as em

from .models import Employee


@pytest.fixture
def counting(fields: em.CustomFieldRepository) -> None:
    fields.add_field("acme", "F1", "int")
    fields.add_field(
        "acme", "Total", "sum", process_mode="always", data={"of": ["F1"], "count_runs": True}
    )


def test_concurrent_writes_all_land_and_every_run_is_counted(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], counting: None
) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def run(n: int) -> None:
        barrier.wait()
        for i in range(3):
            try:
                repo.add(Employee(name=f"t{n}-{i}", company_id="acme", custom_fields={"F1": i}))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors[:2]
    assert repo.count(consistency="immediate") == 12
    assert (fields.field("acme", "Total").data or {}).get("runs") == 12


def test_the_cached_definition_is_never_modified(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], counting: None
) -> None:
    cached = fields.tenant_fields("acme").get("Total")
    assert cached is not None
    repo.add(Employee(name="a", company_id="acme", custom_fields={"F1": 1}))
    assert (cached.definition.data or {}).get("runs") is None
    assert (fields.field("acme", "Total").data or {}).get("runs") == 1


def test_a_failed_definition_save_is_logged_and_the_document_written(
    fields: em.CustomFieldRepository,
    repo: em.Repository[Employee],
    counting: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(self: Any, docs: Any, **options: Any) -> Any:
        raise em.DocumentError("definition index unavailable")

    monkeypatch.setattr(em.CustomFieldRepository, "save", broken)
    with caplog.at_level(logging.WARNING, logger="esmapper.custom_fields"):
        doc = repo.add(
            Employee(name="a", company_id="acme", custom_fields={"F1": 2}),
            consistency="immediate",
        )
    assert repo.get(doc.id) is not None
    assert any("could not be saved" in r.getMessage() for r in caplog.records)
