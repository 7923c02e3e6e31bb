"""Routing by a model field, as a feature of the core (:mod:`esmapper._features`): the
demonstration that a feature plugs in at the points without an edit of the core.

``class Index: routing_field = "<attr>"`` stores each document on the shard its
``<attr>`` picks (Elasticsearch's custom routing: the documents of one customer, say,
on one shard, the groundwork of parent/child joins). Elasticsearch then needs the
routing on every by-id request of the document (a GET without it may look in the wrong
shard; with ``"_routing": {"required": true}`` in the mapping it is refused:
``routing_missing_exception``), so esmapper must be able to tell the routing from the
id alone: the field must be one of the model's ``Index.id_fields``, and the routing is
that field's term of the composed id (:func:`esmapper.ids.decompose_id`), the one rule
reads and writes share:

- ``attach``: the option is checked (a field of the model, one of ``id_fields``:
  :class:`~esmapper.errors.IndexConfigurationError` naming the option otherwise);
- ``mapping``: ``"_routing": {"required": true}`` (a request without routing is refused,
  never sent to a guessed shard);
- ``check``: a write of a document whose id does not decompose into the ``id_fields``'
  terms (an id given by hand) is refused before anything is sent
  (:class:`~esmapper.errors.DocumentValidationError`);
- ``shape``: ``routing`` on every bulk action (``create``/``index``/``update``/``delete``),
  from its id;
- ``read_params``: ``{"routing": <term>}`` for a by-id read (GET, ``_mget`` entry, HEAD:
  :mod:`esmapper.indexes.reads`).

Searches and by-query writes need nothing: they ask every shard, and
``_update_by_query`` keeps a document's routing, as a version bump's ``_reindex`` does (its
by-id requests, the stale-copy check and the deletes, and ``rekey``'s requests of a new id
get ``read_params`` from :mod:`esmapper.indexes._lookup` like every by-id read). Changing
the option on a model with stored documents is not supported: nothing recomputes the
routing of a stored document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, register
from esmapper.errors import DocumentValidationError, IndexConfigurationError
from esmapper.ids import decompose_id

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._features import WriteCall
    from esmapper.bulk import BulkAction
    from esmapper.model.info import ModelInfo

__all__ = ["Routing"]

_OPTION = "routing_field"


@register
class Routing(Feature):
    """Models with ``class Index: routing_field = "<attr>"``."""

    name = "routing"
    index_options = (_OPTION,)
    __slots__ = ("field", "position", "terms")

    def __init__(self, info: ModelInfo, field: str, position: int, terms: int) -> None:
        super().__init__(info)
        #: the routing attribute, its position among the ``id_fields`` and their number
        self.field, self.position, self.terms = field, position, terms

    @classmethod
    def attach(cls, info: ModelInfo) -> Routing | None:
        index = info.index
        if index is None or _OPTION not in index.extras:
            return None
        field = index.extras[_OPTION]
        where = f"{info.name}.Index.{_OPTION}"
        if not isinstance(field, str) or field not in info.field_by_name:
            raise IndexConfigurationError(
                f"{where} must name a field of {info.name}, not {field!r}"
            )
        if field not in index.id_fields:
            raise IndexConfigurationError(
                f"{where} {field!r} must be one of {info.name}.Index.id_fields "
                f"({', '.join(index.id_fields) or 'none'}): a read by id routes with that "
                "term of the id"
            )
        return cls(info, field, index.id_fields.index(field), len(index.id_fields))

    def routing(self, id: str | None) -> str | None:
        """The routing of the document ``id``: its term of the ``id_fields``; ``None`` when
        ``id`` is not composed of them."""
        if id is None:
            return None
        try:
            terms = decompose_id(id)
        except ValueError:
            return None
        return terms[self.position] if len(terms) == self.terms else None

    # -- model (point: mapping) -----------------------------------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        body["_routing"] = {"required": True}

    # -- writes (points: check, shape) ----------------------------------------------------

    def check(self, call: WriteCall, pendings: Sequence[Any]) -> None:
        """Refuse the writes whose id gives no routing (an id not composed of the
        ``id_fields``), before anything is sent."""
        for pending in pendings:
            id = pending.id if pending.doc is None else pending.doc.id
            if id is not None and self.routing(id) is None:
                raise DocumentValidationError(
                    f"{self.info.name} id {id!r} is not composed of its Index.id_fields "
                    f"({', '.join(self.info.index.id_fields)}: Index.{_OPTION} "  # type: ignore[union-attr]
                    f"{self.field!r} routes with one of its terms)",
                    field=self.field,
                )

    def shape(self, ctx: Context, actions: Sequence[BulkAction]) -> None:
        for action in actions:
            routing = self.routing(action.id)
            if routing is not None:
                action.routing = routing

    # -- reads (point: read_params) -------------------------------------------------------

    def read_params(self, id: str) -> dict[str, Any]:
        routing = self.routing(id)
        return {} if routing is None else {"routing": routing}
