"""Small application modules for the CLI tests, written to a temporary directory."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import esmapper

TEMPLATE = '''
import esmapper as em
from esmapper.migrations import Migration


class Employee(em.Document):
    class Index:
        name = "employees"
        version = {version!r}
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    name: str = ""


class Backfill(Migration):
    """Adds one employee."""

    version = 1

    def run(self, ctx):
        ctx.log.info("backfilling")
        repo = ctx.mapper.repository(Employee)
        repo.add(Employee(name="from-migration"), consistency="immediate")


class Broken(Migration):
    """Always fails."""

    version = 2

    def run(self, ctx):
        raise ValueError("broken on purpose")


MIGRATIONS = [Backfill, Broken] if {broken!r} else [Backfill]
mapper = em.Mapper({url!r}, models=[Employee], index_prefix={prefix!r}, migrations=MIGRATIONS)


def make_mapper():
    return mapper


def explode():
    raise RuntimeError("no configuration")


not_a_mapper = 42
'''


def write_app(
    directory: Path, url: str, prefix: str, *, broken: bool = False, version: int = 1
) -> str:
    """Write ``app_<hex>.py`` into ``directory``; returns the module name."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    source = TEMPLATE.format(url=url, prefix=prefix, broken=broken, version=version)
    (directory / f"{name}.py").write_text(source, encoding="utf-8")
    return name


def subprocess_env(app_dir: Path, **more: str) -> dict[str, str]:
    """The environment for an ``esmapper`` subprocess: ``app_dir`` (the app module) and the
    esmapper this test run imports come first on ``PYTHONPATH``, so the subprocess runs
    the code under test, not whichever copy the environment has installed."""
    here = str(Path(esmapper.__file__).resolve().parents[1])
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(app_dir), here, *rest]), **more}
