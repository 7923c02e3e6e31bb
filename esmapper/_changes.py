"""Whether loaded documents differ from what the store last confirmed (a session's flush
and ``dirty``): :func:`changed`.

A document differs when its source differs from the stored one (``DocState.original``)
and from what its model makes of the stored one (a stored source may lack fields added
to the model since, hold undeclared ones, or spell a value another way: the hydrated
and re-encoded stored source). Sources are compared as JSON values.

The common case costs no dict: a whole document its model's compiled encoder expresses
(:mod:`esmapper.model._wire_encode`) is encoded, and bytes equal to the original's bytes
are an unchanged document. Other bytes are decoded (the original held as bytes stays
bytes in the state) and compared; only the documents that still differ need the model's
form of their stored source, made for all of them together (one
:func:`~esmapper.model._wire_decode.hydrate` per model: the read mirror, which falls
back to ``from_source`` itself) and encoded. A document the encoder cannot express, and
a partially loaded one, compares ``to_source`` dicts (``to_source(from_source(original))``
for the model's form).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from esmapper import _json
from esmapper._raw_answers import Hit
from esmapper.model._wire_decode import hydrate
from esmapper.model._wire_encode import source_encoder
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["changed"]

#: a document whose bytes did not decide: (its position, the document, its encoder's
#: bytes, their JSON value, the stored source as held)
_Open = tuple[int, Any, bytes, Any, "dict[str, Any] | bytes"]


def changed(docs: Sequence[Any]) -> list[bool]:
    """Whether each of ``docs`` differs from what the store last confirmed (see the module
    docstring); a document never stored differs, and so does a partially loaded one with
    a field assigned (an assigned field is written, even unchanged). Normalizes each
    document first (:meth:`ModelInfo.normalize`: a wrongly typed list item raises
    DocumentValidationError)."""
    verdicts: list[bool] = []
    undecided: dict[ModelInfo, list[_Open]] = {}
    for doc in docs:
        found = _look(doc)
        if type(found) is bool:
            verdicts.append(found)
            continue
        undecided.setdefault(type(doc).__esmapper__, []).append((len(verdicts), doc, *found))
        verdicts.append(True)
    for info, rows in undecided.items():
        forms = _model_forms(info, rows)
        for (k, _doc, current, now, held), form in zip(rows, forms, strict=True):
            if form is None:  # the encoder refuses the model's form: the dicts decide
                verdicts[k] = _dicts_differ(info, _doc)
            elif form == held:  # the stored source is the model's own form: it differs
                verdicts[k] = True
            else:
                verdicts[k] = form != current and bool(now != _json.loads(form))
    return verdicts


def _look(doc: Any) -> bool | tuple[bytes, Any, dict[str, Any] | bytes]:
    """The verdict when the document's own bytes (or its dicts) decide; else its
    encoder's bytes, their JSON value and the stored source as held (the model's form
    of the stored source decides)."""
    state = state_of(doc)
    info = type(doc).__esmapper__
    info.normalize(doc)  # a dict appended to a list[InnerDoc] has no to_source()
    if state is None or state.original_or_bytes is None:
        return True
    if state.partial:
        return True if state.assigned else _dicts_differ(info, doc)
    held = state.original_or_bytes
    encode = source_encoder(info)
    current = None if encode is None else encode(doc)
    if current is None:
        return _dicts_differ(info, doc)
    if current == held:
        return False
    now = _json.loads(current)
    if now == (held if isinstance(held, dict) else _json.loads(held)):
        return False
    return current, now, held


def _dicts_differ(info: ModelInfo, doc: Any) -> bool:
    """The ``to_source`` comparison (the original decoded in the state)."""
    state = state_of(doc)
    assert state is not None
    current = info.to_source(doc)
    if current == state.original:
        return False
    # the stored source may lack fields added to the model since, or hold extra ones:
    # compare with what the model makes of it
    baseline = info.to_source(info.from_source(state.original, doc.id, None))
    return bool(current != baseline)


def _model_forms(info: ModelInfo, rows: Sequence[_Open]) -> list[bytes | None]:
    """What the model makes of each row's stored source, as its encoder's bytes (``None``:
    the encoder cannot express it): the sources held as bytes hydrated together by the
    read mirror, a dict by ``from_source``."""
    encode = source_encoder(info)
    assert encode is not None  # (the rows' documents were encoded)
    hits = [Hit(row[1].id, _source=msgspec.Raw(row[4])) for row in rows if type(row[4]) is bytes]
    hydrated = iter(hydrate(info, hits, False))
    forms: list[bytes | None] = []
    for _k, doc, _current, _now, held in rows:
        if type(held) is bytes:
            forms.append(encode(next(hydrated)))
        else:
            forms.append(encode(info.from_source(held, doc.id, None)))
    return forms
