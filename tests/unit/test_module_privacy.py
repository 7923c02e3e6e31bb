"""The module privacy rule (docs/architecture.md, "Public and private modules")."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import esmapper

PACKAGE = Path(esmapper.__file__).resolve().parent

#: Modules the documentation names: part of the API.
PUBLIC = {
    "esmapper.bulk",
    "esmapper.cli",
    "esmapper.contrib.django.apps",  # Django finds these by their names
    "esmapper.contrib.django.management.commands.esmapper",
    "esmapper.contrib.django.middleware",
    "esmapper.contrib.django.testing",
    "esmapper.contrib.fastapi",
    "esmapper.contrib.flask",
    "esmapper.contrib.mypy",
    "esmapper.errors",
    "esmapper.ids",
    "esmapper.model.fields",
    "esmapper.query.aggregates",
    "esmapper.repository",
    "esmapper.session",
    "esmapper.signals",
    "esmapper.testing.cluster",
    "esmapper.testing.plugin",
}

#: Old locations of renamed implementation modules: re-export shims.
SHIMS = {
    "esmapper.indexes.ensure": "esmapper.indexes._ensure",
    "esmapper.indexes.lookup": "esmapper.indexes._lookup",
    "esmapper.indexes.occupied": "esmapper.indexes._occupied",
    "esmapper.indexes.placement": "esmapper.indexes._placement",
    "esmapper.model.tracking": "esmapper.model._tracking",
}

#: Implementation modules named before the rule: kept (imports must not break), not API.
#: Do not add to this list: name a new implementation module ``_x.py``.
LEGACY = {
    "esmapper.bus", "esmapper.cache", "esmapper.health", "esmapper.locks", "esmapper.mapper",
    "esmapper.options", "esmapper.patches", "esmapper.reindex_scripts", "esmapper.rekey",
    "esmapper.results",
    "esmapper.custom_fields.catalog", "esmapper.custom_fields.cli",
    "esmapper.custom_fields.definition", "esmapper.custom_fields.indexing",
    "esmapper.custom_fields.repository", "esmapper.custom_fields.search",
    "esmapper.custom_fields.slots", "esmapper.custom_fields.types",
    "esmapper.distributed.hybrid", "esmapper.distributed.link", "esmapper.distributed.redis_bus",
    "esmapper.distributed.redis_cache",
    "esmapper.indexes.blocks", "esmapper.indexes.configure", "esmapper.indexes.deletion",
    "esmapper.indexes.drift", "esmapper.indexes.errors", "esmapper.indexes.leftovers",
    "esmapper.indexes.maintenance", "esmapper.indexes.partition_reindex",
    "esmapper.indexes.partition_versions", "esmapper.indexes.pipelines",
    "esmapper.indexes.reads", "esmapper.indexes.reindex", "esmapper.indexes.spec",
    "esmapper.indexes.timeseries",
    "esmapper.jobs.base", "esmapper.jobs.durations", "esmapper.jobs.indexes",
    "esmapper.jobs.runner", "esmapper.jobs.snapshots",
    "esmapper.migrations.base", "esmapper.migrations.install", "esmapper.migrations.planning",
    "esmapper.migrations.runner", "esmapper.migrations.state",
    "esmapper.model.catalog", "esmapper.model.codec", "esmapper.model.dates",
    "esmapper.model.document", "esmapper.model.info", "esmapper.model.lenient",
    "esmapper.model.normalize", "esmapper.model.partial", "esmapper.model.state",
    "esmapper.query.aggregations", "esmapper.query.escape", "esmapper.query.fields",
    "esmapper.query.filter", "esmapper.query.highlight", "esmapper.query.sort",
    "esmapper.testing.base", "esmapper.testing.cleanup", "esmapper.testing.docker",
    "esmapper.testing.faults", "esmapper.testing.redis_server", "esmapper.testing.selection",
    "esmapper.testing.server",
}  # fmt: skip


def _modules() -> list[str]:
    names = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            continue
        names.append(".".join(parts))
    return sorted(names)


def test_every_module_is_private_public_a_shim_or_legacy() -> None:
    unnamed = [
        m
        for m in _modules()
        if not any(part.startswith("_") for part in m.split("."))
        and m not in PUBLIC | set(SHIMS) | LEGACY
    ]
    assert unnamed == [], "name implementation modules _x.py (see docs/architecture.md)"


def test_the_lists_name_existing_modules() -> None:
    assert (PUBLIC | set(SHIMS) | LEGACY | set(SHIMS.values())) - set(_modules()) == set()


@pytest.mark.parametrize(("shim", "target"), sorted(SHIMS.items()))
def test_a_shim_re_exports_the_private_module(shim: str, target: str) -> None:
    old, new = importlib.import_module(shim), importlib.import_module(target)
    assert old.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name)
