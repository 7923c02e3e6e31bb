"""The migration building blocks: :class:`Migration`, :class:`MigrationContext`,
:class:`MigrationResult`, discovery (:func:`migrations_from_module`) and validation.

Nothing here talks to Elasticsearch; the runner (:mod:`esmapper.migrations.runner`) does.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import logging
import pkgutil
import threading
from collections.abc import Iterable
from datetime import timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs

from esmapper.errors import MigrationCancelled, MigrationError
from esmapper.migrations.state import INSTALL_ID

if TYPE_CHECKING:
    from esmapper.mapper import Mapper

__all__ = [
    "KINDS",
    "LOCK_NAME",
    "Migration",
    "MigrationCancelled",
    "MigrationContext",
    "MigrationKind",
    "MigrationResult",
    "RenewableLock",
    "load_migrations",
    "migrations_from_module",
]

MigrationKind = Literal["versioned", "resumable", "repeatable"]
KINDS: tuple[str, ...] = ("versioned", "resumable", "repeatable")
LOCK_NAME = "migrations"  # the lock a run holds (esmapper.locks); plans read it too


class MigrationResult(enum.Enum):
    """The outcome of :func:`~esmapper.migrations.migrate` (Foundatio's ``MigrationResult``)."""

    SUCCESS = "success"
    FAILED = "failed"
    UNABLE_TO_ACQUIRE_LOCK = "unable_to_acquire_lock"
    CANCELLED = "cancelled"


class RenewableLock(Protocol):
    """What a migration sees of the ``migrations`` lock (:class:`esmapper.locks.Lock`)."""

    def renew(self, ttl: timedelta | None = None) -> None: ...


@attrs.define
class MigrationContext:
    """Handed to :meth:`Migration.run`.

    ``mapper`` is the application's mapper, ``log`` a logger named after the migration
    class, ``lock`` the held ``migrations`` lock (kept alive by a heartbeat thread while
    the process runs; ``ctx.lock.renew()`` in a long loop is optional and raises
    :class:`~esmapper.errors.LockError` when the lock was lost, which stops the run early),
    ``cancel`` an event set when the run should stop (check ``ctx.cancelled`` between
    batches) and ``attempt`` the 1-based attempt number within this run. Tests may build
    one directly.
    """

    mapper: Mapper
    log: logging.Logger
    lock: RenewableLock
    cancel: threading.Event = attrs.field(factory=threading.Event)
    attempt: int = 1

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`MigrationCancelled` when the run was asked to stop."""
        if self.cancel.is_set():
            raise MigrationCancelled("the migration run was cancelled")


class Migration:
    """Base class of a migration; subclass it and implement :meth:`run`.

    Class (or instance) attributes:

    - ``version``: an ``int`` ordering ``versioned`` and ``resumable`` migrations (required,
      unique among them); optional for ``repeatable`` ones, where changing it makes the
      migration run again.
    - ``kind``: ``"versioned"`` (runs once; a failure is permanent until retried explicitly),
      ``"resumable"`` (runs once; retried within a run and resumed by the next run) or
      ``"repeatable"`` (runs after the versioned ones; again when ``version`` changes, when its
      last run failed, or on every run with ``always = True``).
    - ``description``: shown by ``plan``/``esmapper status`` (default: the docstring's first line).
    - ``id``: the state document id (default: ``str(version)`` for versioned and resumable
      migrations, ``module.QualifiedName`` for repeatable ones).
    - ``max_attempts`` / ``retry_delay``: attempts per run for resumable and repeatable
      migrations (default 3) and the first pause between them in seconds (doubled each time).
    """

    version: int | None = None
    kind: str = "versioned"
    description: str = ""
    id: str | None = None
    always: bool = False
    max_attempts: int = 3
    retry_delay: float = 1.0

    def run(self, ctx: MigrationContext) -> None:
        """Do the work; raise to fail. Should be idempotent (it may run again)."""
        raise NotImplementedError(f"{type(self).__qualname__}.run() is not implemented")

    @property
    def migration_id(self) -> str:
        """The id of this migration's state document."""
        if self.id:
            return self.id
        if self.kind != "repeatable" and self.version is not None:
            return str(self.version)
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}"

    @property
    def title(self) -> str:
        """``description``, else the first line of the class docstring, else the class name."""
        if self.description:
            return self.description
        doc = inspect.cleandoc(type(self).__doc__ or "")
        return doc.splitlines()[0] if doc else type(self).__name__

    @property
    def is_versioned(self) -> bool:
        """True for ``versioned`` and ``resumable`` migrations (the ordered sequence)."""
        return self.kind in ("versioned", "resumable")

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} {self.kind} version={self.version!r}>"


def _instantiate(item: Any) -> Migration:
    if isinstance(item, Migration):
        return item
    if isinstance(item, type) and issubclass(item, Migration):
        try:
            return item()
        except TypeError as exc:
            raise MigrationError(
                f"cannot create migration {item.__qualname__} without arguments: {exc}; "
                "pass an instance instead"
            ) from exc
    raise MigrationError(f"{item!r} is not an esmapper Migration subclass or instance")


def _check(migration: Migration) -> None:
    name = type(migration).__qualname__
    if migration.kind not in KINDS:
        raise MigrationError(
            f"migration {name} has kind {migration.kind!r}; expected one of {', '.join(KINDS)}"
        )
    version = migration.version
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise MigrationError(f"migration {name} has version {version!r}; expected an int")
    if migration.is_versioned and version is None:
        raise MigrationError(f"{migration.kind} migration {name} needs an int version")
    if migration.migration_id == INSTALL_ID:
        raise MigrationError(f"migration {name} has the reserved id {INSTALL_ID!r}")


def load_migrations(items: Iterable[Any]) -> list[Migration]:
    """Instantiate and validate the mapper's migrations (classes or instances).

    Raises :class:`~esmapper.errors.MigrationError` for an unknown kind, a versioned or
    resumable migration without an int version, two of them sharing a version, two
    migrations sharing an id, or the reserved id ``esmapper:install``. Sends nothing to
    Elasticsearch.
    """
    migrations = [_instantiate(item) for item in items]
    by_version: dict[int, Migration] = {}
    by_id: dict[str, Migration] = {}
    for migration in migrations:
        _check(migration)
        if migration.is_versioned and migration.version is not None:
            other = by_version.setdefault(migration.version, migration)
            if other is not migration:
                raise MigrationError(
                    f"duplicate migration version {migration.version}: "
                    f"{type(other).__qualname__} and {type(migration).__qualname__}"
                )
        other = by_id.setdefault(migration.migration_id, migration)
        if other is not migration:
            raise MigrationError(
                f"duplicate migration id {migration.migration_id!r}: "
                f"{type(other).__qualname__} and {type(migration).__qualname__}"
            )
    return migrations


def _module_classes(module: ModuleType) -> list[type[Migration]]:
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Migration)
        and obj is not Migration
        and obj.__module__ == module.__name__
        and not obj.__name__.startswith("_")
        and not inspect.isabstract(obj)
    ]
    return found


def migrations_from_module(module: ModuleType | str) -> list[type[Migration]]:
    """The Migration subclasses defined in ``module`` (a module or its dotted name).

    A package is searched recursively (every submodule is imported). Classes whose name
    starts with ``_`` are skipped (use them as shared bases). The result is sorted by
    version (versionless ones last), then by name.
    """
    if isinstance(module, str):
        module = importlib.import_module(module)
    classes = _module_classes(module)
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{module.__name__}."):
            classes.extend(_module_classes(importlib.import_module(info.name)))

    def order(cls: type[Migration]) -> tuple[int, int, str]:
        version = cls.version
        if isinstance(version, int):
            return (0, version, cls.__qualname__)
        return (1, 0, cls.__qualname__)

    return sorted(dict.fromkeys(classes), key=order)
