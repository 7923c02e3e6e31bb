"""A custom-field change in a process of its own, for the SIGSTOP tests: ``python -m
tests.integration.custom_fields.paused_worker CONTROL NAME URL PREFIX LOCK_TTL TENANT
COMMAND ...`` (run from the repository root), with a tenant-lock lease of LOCK_TTL seconds,
held (:func:`tests.integration.pausing.hold_here`) under the lock once the tenant's names
were checked:

- ``add FIELD:TYPE``: ``add_field``, held right before its definition is created
  (``slots.allocate``);
- ``rename OLD NEW``: ``rename_field``, held right after ``check_free`` found NEW free.

Prints one JSON line: ``{"id": ..., "name": ...}`` or ``{"error": <class name>, "message":
...}``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import esmapper as em
from esmapper.custom_fields import repository, slots
from tests.integration.pausing import hold_here

from .models import Employee


def main(argv: list[str]) -> int:
    control, name, url, prefix, ttl, tenant, command, *args = argv
    real_allocate, real_check_free = slots.allocate, repository.check_free  # type: ignore[attr-defined]

    def allocate(*args: Any, **kwargs: Any) -> Any:
        hold_here(control, name)
        return real_allocate(*args, **kwargs)

    def check_free(*args: Any, **kwargs: Any) -> Any:
        checked = real_check_free(*args, **kwargs)
        hold_here(control, name)
        return checked

    slots.allocate = allocate  # type: ignore[assignment]
    repository.check_free = check_free  # type: ignore[attr-defined]
    outcome: dict[str, Any]
    with em.Mapper(url, models=[Employee], index_prefix=prefix) as mapper:
        fields = mapper.custom_fields(Employee)
        fields.lock_ttl = dt.timedelta(seconds=float(ttl))
        try:
            if command == "add":
                field, _, index_type = args[0].partition(":")
                done = fields.add_field(tenant, field, index_type)
            else:
                done = fields.rename_field(tenant, *args)
            outcome = {"id": done.id, "name": done.name}
        except Exception as exc:
            outcome = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
