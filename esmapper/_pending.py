"""One write of the pipeline (:class:`PendingWrite`), the vocabulary of write kinds
(:data:`WriteKind`, :data:`KINDS`) and the version format a write carries.

A write is named by what the caller asked for: ``add``, ``save``, ``remove`` (the
``Repository``/``Session`` methods) or ``patch``. That word is the only one the pipeline
uses; :data:`KINDS` says, in one table, which :class:`~esmapper.signals.ChangeType` each
kind publishes and which signals it fires. Elasticsearch's bulk operations (``create``,
``index``, ``update``, ``delete``) appear only where the bulk action is built
(:func:`esmapper._bodies.document_action`) and where the server's answer is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import msgspec

from esmapper import signals
from esmapper.errors import DocumentValidationError
from esmapper.model.state import DecodedOnRead
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = [
    "KINDS",
    "KindWords",
    "PatchForm",
    "PendingWrite",
    "WriteKind",
    "change_type",
    "routed_id",
    "source_value",
    "split_version",
]

WriteKind = Literal["add", "save", "remove", "patch"]
"""What a write does, in the words of the API (see the module docstring)."""


@attrs.frozen(slots=True)
class KindWords:
    """What one write kind is called elsewhere: the ``change_type`` it publishes (unless
    a feature says otherwise: :func:`change_type`), the ``before`` ("-ing") and ``after``
    ("-ed") signals (``None``: the kind fires none)."""

    change_type: ChangeType
    before: signals.Signal | None
    after: signals.Signal | None


#: The one translation table of write kinds.
KINDS: Final[Mapping[WriteKind, KindWords]] = {
    "add": KindWords(ChangeType.ADDED, signals.documents_adding, signals.documents_added),
    "save": KindWords(ChangeType.SAVED, signals.documents_saving, signals.documents_saved),
    "remove": KindWords(ChangeType.REMOVED, signals.documents_removing, signals.documents_removed),
    "patch": KindWords(ChangeType.SAVED, None, None),
}


def change_type(
    pending: PendingWrite, original: Mapping[str, Any] | None, written: Mapping[str, Any] | None
) -> ChangeType:
    """The ``ChangeType`` a confirmed write publishes: its kind's (:data:`KINDS`), unless
    the ``change_type`` point of a feature of its model says otherwise (a save or patch
    that soft-deletes is ``REMOVED``). ``original``/``written``: the stored ``_source``
    the write replaced / what it stored (``None`` when not known)."""
    for hook in pending.info.points.change_type:
        found = hook(pending, original, written)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return KINDS[pending.kind].change_type


@attrs.define(slots=True)
class PatchForm:
    """What a write of kind ``patch`` sends (the patch paths compile it, :mod:`esmapper._patching`):

    - ``update``: a partial update (``body={"doc": ...}``) or a script update
      (``body={"script": ...}``) of the stored document, ``doc`` of the write ``None``;
    - otherwise a conditional ``index`` of a source patched client-side (Json/Action):
      ``body`` the patched source (JsonPatch), or ``None``: the write's ``doc`` (the
      patched document, ActionPatch) with the stored fields it does not declare.

    ``version`` (``"<primary_term>:<seq_no>"``) is the version the stored source was read
    (scanned) at, ``read_from`` the index it was read from (or the alias a by-id write
    names): the write goes through that index's alias, and, conditioned on ``version``
    (``version_check``), to its fence. ``noop``: the server answered ``noop`` (set when
    the write is settled)."""

    patch: Any
    update: bool
    body: dict[str, Any] | None = None
    read_from: str | None = None
    version: str | None = None
    retry_on_conflict: int | None = None
    noop: bool = False


@attrs.define(slots=True)
class PendingWrite:
    """One write: ``kind`` is ``add``, ``save``, ``remove`` or ``patch`` (:data:`WriteKind`).

    ``doc`` is the caller's document (``None`` for a partial or script patch, which loads
    nothing; the patched document of a client-side patch), ``id`` the document id for
    writes without a document; ``form`` what a patch sends (:class:`PatchForm`).
    ``conditional`` is false for a removal by id (``remove("id")`` deletes whatever is stored).
    """

    kind: WriteKind
    doc: Any
    info: ModelInfo
    id: str | None = None
    conditional: bool = True
    #: condition the write on this version (``"<primary_term>:<seq_no>"``, e.g. what a
    #: by-query scan saw), whatever the model's ``Versioned`` support
    guard: str | None = None
    #: the stored ``_source`` before this write (captured when the pipeline starts), as
    #: held: a dict, or its JSON bytes (decoded when ``original_source`` is first read)
    _original: dict[str, Any] | bytes | None = attrs.field(default=None, alias="original_source")
    #: what the store holds after a confirmed write (the source, merged for partial saves)
    written: dict[str, Any] | None = None
    #: what a ``patch`` sends (``None`` for the other kinds)
    form: PatchForm | None = None
    #: the stored ``_source`` read for a save of a document that was not loaded
    #: (``originals=``, :mod:`esmapper._originals`): seen by receivers and the change
    #: type only, never written back (the body is the document's, as without it)
    read_original: dict[str, Any] | None = None
    #: ``(seq_no, primary_term, index)`` of :attr:`read_original` (what the stored copy
    #: was read at, and from: a feature may write that copy conditioned on it)
    read_condition: tuple[int, int, str | None] | None = None

    @property
    def doc_id(self) -> str | None:
        return self.doc.id if self.doc is not None else self.id

    #: the stored ``_source`` before this write (``None``: not known); bytes given for it
    #: are decoded when first read, once
    original_source = DecodedOnRead("_original")

    @property
    def seen_original(self) -> dict[str, Any] | None:
        """What the receivers and the change type compare the write with: the stored
        source the document was loaded from, else the one read for it (``originals=``)."""
        if self._original is not None:
            return self.original_source
        return self.read_original

    @property
    def original_as_held(self) -> dict[str, Any] | bytes | None:
        """``original_source`` without decoding: the dict, or the bytes."""
        return self._original

    def stored_value(self, key: str) -> Any:
        """``seen_original.get(key)`` (``None`` also when nothing was stored), read
        without decoding the whole source when it is held as bytes (a msgspec decode of
        that one key; the rest is skipped in C)."""
        original = self._original
        if original is None:  # the one read for a save of a document not loaded, if any
            return None if self.read_original is None else self.read_original.get(key)
        if type(original) is dict:  # (hot: every save of a loaded soft-delete document)
            return original.get(key)
        return source_value(original, key)


def source_value(source: Mapping[str, Any] | bytes | None, key: str) -> Any:
    """``source.get(key)`` of a ``_source`` held as a dict or as its JSON bytes (a
    msgspec decode of that one key, the rest skipped in C); ``None`` also when there is
    no source."""
    if source is None:
        return None
    if type(source) is dict or isinstance(source, Mapping):  # (the exact type first: cheap)
        return source.get(key)
    try:
        return _one_key(key).decode(source).value
    except (msgspec.DecodeError, msgspec.ValidationError):  # not an object: decode it
        decoded = msgspec.json.decode(source)
        return decoded.get(key) if isinstance(decoded, dict) else None


#: key -> the decoder reading only that top-level key of a JSON object (``.value``)
_key_decoders: dict[str, msgspec.json.Decoder[Any]] = {}


def _one_key(key: str) -> msgspec.json.Decoder[Any]:
    decoder = _key_decoders.get(key)
    if decoder is None:
        only = msgspec.defstruct("StoredValue", [("value", Any, None)], rename={"value": key})
        decoder = _key_decoders[key] = msgspec.json.Decoder(only)
    return decoder


def split_version(
    version: str | None, *, owner: str = "", id: str | None = None
) -> tuple[int | None, int | None]:
    """``(seq_no, primary_term)`` of a ``"<primary_term>:<seq_no>"`` version (``None``s for
    no version); a malformed one raises DocumentValidationError naming ``owner``."""
    if not version:
        return None, None
    try:
        term_text, seq_text = version.split(":", 1)
        return int(seq_text), int(term_text)
    except ValueError:
        raise DocumentValidationError(
            f"{owner} {id!r}: version {version!r} is not '<primary_term>:<seq_no>'",
            field="version",
            ids=[id],
        ) from None


def routed_id(pending: PendingWrite) -> str:
    """The id of ``pending``'s document with the routing its write sends, when its id does
    not tell it (the features' ``read_id`` point: a join child's
    :class:`~esmapper.ids.Id` with its parent id), else the document's own id: what the
    originals read reads by, and what the change notification of the write names (a
    listener reloading it by that id finds it on its shard, in real time)."""
    for hook in pending.info.points.read_id:
        read: str | None = hook(pending)
        if read is not None:
            return read
    return pending.doc.id  # type: ignore[no-any-return]
