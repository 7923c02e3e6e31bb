"""A second process for the custom-field tests: ``python -m tests.integration.custom_fields.worker
COMMAND URL PREFIX ...`` (run from the repository root). Prints one JSON line of results.

- ``add URL PREFIX TENANT GO_FILE NAME:TYPE...``: prints ``ready``, waits for GO_FILE, adds the
  fields one by one, prints ``[[name, id, slot], ...]``;
- ``rename URL PREFIX CACHE_FILE TENANT OLD NEW``: renames with a mapper whose cache client
  is the shared FileCache.
"""

from __future__ import annotations

import json
import os
import sys
import time

import esmapper as em

from .models import Employee
from .shared_cache import FileCache


def main(argv: list[str]) -> int:
    command, url, prefix, *rest = argv
    if command == "add":
        tenant, go, *specs = rest
        with em.Mapper(url, models=[Employee], index_prefix=prefix) as mapper:
            fields = mapper.custom_fields(Employee)
            print("ready", flush=True)
            deadline = time.monotonic() + 60
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(0.005)
            out = []
            for spec in specs:
                name, _, index_type = spec.partition(":")
                d = fields.add_field(tenant, name, index_type)
                out.append([name, d.id, d.index_slot])
            print(json.dumps(out), flush=True)
        return 0
    if command == "rename":
        cache_file, tenant, old, new = rest
        cache = FileCache(cache_file)
        with em.Mapper(url, models=[Employee], index_prefix=prefix, cache=cache) as mapper:
            d = mapper.custom_fields(Employee).rename_field(tenant, old, new)
            print(json.dumps([d.name, d.index_slot]), flush=True)
        return 0
    print(f"unknown command {command}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
