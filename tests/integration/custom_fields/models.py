"""Models of the custom-field tests: a percent type, a calculated type, two entity types."""

from __future__ import annotations

from typing import Any

import esmapper as em


class PercentType:
    """The reference's example type: clamps integers to 0..100, maps as integer."""

    type = "percent"

    def mapping(self) -> Any:
        return em.Integer()

    def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
        if isinstance(value, int) and not isinstance(value, bool):
            return em.ProcessResult(min(max(value, 0), 100))
        return em.ProcessResult(value)


class SumType:
    """A calculated integer: the sum of the fields named in ``definition.data["of"]``;
    counts its runs in ``definition.data["runs"]`` (asks for the definition to be saved)."""

    type = "sum"

    def mapping(self) -> Any:
        return em.Integer()

    def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
        data = definition.data or {}
        names = {n.lower() for n in data.get("of", [])}
        values = doc.custom_fields or {}
        total = sum(v for k, v in values.items() if k.lower() in names and isinstance(v, int))
        counting = bool(data.get("count_runs"))
        if counting:
            definition.data = {**data, "runs": int(data.get("runs", 0)) + 1}
        return em.ProcessResult(total, definition_modified=counting)


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    class Index:
        name = "cf_employees"
        tenant_field = "company_id"
        custom_field_types = [*em.standard_field_types(), PercentType(), SumType()]  # noqa: RUF012
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    company_id: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


class Ticket(em.Document, em.HasCustomFields):
    """A composite tenant key (company and kind); unknown names get a string definition."""

    class Index:
        name = "cf_tickets"
        auto_create_custom_fields = True
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    company_id: str = em.field(em.Keyword(), default="")
    kind: str = em.field(em.Keyword(), default="")
    title: str = em.field(em.Text(), default="")

    def tenant_key(self) -> str:
        return f"{self.company_id}-{self.kind}" if self.company_id and self.kind else ""
