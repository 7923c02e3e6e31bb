"""``mapper.health()`` and ``esmapper status --health``: is everything as the code expects?

:func:`check_health` only reads. It sends ``GET /_cluster/health``, then per registered
model ``GET /_alias/<alias>`` and ``HEAD /<index>`` (time-series: the template and
``GET /<alias>-v*/_alias``), ``GET /<alias>-v*`` (leftovers, write blocks), the mapping and
the total-fields limit of the index serving it, the ``reindex:<alias>`` lock and the
ingest pipeline (``GET /_ingest/pipeline/<name>``); then the migration plan
(:func:`esmapper.migrations.plan`). What it finds becomes :class:`HealthIssue` s of two
severities:

``attention`` (``HealthReport.ok`` is false, ``esmapper status --health`` exits 1): the
cluster is red (the indexes whose primaries are not active are named); a model's index or
alias is missing; a reindex is pending (the alias points at an older version); an index
serving a model is write-blocked and no reindex runs (left behind by a killed one, or
someone else's block); the model declares fields the index does not map, or with another
type; an index uses 90% or more of its total-fields limit; a named ingest pipeline does
not exist; the migrations cannot be planned.

``warning``: the cluster is yellow with replica copies its nodes could hold but do not
(named, with Elasticsearch's reason for one of them); a reindex or a migrate runs now; old
indexes left behind; reindex error indexes holding documents a reindex could not copy (``GET
/<alias>-v*-error,<alias>-v*.error`` and a count of each); fields mapped on the server the
model does not know; 75% of the field limit; pending migrations; a defined pipeline not
created yet (the first write creates it).

``info`` (``HealthReport.notes``, printed, counts for nothing): the cluster is yellow only
because indexes ask for more replicas than its data nodes can hold (a one-node
development cluster and the default ``number_of_replicas: 1``): the indexes are named,
with the remedy (:mod:`esmapper._cluster_shards`; when the cluster is not green this
reads ``GET /_cluster/health?level=indices``, and for a replica that could be placed,
``GET /_cluster/health/<index>?level=shards`` and ``POST /_cluster/allocation/explain``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch, NotFoundError

from esmapper._cluster_shards import IndexShards, explain, read_shards
from esmapper._context import context_of
from esmapper._text import table
from esmapper.errors import EsmapperError
from esmapper.indexes._reindex_errors import error_counts
from esmapper.indexes.blocks import read_block, serving_blocked
from esmapper.indexes.drift import MappingDrift, count_fields, field_limit, mapping_drift
from esmapper.indexes.leftovers import find_leftovers
from esmapper.indexes.maintenance import list_partitions
from esmapper.indexes.spec import index_owners
from esmapper.locks import LockProvider
from esmapper.migrations.planning import in_progress, plan, view_index

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext
    from esmapper.indexes.spec import IndexSpec

__all__ = ["HealthIssue", "HealthReport", "ModelHealth", "check_health"]

Severity = Literal["attention", "warning", "info"]
#: How many indexes a cluster issue names.
_LISTED: Final = 5
#: Shares of the total-fields limit that make a warning / need attention.
FIELDS_WARNING: Final = 0.75
FIELDS_ATTENTION: Final = 0.90


@attrs.frozen
class HealthIssue:
    """Something found: ``severity`` (``attention``, ``warning``, or ``info``: explained,
    nothing to do), ``code`` (``cluster``, ``missing``, ``no_alias``, ``reindex_pending``,
    ``reindex_running``, ``write_block``, ``leftover``, ``reindex_errors``,
    ``mapping_drift``, ``fields``, ``pipeline``, ``migrations``), the ``model`` (class name,
    or the names of the models sharing the index joined by ``","``,
    ``None`` for the cluster and migrations) and a ``message``."""

    severity: Severity
    code: str
    message: str
    model: str | None = None

    def __str__(self) -> str:
        where = f"{self.model}: " if self.model else ""
        return f"{self.severity}: {where}{self.message}"


@attrs.frozen
class ModelHealth:
    """One model's index (``model``: its class name; the names of the models sharing
    it joined by ``","``, a parent and its children: ``"Company,Worker"``): its ``alias``
    and the ``indexes`` behind it (time-series: the number
    of partitions in ``partitions``), the ``expected`` index (or partition pattern),
    ``state`` (``ok``, ``missing``, ``no alias``, ``outdated``), the checked index's
    ``fields`` and ``field_limit``, its ``drift``, the ``pipeline`` writes run and its
    ``reindex_errors``: the documents recorded in each of its reindex error indexes
    (:mod:`esmapper.indexes._reindex_errors`), by index."""

    model: str
    alias: str
    kind: str
    expected: str
    indexes: tuple[str, ...] = ()
    partitions: int = 0
    state: str = "ok"
    fields: int | None = None
    field_limit: int | None = None
    drift: MappingDrift | None = None
    pipeline: str | None = None
    reindex_errors: dict[str, int] = attrs.field(factory=dict)
    issues: tuple[HealthIssue, ...] = ()


@attrs.frozen
class HealthReport:
    """The cluster's ``status`` (``green``, ``yellow``, ``red``), its ``cluster_name``
    and ``nodes``, one :class:`ModelHealth` per model, and every issue found."""

    status: str
    cluster_name: str
    nodes: int
    models: tuple[ModelHealth, ...] = ()
    issues: tuple[HealthIssue, ...] = ()

    @property
    def attention(self) -> list[HealthIssue]:
        return [i for i in self.issues if i.severity == "attention"]

    @property
    def warnings(self) -> list[HealthIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def notes(self) -> list[HealthIssue]:
        """What is explained and needs nothing done (``info``)."""
        return [i for i in self.issues if i.severity == "info"]

    @property
    def ok(self) -> bool:
        """Nothing needs attention (warnings allowed)."""
        return not self.attention

    def lines(self) -> Iterator[str]:
        """The report for humans (``esmapper status --health``)."""
        yield f"cluster {self.cluster_name}: {self.status} ({self.nodes} nodes)"
        rows = [["MODEL", "ALIAS", "INDEX", "FIELDS", "PIPELINE", "STATE"]]
        for model in self.models:
            index = ", ".join(model.indexes) or "-"
            if model.kind in ("daily", "monthly"):
                index = f"{model.expected} ({model.partitions} partitions)"
            fields = "-" if model.fields is None else f"{model.fields}/{model.field_limit}"
            rows.append(
                [model.model, model.alias, index, fields, model.pipeline or "-", model.state]
            )
        if len(rows) > 1:
            yield from table(rows)
        order = {"attention": 0, "warning": 1, "info": 2}
        for issue in sorted(self.issues, key=lambda i: order[i.severity]):
            yield str(issue)
        yield (
            f"health: {len(self.attention)} need attention, {len(self.warnings)} warnings"
            if self.attention or self.warnings
            else "health: ok"
        )


def check_health(mapper: Context | HasContext) -> HealthReport:
    """Read the state of the cluster and of every registered model (see the module
    docstring). Raises the client's errors when the server cannot be reached."""
    mapper = context_of(mapper)  # a Mapper: its services
    client = mapper.client
    cluster = client.cluster.health().body
    status = str(cluster.get("status", "unknown"))
    aliases = [mapper.spec(model).alias for model in mapper.models]
    issues = _cluster_issues(
        client, cluster, lambda index: any(_serves(alias, index) for alias in aliases)
    )
    locks = LockProvider(client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    models = []
    for owners, spec in index_owners(mapper.spec(model) for model in mapper.models):
        health = _model_health(client, spec, locks, owners)
        models.append(health)
        issues += health.issues
    issues += _migration_issues(mapper)
    return HealthReport(
        status=status,
        cluster_name=str(cluster.get("cluster_name", "")),
        nodes=int(cluster.get("number_of_nodes") or 0),
        models=tuple(models),
        issues=tuple(issues),
    )


def _names(indexes: tuple[IndexShards, ...], what: Callable[[IndexShards], str]) -> str:
    shown = [f"{i.index} ({what(i)})" for i in indexes[:_LISTED]]
    more = len(indexes) - _LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _waiting(index: IndexShards) -> str:
    waiting = f"{index.unassigned} unassigned, {index.initializing} initializing"
    return f"{index.replicas} replicas, {waiting}"


def _copies(count: int, kind: str) -> str:
    return f"{count} {kind} shard{'s' if count != 1 else ''}"


def _serves(alias: str, index: str) -> bool:
    """Whether ``index`` is one of ``alias``'s model's (the plain index, ``<alias>-v<N>``,
    a partition)."""
    return index == alias or index.startswith(f"{alias}-")


def _cluster_issues(
    client: Any, cluster: dict[str, Any], ours: Callable[[str], bool]
) -> list[HealthIssue]:
    """The cluster's status, and why it is not green (:mod:`esmapper._cluster_shards`); the
    models' indexes (``ours``) are named, and explained, first."""
    status = str(cluster.get("status", "unknown"))
    if status == "green":
        return []
    try:
        shards = read_shards(client, cluster, ours)
    except (ApiError, TransportError) as exc:
        severity: Severity = "attention" if status == "red" else "warning"
        why = f"(which shards: {type(exc).__name__})"
        return [HealthIssue(severity, "cluster", f"the cluster status is {status} {why}")]
    issues: list[HealthIssue] = []
    nodes = shards.data_nodes
    if shards.primaries:
        listed = _names(shards.primaries, lambda i: f"{i.inactive_primaries} of {i.shards}")
        text = f"the cluster status is {status}: primary shards not active in {listed}"
        issues.append(HealthIssue("attention", "cluster", text))
    elif status == "red":
        issues.append(HealthIssue("attention", "cluster", "the cluster status is red"))
    if shards.placeable:
        count = sum(i.unassigned + i.initializing for i in shards.placeable)
        listed = _names(shards.placeable, _waiting)
        text = (
            f"the cluster status is {status}: {_copies(count, 'replica')} not active that "
            f"its {nodes} data nodes could hold, in {listed}"
        )
        reason = explain(client, shards.placeable[0].index)
        issues.append(HealthIssue("warning", "cluster", f"{text}; {reason}" if reason else text))
    if shards.unplaceable:
        count = sum(i.unassigned for i in shards.unplaceable)
        listed = _names(shards.unplaceable, lambda i: f"{i.replicas} replicas")
        text = (
            f"the cluster status is {status}: {_copies(count, 'replica')} cannot be "
            f"allocated, a copy never shares a node with another copy of its shard and the "
            f"cluster has {nodes} data node{'s' if nodes != 1 else ''}: {listed}. Nothing "
            "is lost; set index.number_of_replicas (Index.settings) to at most "
            f"{max(nodes - 1, 0)} to make it green"
        )
        issues.append(HealthIssue("info", "cluster", text))
    if not issues:  # yellow with nothing unassigned: copies initializing or relocating
        issues.append(HealthIssue("warning", "cluster", f"the cluster status is {status}"))
    return issues


def _migration_issues(ctx: Context) -> list[HealthIssue]:
    issues: list[HealthIssue] = []
    running = in_progress(ctx)
    if running is not None:
        issues.append(HealthIssue("warning", "migrations", f"migrate runs now ({running})"))
    try:
        pending = [s for s in plan(ctx) if s.is_migration]
    except EsmapperError as exc:
        return [*issues, HealthIssue("attention", "migrations", f"cannot plan: {exc}")]
    if pending and running is None:
        issues.append(
            HealthIssue("warning", "migrations", f"{len(pending)} pending migrations (migrate)")
        )
    return issues


def _model_health(
    client: Elasticsearch, spec: IndexSpec, locks: LockProvider, name: str
) -> ModelHealth:
    """The health of ``spec``'s index, reported under ``name`` (the models sharing it,
    :func:`~esmapper.indexes.spec.index_owners`)."""
    issues: list[HealthIssue] = []

    def issue(severity: Severity, code: str, message: str) -> None:
        issues.append(HealthIssue(severity, code, message, name))

    view = view_index(client, spec)
    state = "ok"
    checked: str | None = None  # the index whose mapping is compared
    indexes: tuple[str, ...] = ()
    expected = spec.physical_name()
    if spec.is_time_series:
        expected = spec.index_pattern
        live = sorted(
            (p for p, aliases in list_partitions(client, spec).items() if spec.alias in aliases),
            key=lambda p: (p.version, p.start),
        )
        current = [p for p in live if p.version == spec.version]
        checked = current[-1].index if current else None
        if not view.exists:
            state = "missing"
            issue("attention", "missing", f"no index template {spec.template_name}: run migrate")
    elif view.current is None and not view.exists:
        state = "missing"
        issue("attention", "missing", f"no index {expected}: run migrate or configure_indexes")
    elif view.current is None:
        state = "no alias"
        issue("attention", "no_alias", f"{expected} exists but the alias {spec.alias} does not")
    else:
        indexes, checked = (view.current,), view.current
    if view.outdated:
        state = "outdated"
        target = f"version {view.lowest_version}" if spec.is_time_series else view.current
        issue(
            "attention",
            "reindex_pending",
            f"reindex pending: {spec.alias} serves {target}, the model is at version "
            f"{spec.version} (run migrate or reindex)",
        )
        checked = None if not spec.is_time_series else checked
    issues += _lock_issues(locks, spec, name)
    for leftover in find_leftovers(client, spec) if not view.empty else []:
        issue(
            "warning",
            "leftover",
            f"{leftover.index} ({leftover.docs} documents): {leftover.reason}",
        )
    errors = error_counts(client, spec) if spec.kind != "plain" else {}
    for index, count in errors.items():
        issue(
            "warning",
            "reindex_errors",
            f"{index} ({count} documents): documents a reindex could not copy, with the "
            "reason; inspect them, then delete the index",
        )
    fields = limit = None
    drift = None
    if checked is not None:
        drift, fields, limit = _mapping_checks(client, spec, checked, issue)
    pipeline = _pipeline_check(client, spec, issue)
    if any(i.severity == "attention" for i in issues) and state == "ok":
        state = "attention"
    return ModelHealth(
        model=name,
        alias=spec.alias,
        kind=spec.kind,
        expected=expected,
        indexes=indexes,
        reindex_errors=errors,
        partitions=view.partitions,
        state=state,
        fields=fields,
        field_limit=limit,
        drift=drift,
        pipeline=pipeline,
        issues=tuple(issues),
    )


def _lock_issues(locks: LockProvider, spec: IndexSpec, name: str) -> list[HealthIssue]:
    """A reindex running now, and write blocks on the indexes serving the model."""
    issues = []
    now = locks.clock()
    holder = locks.live_holder(f"reindex:{spec.alias}")
    if holder is not None:
        issues.append(
            HealthIssue("warning", "reindex_running", f"a reindex runs now ({holder})", name)
        )
    for index in serving_blocked(locks.client, spec) if spec.kind != "plain" else []:
        block = read_block(locks.client, index)
        if block is None:
            continue
        if block.running(locks):
            issues.append(
                HealthIssue("warning", "write_block", f"{block.describe(now)}, running now", name)
            )
            continue
        lift = "migrate or reindex lifts it" if block.marked else "remove it by hand"
        issues.append(
            HealthIssue(
                "attention", "write_block", f"{block.describe(now)}; writes fail: {lift}", name
            )
        )
    return issues


def _mapping_checks(
    client: Elasticsearch, spec: IndexSpec, index: str, issue: Any
) -> tuple[MappingDrift | None, int | None, int | None]:
    """Drift and field count of ``index`` against ``spec``'s model."""
    try:
        body = client.indices.get_mapping(index=index).body
    except NotFoundError:
        return None, None, None
    entry: dict[str, Any] = next(iter(body.values()), {})
    stored: dict[str, Any] = entry.get("mappings", {})
    drift = mapping_drift(spec.info.mapping, stored)
    if not drift.clean:
        remedy = (
            "bump Index.version and reindex"
            if drift.changed
            else "run migrate or configure_indexes"
        )
        issue("attention", "mapping_drift", f"{index}: {drift.describe()} ({remedy})")
    elif drift.extra:
        issue("warning", "mapping_drift", f"{index}: {drift.describe()}")
    fields, limit = count_fields(stored), field_limit(client, index)
    share = fields / limit if limit else 0.0
    text = f"{index} maps {fields} fields of its limit {limit} (index.mapping.total_fields.limit)"
    if share >= FIELDS_ATTENTION:
        issue("attention", "fields", text)
    elif share >= FIELDS_WARNING:
        issue("warning", "fields", text)
    return drift, fields, limit


def _pipeline_check(client: Any, spec: IndexSpec, issue: Any) -> str | None:
    pipeline = spec.pipeline
    if pipeline is None:
        return None
    try:
        client.ingest.get_pipeline(id=pipeline.name)
    except NotFoundError:
        if pipeline.definition is None:
            issue("attention", "pipeline", f"ingest pipeline {pipeline.name} does not exist")
        else:
            issue(
                "warning",
                "pipeline",
                f"ingest pipeline {pipeline.name} not created yet (configure_indexes creates it)",
            )
    return pipeline.name
