"""Whether loaded documents differ from what the store last confirmed (a session's flush
and ``dirty``): :func:`changed`.

A document differs when its source differs from the stored one (``DocState.original``)
and from what its model makes of the stored one (a stored source may lack fields added
to the model since, hold undeclared ones, or spell a value another way: the stored
source hydrated and encoded again, its "model form"). Sources are compared as JSON
values.

The common case decodes no source into dicts. A whole document its model's compiled
encoder expresses (:mod:`esmapper.model._wire_encode`) is turned into its mirror and
encoded: bytes equal to the original's bytes are an unchanged document. For the others,
the model forms of the stored sources are made together (one
:func:`~esmapper.model._wire_decode.hydrate` per model: the read mirror, which falls
back to ``from_source`` itself), each as its mirror and bytes. Bytes equal to the model
form's: unchanged. A stored source that is its own model form (the usual case: it was
written by this model) makes the verdict the comparison of the two mirrors
(:func:`_differs`: equal mirrors are equal JSON; unequal plain values of one type are
unequal JSON; only a pair of ``msgspec.Raw`` or mixed values, e.g. a free-form field, is
decoded to be compared). Another stored source is also compared, decoded, with the
document's decoded bytes. A document the encoder cannot express, and a partially loaded
one, compares ``to_source`` dicts (``to_source(from_source(original))`` for the model
form).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import astuple

from esmapper import _gcpause as _gc
from esmapper import _json
from esmapper._raw_answers import Hit
from esmapper.model._wire_decode import hydrate
from esmapper.model._wire_encode import ENCODER, source_encoder
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["changed"]

#: how many stored sources are hydrated together (their documents are dropped after each
#: chunk: a flush of many changed documents holds only this many more at a time)
_CHUNK = 256

#: a document its bytes did not decide: (its position, the document, its mirror, its
#: encoder's bytes, the stored source as held)
_Open = tuple[int, Any, Any, bytes, "dict[str, Any] | bytes"]


def changed(docs: Sequence[Any]) -> list[bool]:
    """Whether each of ``docs`` differs from what the store last confirmed (see the module
    docstring); a document never stored differs, and so does a partially loaded one with
    a field assigned (an assigned field is written, even unchanged). Normalizes each
    document first (:meth:`ModelInfo.normalize`: a wrongly typed list item raises
    DocumentValidationError)."""
    with _gc.paused():  # per-document objects alive together: no full collector passes
        return _changed(docs)


def _changed(docs: Sequence[Any]) -> list[bool]:
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
        for start in range(0, len(rows), _CHUNK):  # (the hydrated documents die per chunk)
            chunk = rows[start : start + _CHUNK]
            forms = _model_forms(info, chunk)
            for (k, doc, mirror, current, held), form in zip(chunk, forms, strict=True):
                verdicts[k] = _differs_from(info, doc, mirror, current, held, form)
    return verdicts


def _look(doc: Any) -> bool | tuple[Any, bytes, dict[str, Any] | bytes]:
    """The verdict when the document's own bytes (or its dicts) decide; else its mirror,
    its encoder's bytes and the stored source as held (the model form decides)."""
    state = state_of(doc)
    info = type(doc).__esmapper__
    info.normalize(doc)  # a dict appended to a list[InnerDoc] has no to_source()
    if state is None or state.original_or_bytes is None:
        return True
    if state.partial:
        return True if state.assigned else _dicts_differ(info, doc)
    mirror = _mirror(info, doc)
    if mirror is None:
        return _dicts_differ(info, doc)
    current, held = mirror[1], state.original_or_bytes
    if current == held:
        return False
    return mirror[0], current, held


def _mirror(info: ModelInfo, doc: Any) -> tuple[Any, bytes] | None:
    """``doc``'s mirror and its bytes (``encode(doc)``'s), or ``None`` when the encoder
    cannot express it."""
    encode = source_encoder(info)
    if encode is None:
        return None
    try:
        mirror = encode.to_struct(doc)  # type: ignore[attr-defined]
        return mirror, ENCODER.encode(mirror)
    except Exception:  # a value the mirror cannot express: the dicts decide
        return None


def _differs_from(  # noqa: PLR0917 - one row, all positional
    info: ModelInfo,
    doc: Any,
    mirror: Any,
    current: bytes,
    held: dict[str, Any] | bytes,
    form: tuple[Any, bytes] | None,
) -> bool:
    """The verdict of a document whose bytes differ from the stored source's (``form``:
    the model form's mirror and bytes, ``None`` when the encoder cannot express it)."""
    if form is None:
        return _dicts_differ(info, doc)
    if form[1] == current:
        return False
    if form[1] == held:  # the stored source is its own model form: the mirrors decide
        return _differs(mirror, form[0])
    stored = held if isinstance(held, dict) else _json.loads(held)
    return _json.loads(current) != stored and _differs(mirror, form[0])


def _differs(a: Any, b: Any) -> bool:
    """Whether two mirror values (what a model's ``to_struct`` makes of its values, see
    :mod:`esmapper.model._wire_encode`) are different JSON values. Equal values are equal
    JSON; unequal values of one plain type (str, int, float, bool, aware UTC datetime)
    are unequal JSON; mirrors and lists are compared item by item; anything else (a
    ``msgspec.Raw``, values of two types) is compared decoded."""
    if a == b:
        return False
    kind = type(a)
    if kind is type(b) and kind is not msgspec.Raw:
        if kind is list:
            if len(a) != len(b):
                return True
        elif isinstance(a, msgspec.Struct):
            a, b = astuple(a), astuple(b)
        else:
            return True
        return any(x != y and _differs(x, y) for x, y in zip(a, b, strict=True))
    return bool(_json.loads(ENCODER.encode(a)) != _json.loads(ENCODER.encode(b)))


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


def _model_forms(info: ModelInfo, rows: Sequence[_Open]) -> list[tuple[Any, bytes] | None]:
    """The model form of each row's stored source, as its mirror and bytes (``None``: the
    encoder cannot express it): the sources held as bytes hydrated together by the read
    mirror, a dict by ``from_source``."""
    hits = [Hit(row[1].id, _source=msgspec.Raw(row[4])) for row in rows if type(row[4]) is bytes]
    hydrated = iter(hydrate(info, hits, False))
    forms: list[tuple[Any, bytes] | None] = []
    for _k, doc, _its_mirror, _current, held in rows:
        if type(held) is bytes:
            forms.append(_mirror(info, next(hydrated)))
        else:
            forms.append(_mirror(info, info.from_source(held, doc.id, None)))
    return forms
