"""The directory's data migrations (run by ``mapper.migrate()`` or ``esmapper migrate``).

``esmapper --app examples.webapp.models:mapper migrate`` configures the indexes, then runs
what is pending: :class:`BackfillDepartment` once, :class:`NormalizeEmails` whenever its
``version`` changes. On a fresh install (no index existed) the versioned migration is only
recorded: there is no old data to fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import esmapper as em
from esmapper.migrations import Migration, MigrationContext

if TYPE_CHECKING:
    # models.py builds the mapper with these migrations: import the models lazily.
    from examples.webapp.models import Employee

__all__ = ["DEFAULT_DEPARTMENT", "MIGRATIONS", "BackfillDepartment", "NormalizeEmails"]

#: The department of employees stored before departments existed.
DEFAULT_DEPARTMENT = "General"


class BackfillDepartment(Migration):
    """Give every employee without a department the "General" one."""

    version = 1
    kind = "versioned"

    def run(self, ctx: MigrationContext) -> None:
        from examples.webapp.models import Employee

        changed = ctx.mapper.repository(Employee).patch_all(
            "NOT _exists_:department",
            em.PartialPatch({"department": DEFAULT_DEPARTMENT}),
            soft_deletes="all",  # the recycle bin too: a restored employee needs one
        )
        ctx.log.info("department set on %d employee(s)", changed)


def _normalize_email(employee: Employee) -> bool:
    clean = employee.email.strip().lower()
    if clean == employee.email:
        return False  # unchanged: nothing is written
    employee.email = clean
    return True


class NormalizeEmails(Migration):
    """Trim and lower-case every e-mail address.

    A repeatable migration: it runs again whenever ``version`` changes.
    """

    version = 1
    kind = "repeatable"

    def run(self, ctx: MigrationContext) -> None:
        from examples.webapp.models import Employee

        changed = ctx.mapper.repository(Employee).patch_all(
            None, em.ActionPatch(_normalize_email), soft_deletes="all"
        )
        ctx.log.info("normalized %d e-mail address(es)", changed)


#: In the order they were written (versioned ones run by ``version``).
MIGRATIONS: list[type[Migration]] = [BackfillDepartment, NormalizeEmails]
