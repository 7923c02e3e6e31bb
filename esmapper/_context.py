"""What a step of the core and a feature may use: the :class:`Context`.

The write pipeline, the search, the by-query writes and the features take a ``Context``,
not the :class:`~esmapper.mapper.Mapper`: the mapper's
:class:`~esmapper._services.Services` (the client, the bulk writer, the document cache,
the bus, the index specs, the clock and a per-mapper home for a feature's state), the one
declaration of what they get. ``Context`` is a type-only alias of it: naming it imports
nothing of the indexes layer at run time (the layers of docs/architecture.md flow one
way). An operation the user calls with the mapper (``reindex(mapper, Model)``, a job,
``rekey``) takes a :class:`HasContext` too and runs with :func:`context_of` it: the
mapper's services.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from esmapper._services import Services

__all__ = ["Context", "HasContext", "context_of"]

#: the services the core and the features use (the mapper's ``Services``)
Context: TypeAlias = "Services"


class HasContext(Protocol):
    """What a user hands an operation (``reindex(mapper, Model)``, ``migrate``, a job,
    ``rekey``, ``health``): the :class:`~esmapper.mapper.Mapper`, whose ``services`` the
    operation runs with."""

    @property
    def services(self) -> Context: ...


def context_of(given: Context | HasContext) -> Context:
    """The context an operation runs with: a mapper's ``services``, or ``given`` itself.

    Looked up as an attribute, not with ``isinstance``: a proxy of the mapper (Flask's
    ``current_mapper``) has no ``services`` of its own that a static check would find."""
    services: Context | None = getattr(given, "services", None)
    return given if services is None else services  # type: ignore[return-value]
