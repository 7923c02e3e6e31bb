"""Version upgrades of time-series models (``daily``/``monthly``): reindex each live
partition ``<alias>-vK-<period>`` into ``<alias>-vN-<period>``.

:func:`reindex_partitions` (what :func:`esmapper.indexes.reindex.reindex` runs for a
time-series model) takes the lock ``reindex:<alias>`` once for the whole run, lists the
outdated partitions (:func:`~esmapper.indexes.partition_versions.partition_versions`:
``GET /<alias>-v*/_alias``; lowest version first, then oldest period first; expired ones
skipped) and moves them **one at a time**, each through the very steps of a versioned
reindex (:func:`esmapper.indexes._reindex_run.run_phases`: copy, catch-up, write block and
final catch-up, verify, swap, gated delete, with the same throttle), so a partition has the
same guarantees: writes made while it is copied are caught up, reads never see it twice or
not at all, a failure before the swap removes the block and the new partition and leaves
the old one serving. Peak extra disk is about one partition.

Per partition, before those steps:

- a write block a killed run left on the old partition is lifted (under the lock held,
  :func:`esmapper.indexes.blocks.clear_leftover_block`); a block someone else set refuses
  the partition (:class:`~esmapper.errors.IndexConfigurationError`);
- ``PUT /<alias>-vN-<period>`` (:meth:`Run.prepare <esmapper.indexes._reindex_run.Run.prepare>`:
  a non-empty one an interrupted run left is resumed when its record matches,
  :mod:`esmapper.indexes._reindex_resume`);
  the model's index template gives a new partition the umbrella alias, so it is taken off
  at once (``POST /_aliases``, the partition is still empty): the umbrella shows the period
  once, through the old partition, until the swap;
- the swap is one ``POST /_aliases`` moving **every** alias of the old partition (dated,
  umbrella, any other) to the new one, plus the dated and umbrella aliases if the old one
  lacked them, and removing the old partition's fence alias while adding the new one's
  (:func:`~esmapper.indexes._fence.fence_name`: a write conditioned on a version read from
  the old partition is refused from then on); a lost answer is settled by reading the
  dated alias back.

Writes name the dated alias (:meth:`~esmapper.indexes.timeseries.PartitionCache.ensure`),
so every process's writes follow the swap; writes refused by the write block during the
final catch-up are retried by the bulk writer and land in the new partition.

After the last partition, ``DELETE /_index_template/<alias>-vK-template`` for the
templates of older versions (no live partition uses them any more; each sent once, 404
fine, a lost answer read back).

The first failing partition stops the run with :class:`ReindexError` (the partitions done
before it stay done; its ``result.partitions`` lists them); run it again to continue. A
process killed mid-run leaves at most one partition half done; the rerun resumes it
(a leftover write block is removed, a leftover new partition resumed, or recreated when
its record does not match, an old partition
whose swap happened is deleted by ``migrate``, see :mod:`esmapper.indexes.leftovers`).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import Elasticsearch

from esmapper._context import context_of
from esmapper._server_tasks import interruptible_sleep
from esmapper._transport import once, send_or_read_back
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._fence import is_fence
from esmapper.indexes._reindex_fence import is_marker
from esmapper.indexes._reindex_pass import Throttle
from esmapper.indexes._reindex_run import (
    LOCK_TTL,
    LOCK_WAIT,
    ReindexProgress,
    ReindexResult,
    Run,
    run_phases,
)
from esmapper.indexes.blocks import clear_leftover_block, refuse_foreign_block
from esmapper.indexes.deletion import delete_template
from esmapper.indexes.errors import ReindexError
from esmapper.indexes.partition_versions import Upgrade, partition_versions
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import Lock, LockProvider
from esmapper.reindex_scripts import compose

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = ["reindex_partitions"]

log = logging.getLogger("esmapper.indexes")


def reindex_partitions(
    mapper: Context | HasContext,
    model: type,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = LOCK_TTL,
    delete_old: bool = True,
    keep_failed_index: bool = False,
    catch_up_margin: _dt.timedelta = _dt.timedelta(minutes=1),
    throttle: Throttle = Throttle(),
) -> ReindexResult:
    """Reindex the outdated partitions of the time-series ``model`` into its current version;
    see the module docstring for every request sent. The options are those of
    :func:`esmapper.indexes.reindex.reindex` (``delete_old`` and the deletion gate apply
    per partition; ``progress`` gets percents over the whole run; ``throttle`` paces every
    pass).

    Returns the totals (``status="up_to_date"`` when no live partition is outdated, e.g.
    another process finished meanwhile). Raises :class:`~esmapper.errors.LockError` when
    the lock stays held for ``lock_wait``, :class:`~esmapper.errors.IndexConfigurationError`
    for a model that is not time-series or a live partition newer than the model's version,
    and :class:`ReindexError` for the first partition that fails.
    """
    mapper = context_of(mapper)
    spec = mapper.spec(model)
    if not spec.is_time_series:
        raise IndexConfigurationError(
            f"{spec.info.name} is not a time-series model (kind={spec.kind!r})", index=spec.alias
        )
    client = mapper.client
    began = time.monotonic()
    # its wait for the lock ends like a task wait once an interruptible() event is set
    locks = LockProvider(
        client, index_prefix=mapper.index_prefix, clock=mapper.clock, sleep=interruptible_sleep
    )
    with locks.acquire(f"reindex:{spec.alias}", lock_ttl, wait=lock_wait) as lock:
        versions = partition_versions(client, spec, mapper.clock())
        if versions.newer:
            names = ", ".join(p.index for p in versions.newer)
            raise IndexConfigurationError(
                f"{spec.info.name}: partitions newer than the model's version {spec.version} "
                f"serve reads ({names}); refusing to downgrade",
                index=spec.alias,
            )
        upgrades = versions.outdated
        lowest = upgrades[0].partition.version if upgrades else spec.version
        done: list[ReindexResult] = []
        for number, upgrade in enumerate(upgrades):
            scaled = _scaled(progress, number, len(upgrades))
            try:
                result = _upgrade(
                    mapper,
                    spec,
                    lock,
                    upgrade,
                    scaled,
                    delete_old=delete_old,
                    keep_failed_index=keep_failed_index,
                    margin=catch_up_margin,
                    throttle=throttle,
                )
            except ReindexError as exc:
                total = _total(spec, lowest, [*done, exc.result], "failed", began)
                raise ReindexError(
                    f"{spec.info.name}: {exc} ({len(done)} of {len(upgrades)} partitions were "
                    "reindexed before it; run the reindex again to continue)",
                    result=total,
                ) from exc
            done.append(result)
        _drop_old_templates(client, spec)
        status = "reindexed" if upgrades else "up_to_date"
        return _total(spec, lowest, done, status, began)


def _upgrade(
    mapper: Context,
    spec: IndexSpec,
    lock: Lock,
    upgrade: Upgrade,
    progress: Callable[[ReindexProgress], None] | None,
    *,
    delete_old: bool,
    keep_failed_index: bool,
    margin: _dt.timedelta,
    throttle: Throttle,
) -> ReindexResult:
    client = mapper.client
    old, new = upgrade.partition.index, upgrade.target
    log.info("reindexing partition %s -> %s", old, new)
    cleared = clear_leftover_block(lock.provider, old, held=lock, lock_ttl=lock.ttl)
    refuse_foreign_block(client, old, spec.info.name, mapper.clock())
    dated = spec.dated_alias(upgrade.partition.start)
    # every alias but fences moves; the old partition's fence is removed and the new one's
    # added by the same request (Run.swap_actions)
    aliases = [a for a in upgrade.aliases if not is_fence(a)]
    moved = sorted({*aliases, dated, spec.alias})
    actions: list[dict[str, Any]] = [
        {"remove": {"index": old, "alias": alias, "must_exist": True}} for alias in aliases
    ]
    actions += [{"add": {"index": new, "alias": alias}} for alias in moved]
    script = compose(spec.options.reindex_scripts, upgrade.partition.version, spec.version)
    run = Run(mapper, spec, lock, progress, old, new, script, throttle, tuple(actions), dated)
    run.prepare()  # a leftover of an interrupted run resumed when its record matches
    _take_aliases_off(client, new)
    if cleared is not None:
        run.update(cleared_block_seconds=cleared.seconds(mapper.clock()))
    return run_phases(
        run, delete_old=delete_old, keep_failed_index=keep_failed_index, margin=margin
    )


def _take_aliases_off(client: Elasticsearch, index: str) -> None:
    """Remove every alias of the still empty ``index`` (the template's umbrella alias; not a
    reindex run's marker, :mod:`esmapper.indexes._reindex_fence`):
    ``GET /<index>/_alias``, then one ``POST /_aliases`` (a lost answer is read back)."""

    def aliases() -> list[str]:  # a run's marker is the claim's business
        body = client.indices.get_alias(index=index).body
        found = (body.get(index) or {}).get("aliases") or {}
        return sorted(a for a in found if not is_marker(index, a))

    found = aliases()
    if not found:
        return
    actions = [{"remove": {"index": index, "alias": alias}} for alias in found]
    send_or_read_back(
        lambda: once(client).indices.update_aliases(actions=actions),
        lambda: not aliases(),
        what=f"POST /_aliases (remove the aliases of {index})",
    )


def _drop_old_templates(client: Elasticsearch, spec: IndexSpec) -> None:
    """Delete the index templates of versions below the model's (``GET`` then ``DELETE
    /_index_template/<alias>-vK-template``, each once; 404 fine; a lost answer read back)."""
    body = client.options(ignore_status=404).indices.get_index_template(name=f"{spec.alias}-v*")
    found = body.body.get("index_templates", []) if isinstance(body.body, dict) else []
    named = re.compile(rf"{re.escape(spec.alias)}-v(\d+)-template")
    for item in found:
        name = str(item.get("name")) if isinstance(item, dict) else ""
        match = named.fullmatch(name)
        if match is None or int(match.group(1)) >= spec.version:
            continue
        delete_template(client, name)
        log.info("deleted index template %s: no live partition of that version is left", name)


def _scaled(
    progress: Callable[[ReindexProgress], None] | None, number: int, count: int
) -> Callable[[ReindexProgress], None] | None:
    """``progress`` with each partition's percents mapped into its share of the run."""
    if progress is None:
        return None
    report = progress

    def scaled(p: ReindexProgress) -> None:
        percent = (number * 100 + p.percent) // count
        message = f"partition {number + 1}/{count}: {p.message}" if p.message else p.message
        report(attrs.evolve(p, percent=percent, message=message))

    return scaled


def _total(
    spec: IndexSpec,
    lowest: int,
    results: Sequence[ReindexResult],
    status: str,
    began: float,
) -> ReindexResult:
    return ReindexResult(
        model=spec.info.name,
        alias=spec.alias,
        old_index=f"{spec.alias}-v{lowest}-*" if results else None,
        new_index=spec.index_pattern,
        status=status,
        swapped=bool(results) and all(r.swapped for r in results),
        copied=sum(r.copied for r in results),
        caught_up=sum(r.caught_up for r in results),
        removed=sum(r.removed for r in results),
        old_count=sum(r.old_count for r in results),
        new_count=sum(r.new_count for r in results),
        old_deleted=bool(results) and all(r.old_deleted for r in results),
        failures=tuple(f for r in results for f in r.failures),
        seconds=time.monotonic() - began,
        blocked_seconds=max((r.blocked_seconds for r in results), default=0.0),
        cleared_block_seconds=max(
            (r.cleared_block_seconds for r in results if r.cleared_block_seconds is not None),
            default=None,
        ),
        partitions=tuple(results),
        resumed_from=min(
            (r.resumed_from for r in results if r.resumed_from is not None), default=None
        ),
        error_index=next((r.error_index for r in results if r.error_index), None),
        error_count=sum(r.error_count for r in results),
    )
