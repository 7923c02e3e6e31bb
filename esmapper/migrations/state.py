"""The migration state index ``<prefix>esmapper-migrations``: one document per migration.

The document id is the migration's id (``str(version)`` for versioned and resumable
migrations, ``module.QualifiedName`` for repeatable ones, or the class's ``id``); its
``_source`` holds ``version``, ``kind``, ``status`` (``started`` | ``completed`` |
``failed``), ``attempts`` (over every run), ``started_utc``, ``completed_utc``, ``error``,
``description`` and ``skipped`` (marked completed by a fresh install without running).

Every write is sent with ``refresh=true`` (the index is small and correctness-critical), so a
search right after sees it, and once, without the transport's retries
(:mod:`esmapper._transport`): a lost answer (a dropped connection, a timeout, an unreadable
response) is settled by reading back (the index exists, the record holds what was sent, the
record is gone) and the write is sent once more only when it was not applied. Creating the
index when it already exists (a lost answer, a concurrent run) does not fail.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import attrs
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["STATE_INDEX", "MigrationRecord", "StateStore"]

STATE_INDEX = "esmapper-migrations"

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
        """Every record by id (``POST /<index>/_search``; a missing index gives ``{}``)."""
        try:
            response = self.client.search(
                index=self.index, query={"match_all": {}}, size=10_000, track_total_hits=True
            )
        except NotFoundError:
            return {}
        hits = response["hits"]["hits"]
        return {str(hit["_id"]): MigrationRecord.from_hit(hit) for hit in hits}

    def _source(self, migration_id: str) -> dict[str, Any] | None:
        """The stored ``_source`` of a record (``GET``), ``None`` when there is none."""
        try:
            return dict(self.client.get(index=self.index, id=migration_id)["_source"])
        except NotFoundError:
            return None

    def save(self, record: MigrationRecord) -> None:
        """``PUT /<index>/_doc/<id>?refresh=true`` with the record; a lost answer is read
        back (the stored source is the record: saved; else sent once more)."""
        source = record.to_source()
        send_or_read_back(
            lambda: once(self.client).index(
                index=self.index, id=record.id, document=source, refresh=True
            ),
            lambda: self._source(record.id) == source,
            what=f"PUT /{self.index}/_doc/{record.id}",
        )

    def delete(self, migration_id: str) -> bool:
        """``DELETE /<index>/_doc/<id>?refresh=true``; False when there was no record. A
        lost answer is read back (gone: deleted; else sent once more)."""
        try:
            send_or_read_back(
                lambda: once(self.client).delete(index=self.index, id=migration_id, refresh=True),
                lambda: self._source(migration_id) is None,
                what=f"DELETE /{self.index}/_doc/{migration_id}",
            )
        except NotFoundError:
            return False
        return True
