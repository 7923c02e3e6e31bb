"""A concrete index under a name esmapper needs for an alias: telling it, and the remedy.

Elasticsearch creates a missing index on the first write to its name (unless the cluster's
``action.auto_create_index`` forbids it), with mappings guessed from that one document. A
write through a model's alias sent before the alias existed (by another program, a script,
an esmapper older than this check) therefore leaves a concrete index named like the alias,
and the alias can never be created. esmapper's own writes cannot do that (writes to an
alias carry ``require_alias``, see :func:`esmapper._outcomes.send`); this module detects
what others did and raises :class:`~esmapper.errors.AliasNameTakenError` naming the
situation and the way out. esmapper never deletes such an index itself: its documents may
be the only copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esmapper.errors import AliasNameTakenError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["alias_taken_error", "concrete_index"]


def concrete_index(client: Elasticsearch, name: str) -> bool:
    """Whether ``name`` is a concrete index (not an alias, not missing).

    Sends ``HEAD /<name>`` and, when it exists, ``HEAD /_alias/<name>``.
    """
    return bool(client.indices.exists(index=name)) and not bool(
        client.indices.exists_alias(name=name)
    )


def alias_taken_error(model: str, alias: str, wanted: str) -> AliasNameTakenError:
    """The error for the concrete index ``alias`` standing where ``model`` needs an alias of
    ``wanted`` (e.g. ``"index 'items-v1'"`` or ``"the partitions 'logs-v1-*'"``)."""
    return AliasNameTakenError(
        f"{model}: {alias!r} is a concrete index, but esmapper needs that name for an alias "
        f"of {wanted}. Such an index is usually made by Elasticsearch itself (automatic "
        f"index creation) when something wrote to {alias!r} before the alias existed, with "
        "mappings guessed from that document; esmapper does not write to it or delete it. "
        f"Remedy: if its documents are disposable, DELETE /{alias} and run "
        "configure_indexes(). Otherwise copy them out first (POST /_reindex from "
        f"{alias!r} into a spare index, e.g. {alias + '-rescue'!r}), DELETE /{alias}, run "
        "configure_indexes(), then write them back through the model's repository (or POST "
        "/_reindex into the alias of a versioned model). To keep that index as the model's "
        "only one instead, declare Index.kind = 'plain'.",
        index=alias,
        error_type="alias_name_taken",
    )
