"""``esmapper fields list|add|rename|remove MODEL --tenant T``: a tenant's custom fields.

``list`` prints the active fields (``--all``: soft-deleted ones too) with their type and
slot; ``add NAME TYPE`` adds one in the lowest free slot (an active one of that name and
type is reported as existing); ``rename OLD NEW`` keeps the slot (no reindex);
``remove NAME`` soft-deletes (the name is free, the slot kept), ``--hard`` frees both.
A change that goes through the tenant's stored documents (a new name's stored values
indexed, a hard delete's slot cleared) prints its progress to stderr, batch by batch.
Errors are one ``error: ...`` line and exit code 1 (see :mod:`esmapper.cli`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from esmapper._cli_app import CliError, find_model, mapper_of
from esmapper._text import table

if TYPE_CHECKING:
    from esmapper.custom_fields.repository import CustomFieldRepository

__all__ = ["fields"]


def _fields(ctx: click.Context, model_name: str) -> CustomFieldRepository:
    mapper = mapper_of(ctx)
    model = find_model(mapper, model_name)
    if not model.__esmapper__.custom_fields:  # type: ignore[attr-defined]
        raise CliError(
            f"{model.__name__} has no custom fields "
            "(em.HasCustomFields or em.HasVirtualCustomFields)"
        )
    return mapper.custom_fields(model)


def _show_progress(repo: CustomFieldRepository) -> CustomFieldRepository:
    """Print (to stderr) how far a pass over the stored documents got, batch by batch."""

    def show(report: Any) -> None:
        if report.done:
            click.echo(
                f"{report.reason}: {report.done:,} of {report.total:,} documents read, "
                f"{report.updated:,} updated",
                err=True,
            )

    repo.progress = show
    return repo


def _tenant_option(function: Any) -> Any:
    return click.option("--tenant", "-t", required=True, metavar="T", help="The tenant key.")(
        function
    )


@click.group()
def fields() -> None:
    """A tenant's custom fields (definitions and slots)."""


@fields.command("list")
@click.argument("model_name", metavar="MODEL")
@_tenant_option
@click.option("--all", "everything", is_flag=True, help="Soft-deleted fields too.")
@click.pass_context
def list_fields(ctx: click.Context, *, model_name: str, tenant: str, everything: bool) -> None:
    """List TENANT's custom fields of MODEL."""
    repo = _fields(ctx, model_name)
    found = repo.find_by_tenant(tenant, soft_deletes="all" if everything else "active")
    rows = [["NAME", "TYPE", "SLOT", "MODE", "ORDER", "STATE", "DESCRIPTION"]]
    for d in found.documents:
        state = "deleted" if d.is_deleted else "active"
        rows.append([d.name, d.index_type, f"idx.{d.slot_name}", d.process_mode,
                     str(d.display_order), state, d.description or ""])  # fmt: skip
    if len(rows) == 1:
        click.echo(f"{repo.entity_type} tenant {tenant!r} has no custom fields")
        return
    for line in table(rows):
        click.echo(line)


@fields.command("add")
@click.argument("model_name", metavar="MODEL")
@click.argument("name")
@click.argument("index_type", metavar="TYPE")
@_tenant_option
@click.option("--description", default=None, help="A description.")
@click.option("--display-order", type=int, default=0, show_default=True, help="UI ordering.")
@click.pass_context
def add_field(
    ctx: click.Context,
    *,
    model_name: str,
    name: str,
    index_type: str,
    tenant: str,
    description: str | None,
    display_order: int,
) -> None:
    """Add the custom field NAME of type TYPE (int, string, ...) for TENANT."""
    repo = _show_progress(_fields(ctx, model_name))
    before = repo.get_field_mapping(tenant).get(name.lower())
    added = repo.add_field(tenant, name, index_type, description, display_order)
    verb = "exists" if before is not None and before.id == added.id else "added"
    click.echo(f"{verb}: {added.name} ({added.index_type}) in idx.{added.slot_name}")


@fields.command("rename")
@click.argument("model_name", metavar="MODEL")
@click.argument("name")
@click.argument("new_name")
@_tenant_option
@click.pass_context
def rename_field(
    ctx: click.Context, *, model_name: str, name: str, new_name: str, tenant: str
) -> None:
    """Rename TENANT's custom field NAME to NEW_NAME (same slot: no reindex)."""
    renamed = _show_progress(_fields(ctx, model_name)).rename_field(tenant, name, new_name)
    click.echo(f"renamed: {name} -> {renamed.name} (idx.{renamed.slot_name})")


@fields.command("remove")
@click.argument("model_name", metavar="MODEL")
@click.argument("name")
@_tenant_option
@click.option("--hard", is_flag=True, help="Delete for good: the slot is free too.")
@click.pass_context
def remove_field(
    ctx: click.Context, *, model_name: str, name: str, tenant: str, hard: bool
) -> None:
    """Soft-delete TENANT's custom field NAME (its name is free, its slot kept)."""
    repo = _show_progress(_fields(ctx, model_name))
    definition = repo.field(tenant, name)
    repo.remove_field(tenant, name, hard=hard)
    freed = "name and slot freed" if hard else "name freed, slot kept"
    click.echo(f"removed: {definition.name} (idx.{definition.slot_name}; {freed})")
