"""A ``_bulk`` answer read from its bytes (issue 28): one typed item per action, no dicts.

The bulk writer (:mod:`esmapper.bulk`) asks for only what the outcomes read
(``filter_path``: each item's ``_id``, ``_index``, ``status``, ``result``, ``_seq_no``,
``_primary_term`` and ``error``) and, when the client can have a raw copy
(:func:`esmapper._raw_answers.raw_client`), gets the answer as its bytes.
:func:`decode_items` reads them with ``msgspec`` straight into one :class:`BulkItem` per
item (a ``msgspec.Struct`` not tracked by the garbage collector: cheaper to make than the
two dicts a parsed item is, and nothing for the collector to traverse while a batch's
answers wait to be settled). An answer the types refuse (an integer beyond 64 bits, an
item without one of the four operations, no ``items`` list) is ``None``: the writer then
parses it as the user's client would (:func:`esmapper._raw_answers.parse`) and reads the
dicts with :func:`item_of`, as it reads the answers of a client without a raw copy. Both
give the same items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from esmapper._raw_answers import Int64

__all__ = ["BulkItem", "decode_items", "item_of"]


class BulkItem(msgspec.Struct, gc=False):
    """One item of a ``_bulk`` answer (what is under its operation's key): the status
    (0 when the server did not say), the id and index the server used, the result
    (``created``, ``updated``, ``deleted``, ``noop``, ``not_found``), the new
    ``_seq_no``/``_primary_term``, and the server's ``error`` object (``None`` for a
    write applied). Fields the server left out are ``None``."""

    status: int = 0
    _id: str | None = None
    _index: str | None = None
    result: str | None = None
    _seq_no: Int64 | None = None
    _primary_term: Int64 | None = None
    error: Any = None


class _Item(msgspec.Struct, gc=False):
    """``{"<op>": {...}}``: the one operation an item is answered under."""

    create: BulkItem | None = None
    index: BulkItem | None = None
    update: BulkItem | None = None
    delete: BulkItem | None = None


class _Answer(msgspec.Struct, gc=False):
    items: list[_Item]


_ANSWER = msgspec.json.Decoder(_Answer)


def decode_items(body: bytes) -> list[BulkItem] | None:
    """The items of the ``_bulk`` answer ``body`` (its JSON bytes), in order, or ``None``
    when the types refuse it (see the module docstring: the caller parses it)."""
    try:
        items = _ANSWER.decode(body).items
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    found: list[BulkItem] = []
    append = found.append
    for item in items:
        result = item.create or item.index or item.update or item.delete
        if result is None:  # not one of the four operations: the parsed path decides
            return None
        append(result)
    return found


def item_of(result: Mapping[str, Any]) -> BulkItem:
    """The :class:`BulkItem` of one parsed item's result (the dict under its operation's
    key), its values as given."""
    return BulkItem(
        result.get("status", 0),
        result.get("_id"),
        result.get("_index"),
        result.get("result"),
        result.get("_seq_no"),
        result.get("_primary_term"),
        result.get("error"),
    )
