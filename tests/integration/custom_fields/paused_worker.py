"""``add_field`` in a process of its own, for the SIGSTOP tests: ``python -m
tests.integration.custom_fields.paused_worker CONTROL NAME URL PREFIX LOCK_TTL TENANT
FIELD:TYPE`` (run from the repository root) adds the field with a tenant-lock lease of
LOCK_TTL seconds and holds (:func:`tests.integration.pausing.hold_here`) under the lock,
after the tenant's names were checked, right before its definition is created
(``slots.allocate``). Prints one JSON line: ``{"id": ..., "name": ...}`` or
``{"error": <class name>, "message": ...}``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import esmapper as em
from esmapper.custom_fields import slots
from tests.integration.pausing import hold_here

from .models import Employee


def main(argv: list[str]) -> int:
    control, name, url, prefix, ttl, tenant, spec = argv
    field, _, index_type = spec.partition(":")
    real_allocate = slots.allocate

    def allocate(*args: Any, **kwargs: Any) -> Any:
        hold_here(control, name)
        return real_allocate(*args, **kwargs)

    slots.allocate = allocate  # type: ignore[assignment]
    outcome: dict[str, Any]
    with em.Mapper(url, models=[Employee], index_prefix=prefix) as mapper:
        fields = mapper.custom_fields(Employee)
        fields.lock_ttl = dt.timedelta(seconds=float(ttl))
        try:
            added = fields.add_field(tenant, field, index_type)
            outcome = {"id": added.id, "name": added.name}
        except Exception as exc:
            outcome = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
