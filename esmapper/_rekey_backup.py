"""The backup a ``rekey --apply`` needs: rewriting ids is not reversible by
redeploying, only by restoring what was there before.

:func:`recent_snapshot` finds the newest successful snapshot of a repository that covers
every physical index behind a model's alias and ended at most ``max_age`` ago: ``GET
/<alias>/_alias`` (the indexes) and ``GET /_snapshot/<repository>/_all?ignore_unavailable``
(the snapshots, an unreadable one left out; a missing repository raises
:class:`~esmapper.errors.MigrationError`). It sends nothing else and changes nothing. The
CLI (``esmapper ids rekey --apply``) refuses to run without such a snapshot
(``--snapshot-repository R``) or the operator's word (``--i-have-a-backup``).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

from elasticsearch import NotFoundError

from esmapper._context import context_of
from esmapper.errors import MigrationError
from esmapper.jobs.snapshots import SnapshotInfo

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = ["DEFAULT_MAX_AGE", "model_indexes", "recent_snapshot"]

#: How old the covering snapshot may be by default.
DEFAULT_MAX_AGE = _dt.timedelta(hours=24)


def model_indexes(mapper: Context | HasContext, model: type) -> list[str]:
    """The physical indexes behind ``model``'s read alias (sorted; ``[]``: none)."""
    ctx = context_of(mapper)
    target = ctx.spec(model).read_target
    try:
        body = ctx.client.indices.get_alias(name=target).body
    except NotFoundError:
        return []
    return sorted(body)


def recent_snapshot(
    mapper: Context | HasContext,
    model: type,
    repository: str,
    *,
    max_age: _dt.timedelta = DEFAULT_MAX_AGE,
    now: _dt.datetime | None = None,
) -> SnapshotInfo | None:
    """The newest successful snapshot in ``repository`` that ended within ``max_age`` of
    ``now`` and holds every physical index of ``model``; ``None`` when there is none (or
    the model has no index). Raises MigrationError when the repository does not exist."""
    ctx = context_of(mapper)
    wanted = set(model_indexes(ctx, model))
    if not wanted:
        return None
    try:
        # ignore_unavailable: a snapshot whose metadata cannot be read is left out, instead
        # of failing the whole listing (404 snapshot_missing_exception on a real cluster)
        listed = ctx.client.snapshot.get(
            repository=repository, snapshot="_all", ignore_unavailable=True
        ).body
    except NotFoundError as exc:
        what = (
            "does not exist"
            if exc.message == "repository_missing_exception"
            else "cannot be listed"
        )
        raise MigrationError(
            f"snapshot repository {repository!r} {what} ({exc.message})",
            error_type=str(exc.message),
        ) from None
    now = now or _dt.datetime.now(_dt.timezone.utc)
    found = [SnapshotInfo.from_body(repository, body) for body in listed.get("snapshots") or ()]
    covering = [
        snap
        for snap in found
        if snap.successful
        and snap.end is not None
        and now - snap.end <= max_age
        and wanted <= set(snap.indices)
    ]
    return max(covering, key=lambda snap: snap.end or now, default=None)
