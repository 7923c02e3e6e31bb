"""The layers of the esmapper package, lowest first: the one table of them.

A module of a layer may import (and call into) the modules of its own layer and of the
layers below; a call or an import from a lower layer into a higher one "climbs back up".
``tools/flow_trace.py`` counts such climbs along a followed parameter; an import-layer test
can check the package's imports against the same table (:func:`layer_of`).

Each layer lists module-name prefixes; a module belongs to the layer of its longest
matching prefix (so ``esmapper.indexes._timeseries_feature`` is a feature, while the rest
of ``esmapper.indexes`` is the indexes layer). A module no prefix matches is an error:
a new module is placed here when it is written.
"""

from __future__ import annotations

__all__ = ["LAYERS", "layer_name", "layer_of"]

#: ``(layer name, module-name prefixes)``, lowest layer first.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "esmapper._context",
            "esmapper._features",
            "esmapper._gcpause",
            "esmapper._json",
            "esmapper._limits",
            "esmapper._liveness",
            "esmapper._pending",
            "esmapper._pit",
            "esmapper._server_version",
            "esmapper._shards",
            "esmapper._cluster_shards",
            "esmapper._text",
            "esmapper._transport",
            "esmapper._version",
            "esmapper.bus",
            "esmapper.errors",
            "esmapper.ids",
            "esmapper.options",
            "esmapper.patches",
            "esmapper.results",
            "esmapper.signals",
        ),
    ),
    ("model", ("esmapper.model", "esmapper.reindex_scripts")),
    (
        # what the writes and the indexes lean on: the cache, locks, server tasks
        "services",
        (
            "esmapper._server_tasks",
            "esmapper.cache",
            "esmapper.distributed",
            "esmapper.locks",
        ),
    ),
    ("indexes", ("esmapper.indexes",)),
    ("query", ("esmapper._keywords", "esmapper.query")),
    (
        "pipeline/search",
        (
            "esmapper._bodies",
            "esmapper._bulk_encode",
            "esmapper._bulk_threads",
            "esmapper._fenced",
            "esmapper._outcomes",
            "esmapper._patch_actions",
            "esmapper._projection",
            "esmapper._scan",
            "esmapper._search",
            "esmapper._settle",
            "esmapper._writes",
            "esmapper.bulk",
        ),
    ),
    (
        "repository/session",
        (
            "esmapper._by_query",
            "esmapper._patching",
            "esmapper._reading",
            "esmapper._searching",
            "esmapper._session_reads",
            "esmapper.repository",
            "esmapper.session",
        ),
    ),
    (
        "features",
        (
            "esmapper._builtin_features",
            "esmapper._soft_deletes",
            "esmapper.custom_fields",
            "esmapper.indexes._timeseries_feature",
        ),
    ),
    (
        # operations over a whole mapper: each is called by the mapper's facade
        "operations",
        (
            "esmapper._rekey_audit",
            "esmapper.health",
            "esmapper.jobs",
            "esmapper.migrations",
            "esmapper.rekey",
        ),
    ),
    ("mapper", ("esmapper.mapper",)),
    (
        # what uses the mapper: the package's namespace, the command line, integrations
        "applications",
        (
            "esmapper",
            "esmapper._cli_app",
            "esmapper._cli_jobs",
            "esmapper._cli_reindex",
            "esmapper._cli_server",
            "esmapper._cli_types",
            "esmapper.cli",
            "esmapper.contrib",
            "esmapper.custom_fields.cli",
            "esmapper.testing",
        ),
    ),
)

_INDEX: dict[str, int] = {
    prefix: rank for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
}


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (0: the lowest). Raises ``KeyError`` for a module of
    no layer (not esmapper's, or not placed in :data:`LAYERS` yet)."""
    name = module
    while True:
        if name in _INDEX:
            return _INDEX[name]
        if "." not in name:
            raise KeyError(f"{module!r} is in no layer of tools/layers.py")
        name = name.rpartition(".")[0]


def layer_name(module: str) -> str:
    """The name of ``module``'s layer (``"indexes"``)."""
    return LAYERS[layer_of(module)][0]
