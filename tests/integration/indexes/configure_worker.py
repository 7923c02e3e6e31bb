"""``configure_indexes()`` in a process of its own, for the fleet tests: ``python -m
tests.integration.indexes.configure_worker CONTROL NAME URL PREFIX MODE [LOCK_TTL]`` (run
from the repository root).

MODE ``start``: wait for ``<CONTROL>/go`` (so several workers start at once), then
configure. MODE ``pause``: configure with a configure-lock lease of LOCK_TTL seconds
(``configure_indexes(lock_ttl=)``), held
(:func:`tests.integration.pausing.hold_here`) under the lock right before configuring.

Prints one JSON line: ``{"actions": [...]}`` (``"skipped"`` each: marked done) or ``{"error":
<class name>, "message": ...}``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import esmapper as em
from esmapper import mapper as mapper_module
from tests.integration.pausing import hold_here


class Thing(em.Document):
    class Index:
        name = "things"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")


class Plain(em.Document):
    class Index:
        name = "plains"
        kind = "plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    n: int = 0


def main(argv: list[str]) -> int:
    control, name, url, prefix, mode, *rest = argv
    options: dict[str, Any] = {"lock_wait": dt.timedelta(seconds=60)}
    if mode == "start":
        go = Path(control) / "go"
        deadline = time.monotonic() + 60
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
    else:
        options["lock_ttl"] = dt.timedelta(seconds=float(rest[0]))
        real = mapper_module.configure_indexes  # type: ignore[attr-defined]

        def paused(*args: Any, **kwargs: Any) -> Any:
            hold_here(control, name)
            return real(*args, **kwargs)

        mapper_module.configure_indexes = paused  # type: ignore[attr-defined]
    outcome: dict[str, Any]
    with em.Mapper(url, models=[Thing, Plain], index_prefix=prefix) as mapper:
        try:
            states = mapper.configure_indexes(**options)
            outcome = {"actions": [s.action for s in states]}
        except Exception as exc:
            outcome = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
