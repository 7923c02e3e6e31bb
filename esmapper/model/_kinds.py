"""The two kinds of model class as marker bases: ``em.Document`` derives from
:class:`DocumentKind`, ``em.InnerDoc`` from :class:`EmbeddedKind`. The field layer
(:mod:`esmapper.model.fields`: ``em.Object(Address)``) tells them apart through these,
below the metaclass that builds them (:mod:`esmapper.model.document`)."""

from __future__ import annotations

__all__ = ["DocumentKind", "EmbeddedKind"]


class DocumentKind:
    """Base of ``em.Document``: a class stored in its own index."""

    __slots__ = ()


class EmbeddedKind:
    """Base of ``em.InnerDoc``: a class embedded in a document (``object``/``nested``)."""

    __slots__ = ()
