"""What every ``esmapper`` command shares: the one-line errors (:class:`CliError` and its
exit codes), the application's mapper (``--app``/``--url``) and model lookup by name.

:mod:`esmapper.cli` builds the command tree on top of it; the command modules
(:mod:`esmapper._cli_jobs`, :mod:`esmapper.custom_fields.cli`) import it directly.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from types import ModuleType
from typing import IO, Any

import click
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError

from esmapper._cli_types import cli_spelling
from esmapper._text import article
from esmapper.errors import EsmapperError, LockError, ServerStartError
from esmapper.indexes._ensure import answer_of
from esmapper.mapper import Mapper

__all__ = [
    "Cancelled",
    "CliError",
    "LockHeld",
    "UsageLine",
    "error_for",
    "find_model",
    "load_mapper",
    "mapper_of",
]


class CliError(click.ClickException):
    """An expected failure: shown as one ``error: ...`` line on stderr, exit code 1. The
    library's keyword spellings in ``message`` become the CLI's (``--retry-failed``)."""

    def __init__(self, message: str) -> None:
        super().__init__(cli_spelling(" ".join(message.split())))

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class LockHeld(CliError):
    """A lock is held by another process (exit code 2)."""

    exit_code = 2


class Cancelled(CliError):
    """The run was cancelled (exit code 3)."""

    exit_code = 3


class UsageLine(CliError):
    """A usage error (unknown option, bad value, missing argument): one ``error:`` line
    naming the command's ``--help`` instead of click's usage block (exit code 2)."""

    exit_code = 2

    def __init__(self, error: click.UsageError) -> None:
        where = error.ctx.command_path if error.ctx is not None else "esmapper"
        message = error.format_message().rstrip(".")
        super().__init__(f"{message} (see: {where} --help)")


def _connection_message(exc: TransportError, ctx: click.Context) -> str:
    mapper = (ctx.obj or {}).get("mapper")
    where = ""
    if isinstance(mapper, Mapper):
        where = " at " + ", ".join(n.base_url for n in mapper.client.transport.node_pool.all())
    if isinstance(exc, ConnectionTimeout):
        return f"Elasticsearch{where} did not answer in time"
    errno = re.search(r"\[Errno -?\d+\] ([^)\]]+)", str(exc))
    reason = errno.group(1).strip() if errno else type(exc).__name__
    return f"cannot reach Elasticsearch{where}: {reason}"


def error_for(exc: Exception, ctx: click.Context) -> CliError | None:
    if isinstance(exc, LockError):
        return LockHeld(str(exc))
    if isinstance(exc, EsmapperError):
        return CliError(str(exc))
    if isinstance(exc, TransportConnectionError | ConnectionTimeout):
        return CliError(_connection_message(exc, ctx))
    if isinstance(exc, ApiError):
        hint = _version_hint(exc)
        return CliError(f"Elasticsearch answered {answer_of(exc)}{hint}")
    if isinstance(exc, TransportError):
        return CliError(f"Elasticsearch request failed: {exc}")
    if isinstance(exc, ServerStartError):
        return CliError(str(exc).splitlines()[0])
    if isinstance(exc, ValueError | TypeError):  # the library refusing an argument
        return CliError(str(exc))
    return None


def _version_hint(exc: ApiError) -> str:
    """Why a server refuses the client's ``compatible-with`` header, and the remedy."""
    if "media_type_header_exception" not in f"{exc.message} {exc.body}":
        return ""
    major = _client_major()
    other = "9" if major == 8 else "8"
    return (
        f" (the elasticsearch client is {major}.x and the server another major version: "
        f"for Elasticsearch {other}, pip install 'elasticsearch>={other}.18,<{int(other) + 1}')"
    )


def _client_major() -> int:
    import elasticsearch

    return int(elasticsearch.VERSION[0])


def _import(module_name: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except Exception as exc:
        raise CliError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc


def load_mapper(app: str | None, url: str | None = None) -> Mapper:
    """The Mapper named by ``module:attribute`` (see the module docstring); ``url`` builds a
    new one with the same models, prefix, migrations and work queue at that address (the
    application's own mapper is left open: it is not ours to close). Raises CliError."""
    if not app:
        raise CliError("no application: pass --app module:attribute or set ESMAPPER_APP")
    module_name, _, attr = app.partition(":")
    if not module_name or not attr:
        raise CliError(f"--app {app!r} must look like module:attribute")
    target: Any = _import(module_name)
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise CliError(f"{module_name!r} has no attribute {attr!r} (--app {app})") from None
    if not isinstance(target, Mapper) and callable(target):
        try:
            target = target()
        except Exception as exc:
            raise CliError(f"{app}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(target, Mapper):
        raise CliError(f"{app} is {article(type(target).__name__)}, not an esmapper Mapper")
    mapper: Mapper = target
    if not url:
        return mapper
    return Mapper(url, models=mapper.models, index_prefix=mapper.index_prefix,
                  migrations=mapper.migrations, work_queue=mapper.work_queue)  # fmt: skip


def mapper_of(ctx: click.Context) -> Mapper:
    root = ctx.find_root()
    obj: dict[str, Any] = root.obj
    if obj.get("mapper") is None:
        mapper = load_mapper(obj.get("app"), obj.get("url"))
        obj["mapper"] = mapper
        if obj.get("url"):  # built here: close it at the end
            root.call_on_close(mapper.close)
    return obj["mapper"]  # type: ignore[no-any-return]


def find_model(mapper: Mapper, name: str) -> type:
    """The registered model whose class name or index name (with or without the prefix)
    is ``name``, case-insensitive; raises CliError listing the known ones."""
    wanted = name.lower()
    accepted: list[str] = []
    for model in mapper.models:
        spec = mapper.spec(model)
        if wanted in (model.__name__.lower(), spec.alias.lower(), spec.options.name.lower()):
            return model
        accepted.append(f"{model.__name__} or {spec.options.name}")
    known = "; ".join(sorted(accepted)) or "none: the mapper has no models"
    prefix = f" (index names with or without the prefix {mapper.index_prefix!r})"
    raise CliError(
        f"unknown model {name!r}; accepted names (any case): {known}"
        f"{prefix if mapper.index_prefix and accepted else ''}"
    )
