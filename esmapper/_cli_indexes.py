"""The ``esmapper indexes`` commands that configure and inspect the models' indexes:
``configure [MODEL...] [--force] [--lock-wait S] [--lock-ttl S]
[--begin-reindexing-outdated]``,
``list``, ``mapping MODEL [--declared]`` and ``stats [MODEL...]`` (``delete`` and
``cleanup``: :mod:`esmapper.cli`, :mod:`esmapper._cli_jobs`).

What each sends: ``configure`` what :meth:`~esmapper.Mapper.configure_indexes` sends (its
marker and lock for every model, none for named ones); ``list`` one ``GET
/<alias>-v*/_alias`` per model (a plain model: ``/<alias>/_alias``); ``mapping`` ``GET
/<alias>/_mapping`` (nothing with ``--declared``); ``stats`` ``GET
/<alias>-v*/_stats/docs,store`` per model (a plain model: ``/<alias>/_stats/docs,store``).
Read-only but ``configure``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any

import click
from elasticsearch import Elasticsearch, NotFoundError

from esmapper._cli_app import CliError, find_model, mapper_of
from esmapper._cli_types import Seconds
from esmapper._text import table
from esmapper.indexes._configured import LOCK_WAIT, MARKER_TTL, SKIPPED
from esmapper.indexes.spec import IndexSpec, index_owners
from esmapper.locks import DEFAULT_TTL
from esmapper.mapper import Mapper

__all__ = ["configure", "list_indexes", "mapping", "stats"]


def _names(spec: IndexSpec) -> str:
    """The request target that names every physical index of ``spec``: its one index
    (plain), else the wildcard of its versions and partitions (which matches nothing
    rather than failing when there is none)."""
    return spec.alias if spec.kind == "plain" else f"{spec.alias}-v*"


def _own(spec: IndexSpec, names: Any) -> list[str]:
    """The names among ``names`` that are ``spec``'s indexes (``<alias>``, ``<alias>-vN``,
    ``<alias>-vN-<period>``), sorted: a wildcard may match another model's."""
    pattern = re.compile(rf"{re.escape(spec.alias)}(-v\d+(-.+)?)?")
    return sorted(name for name in names if pattern.fullmatch(name))


def _read(client: Elasticsearch, call: Any, spec: IndexSpec) -> dict[str, Any]:
    """``call(index=..., ...)`` on ``spec``'s indexes; none there: ``{}``."""
    try:
        body: dict[str, Any] = dict(call(index=_names(spec)).body)
    except NotFoundError:
        return {}
    return body


def _models(mapper: Mapper, names: tuple[str, ...]) -> list[type]:
    return list(dict.fromkeys(find_model(mapper, n) for n in names)) or mapper.models


@click.command("configure")
@click.argument("model_names", metavar="[MODEL]...", nargs=-1)
@click.option("--force", is_flag=True,
              help="Configure even when marked done in the last 5 minutes.")  # fmt: skip
@click.option(
    "--lock-wait",
    type=Seconds(),
    default=LOCK_WAIT.total_seconds(),
    metavar="SECONDS",
    show_default=True,
    help="How long to wait for another process configuring now.",
)
@click.option(
    "--lock-ttl",
    type=Seconds(1),
    default=DEFAULT_TTL.total_seconds(),
    metavar="SECONDS",
    show_default=True,
    help="Lease of the configure lock (renewed every third of it while configuring).",
)
@click.option("--begin-reindexing-outdated", "enqueue", is_flag=True,
              help="Enqueue a reindex work item for each outdated model on the mapper's "
              "work queue (run by esmapper jobs reindex-worker).")  # fmt: skip
@click.pass_context
def configure(
    ctx: click.Context,
    model_names: tuple[str, ...],
    *,
    force: bool,
    lock_wait: float,
    lock_ttl: float,
    enqueue: bool,
) -> None:
    """Create missing indexes and aliases, add new fields to mappings (every model, once
    for processes starting together; each MODEL: that model, no lock, no marker)."""
    mapper = mapper_of(ctx)
    if model_names:
        if force:
            raise click.UsageError("--force applies to every model; named models always run")
        states = mapper.configure_indexes(
            _models(mapper, model_names), begin_reindexing_outdated=enqueue
        )
    else:
        wait = _dt.timedelta(seconds=lock_wait)
        states = mapper.configure_indexes(
            force=force,
            lock_wait=wait,
            lock_ttl=_dt.timedelta(seconds=lock_ttl),
            begin_reindexing_outdated=enqueue,
        )
    if states and all(s.action == SKIPPED for s in states):
        minutes = int(MARKER_TTL.total_seconds() // 60)
        click.echo(
            f"already configured (marked done less than {minutes} minutes ago); "
            "--force to configure again"
        )
        return
    rows = [["MODEL", "ALIAS", "INDEX", "ACTION"]]
    rows += [[s.model, s.alias, s.expected_index, s.action] for s in states]
    for line in table(rows):
        click.echo(line)
    outdated = [s.model for s in states if s.action == "outdated"]
    if outdated and enqueue:
        click.echo(f"outdated, reindex queued for a worker: {', '.join(outdated)}")
    elif outdated:
        click.echo(f"outdated (run esmapper migrate or reindex): {', '.join(outdated)}")


@click.command("list")
@click.pass_context
def list_indexes(ctx: click.Context) -> None:
    """Every model's physical indexes, and which one its alias points at."""
    mapper = mapper_of(ctx)
    rows = [["MODEL", "KIND", "VERSION", "INDEX", "ALIAS"]]
    for owners, spec in index_owners(mapper.spec(model) for model in mapper.models):
        found = _read(mapper.client, mapper.client.indices.get_alias, spec)
        names = _own(spec, found)
        version = "-" if spec.kind == "plain" else str(spec.version)
        if not names:
            rows.append([owners, spec.kind, version, "-", "(missing)"])
        for name in names:
            aliases = found[name].get("aliases") or {}
            holds = spec.alias if spec.alias in aliases else ""
            rows.append([owners, spec.kind, version, name, holds])
    for line in table(rows):
        click.echo(line)


@click.command("mapping")
@click.argument("model_name", metavar="MODEL")
@click.option("--declared", is_flag=True,
              help="The mapping the model declares (sends nothing).")  # fmt: skip
@click.pass_context
def mapping(ctx: click.Context, model_name: str, declared: bool) -> None:
    """The mapping of MODEL's indexes as Elasticsearch has it, as JSON by index name."""
    mapper = mapper_of(ctx)
    spec = mapper.spec(find_model(mapper, model_name))
    if declared:
        click.echo(json.dumps(spec.info.mapping, indent=2, sort_keys=True))
        return
    try:
        found = mapper.client.indices.get_mapping(index=spec.alias).body
    except NotFoundError:
        raise CliError(
            f"{spec.info.name} has no index yet ({spec.alias}): run esmapper indexes configure"
        ) from None
    shown = {name: entry.get("mappings", {}) for name, entry in sorted(found.items())}
    click.echo(json.dumps(shown, indent=2, sort_keys=True))


def _size(octets: int) -> str:
    value = float(octets)
    for unit in ("b", "kb", "mb", "gb"):
        if value < 1024 or unit == "gb":
            return f"{value:.0f}{unit}" if unit == "b" else f"{value:.1f}{unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


@click.command("stats")
@click.argument("model_names", metavar="[MODEL]...", nargs=-1)
@click.pass_context
def stats(ctx: click.Context, model_names: tuple[str, ...]) -> None:
    """Documents, deleted documents and size of every model's (or each MODEL's) indexes
    (primaries)."""
    mapper = mapper_of(ctx)
    rows = [["MODEL", "INDEX", "DOCS", "DELETED", "SIZE"]]
    for owners, spec in index_owners(mapper.spec(m) for m in _models(mapper, model_names)):
        found = _read(mapper.client, _stats_of(mapper.client), spec)
        indices = found.get("indices") or {}
        names = _own(spec, indices)
        if not names:
            rows.append([owners, "(missing)", "-", "-", "-"])
        for name in names:
            primaries = indices[name].get("primaries") or {}
            docs, store = primaries.get("docs") or {}, primaries.get("store") or {}
            rows.append([
                owners, name, str(docs.get("count", 0)), str(docs.get("deleted", 0)),
                _size(int(store.get("size_in_bytes", 0))),
            ])  # fmt: skip
    for line in table(rows):
        click.echo(line)


def _stats_of(client: Elasticsearch) -> Any:
    def call(**params: Any) -> Any:
        return client.indices.stats(metric="docs,store", **params)

    return call
