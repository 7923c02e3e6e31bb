"""Migrations discovered by ``migrations_from_module`` in the unit tests."""

from __future__ import annotations

from esmapper.migrations import Migration, MigrationContext


class _Base(Migration):
    """Shared base: skipped by discovery (leading underscore)."""

    def run(self, ctx: MigrationContext) -> None:
        return None


class Second(_Base):
    version = 2


class First(_Base):
    """Adds the first thing."""

    version = 1


class Cleanup(_Base):
    kind = "repeatable"
