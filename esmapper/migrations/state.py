"""The migration state index ``<prefix>esmapper-migrations``: one document per migration.

The document id is the migration's id (``str(version)`` for versioned and resumable
migrations, ``module.QualifiedName`` for repeatable ones, or the class's ``id``); its
``_source`` holds ``version``, ``kind``, ``status`` (``started`` | ``completed`` |
``failed``), ``attempts`` (over every run), ``started_utc``, ``completed_utc``, ``error``,
``description`` and ``skipped`` (marked completed by a fresh install without running).

One more document, ``esmapper:install`` (:data:`INSTALL_ID`, never a migration id), records
once whether the deployment was a fresh install (see :mod:`esmapper.migrations.install`);
:meth:`StateStore.load` leaves it out.

Every write is sent with ``refresh=true`` (the index is small and correctness-critical), so a
search right after sees it, and once, without the transport's retries
(:mod:`esmapper._transport`): a lost answer (a dropped connection, a timeout, an unreadable
response) is settled by reading back (the index exists, the record holds what was sent, the
record is gone) and the write is sent once more only when it was not applied. Creating the
index when it already exists (a lost answer, a concurrent run) does not fail.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from typing import Any

import attrs
from elasticsearch import BadRequestError, ConflictError, Elasticsearch, NotFoundError

from esmapper._shards import search_all
from esmapper._transport import once, send_or_read_back
from esmapper.errors import MigrationError
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["INSTALL_ID", "STATE_INDEX", "MigrationRecord", "StateStore"]

STATE_INDEX = "esmapper-migrations"
INSTALL_ID = "esmapper:install"

STARTED = "started"
COMPLETED = "completed"
FAILED = "failed"

_MAPPING: dict[str, Any] = {
    "dynamic": False,
    "properties": {
        "version": {"type": "long"},
        "kind": {"type": "keyword"},
        "status": {"type": "keyword"},
        "attempts": {"type": "integer"},
        "started_utc": {"type": "date"},
        "completed_utc": {"type": "date"},
        "error": {"type": "text"},
        "description": {"type": "text"},
        "skipped": {"type": "boolean"},
        "fresh": {"type": "boolean"},
    },
}


def _date(value: Any) -> _dt.datetime | None:
    return None if value is None else parse_datetime(value)


@attrs.define
class MigrationRecord:
    """The stored state of one migration."""

    id: str
    kind: str
    version: int | None = None
    status: str = STARTED
    attempts: int = 0
    started_utc: _dt.datetime | None = None
    completed_utc: _dt.datetime | None = None
    error: str | None = None
    description: str = ""
    skipped: bool = False

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED

    def to_source(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "kind": self.kind,
            "status": self.status,
            "attempts": self.attempts,
            "started_utc": format_datetime(self.started_utc) if self.started_utc else None,
            "completed_utc": format_datetime(self.completed_utc) if self.completed_utc else None,
            "error": self.error,
            "description": self.description,
            "skipped": self.skipped,
        }

    @classmethod
    def from_hit(cls, hit: dict[str, Any]) -> MigrationRecord:
        source = hit.get("_source") or {}
        return cls(
            id=str(hit["_id"]),
            kind=str(source.get("kind", "versioned")),
            version=source.get("version"),
            status=str(source.get("status", STARTED)),
            attempts=int(source.get("attempts") or 0),
            started_utc=_date(source.get("started_utc")),
            completed_utc=_date(source.get("completed_utc")),
            error=source.get("error"),
            description=str(source.get("description") or ""),
            skipped=bool(source.get("skipped", False)),
        )


class StateStore:
    """Reads and writes :class:`MigrationRecord` documents in ``<prefix>esmapper-migrations``."""

    def __init__(self, client: Elasticsearch, *, index_prefix: str = "") -> None:
        self.client = client
        self.index = f"{index_prefix}{STATE_INDEX}"

    def exists(self) -> bool:
        """``HEAD /<index>``: whether the state index exists."""
        return bool(self.client.indices.exists(index=self.index))

    def ensure(self) -> None:
        """``PUT /<index>`` with the state mapping unless it exists (a race is tolerated;
        a lost answer is settled with ``HEAD /<index>``)."""
        if self.exists():
            return

        def create() -> None:
            try:
                once(self.client).indices.create(index=self.index, mappings=_MAPPING)
            except BadRequestError as exc:
                if exc.error != "resource_already_exists_exception":
                    raise

        send_or_read_back(create, self.exists, what=f"PUT /{self.index}")

    def load(self) -> dict[str, MigrationRecord]:
        """Every migration record by id (``POST /<index>/_search``; a missing index gives
        ``{}``); the install record (:data:`INSTALL_ID`) is left out."""
        try:  # every shard: a record missing here would run its migration again
            response = search_all(
                self.client,
                what="the listing of migration records",
                index=self.index,
                query={"match_all": {}},
                size=10_000,
                track_total_hits=True,
            )
        except NotFoundError:
            return {}
        hits = response["hits"]["hits"]
        return {
            str(hit["_id"]): MigrationRecord.from_hit(hit)
            for hit in hits
            if str(hit["_id"]) != INSTALL_ID
        }

    def source(self, doc_id: str) -> dict[str, Any] | None:
        """The stored ``_source`` of a document (``GET``), ``None`` when there is none (or
        no index)."""
        try:
            return dict(self.client.get(index=self.index, id=doc_id)["_source"])
        except NotFoundError:
            return None

    def create(self, doc_id: str, source: dict[str, Any]) -> dict[str, Any]:
        """``PUT /<index>/_doc/<id>?op_type=create&refresh=true`` unless the document
        exists; returns what is stored (``source``, or the document that was there first).

        Create-only, so it can be settled after a lost answer: a 409 or a lost answer reads
        the document back (there: it is returned, whoever wrote it; missing after a lost
        answer: the create is sent once more). Raises the client's errors."""

        def create() -> None:
            # a 409: there first (a concurrent run, or our own create whose answer was lost)
            with contextlib.suppress(ConflictError):
                once(self.client).index(
                    index=self.index, id=doc_id, document=source, op_type="create", refresh=True
                )

        send_or_read_back(
            create, lambda: self.source(doc_id) is not None, what=f"PUT /{self.index}/_doc/{doc_id}"
        )
        stored = self.source(doc_id)
        if stored is None:  # pragma: no cover - deleted between the write and the read
            raise MigrationError(
                f"{self.index}/{doc_id} is gone right after its create", index=self.index
            )
        return stored

    def save(self, record: MigrationRecord) -> None:
        """``PUT /<index>/_doc/<id>?refresh=true`` with the record (see :meth:`put`)."""
        self.put(record.id, record.to_source())

    def put(self, doc_id: str, source: dict[str, Any]) -> None:
        """``PUT /<index>/_doc/<id>?refresh=true`` with ``source``; a lost answer is read
        back (the stored source is ``source``: saved; else sent once more)."""
        send_or_read_back(
            lambda: once(self.client).index(
                index=self.index, id=doc_id, document=source, refresh=True
            ),
            lambda: self.source(doc_id) == source,
            what=f"PUT /{self.index}/_doc/{doc_id}",
        )

    def delete(self, migration_id: str) -> bool:
        """``DELETE /<index>/_doc/<id>?refresh=true``; False when there was no record. A
        lost answer is read back (gone: deleted; else sent once more)."""
        try:
            send_or_read_back(
                lambda: once(self.client).delete(index=self.index, id=migration_id, refresh=True),
                lambda: self.source(migration_id) is None,
                what=f"DELETE /{self.index}/_doc/{migration_id}",
            )
        except NotFoundError:
            return False
        return True
