"""The session: a unit of work with an identity map, for one request or one job.

A session remembers every document it loaded (one object per model and id), tracks the
documents added and removed through it and the loaded documents that changed, and writes
all of that in bulk requests when it flushes::

    with mapper.session(consistency="wait") as s:
        e = s.get(Employee, some_id)   # the same object for the same id in this session
        e.age += 1                     # tracked: written at flush
        s.add(Employee(name="Jane"))   # pending create
        s.remove(other)                # pending hard delete
    # normal exit: commit (flush, then after_commit); exception: rollback, nothing written

A flush runs the same write pipeline as the repositories (:mod:`esmapper._writes`): one
pass through the bulk writer for all models (chunked by count and bytes), version checks on
``Versioned`` documents, versions written back. Unchanged documents send nothing. On a
partial failure the confirmed writes are applied (their signals fire), then the error is
raised; failed documents stay pending. Sessions are not thread-safe.

Change tracking follows the caller's references (see :mod:`esmapper.model._tracking`): a
document whose list, embedded object or dict was handed out (read, or an embedded object
assigned) is *watched*, diffed at every flush until it leaves the session, so
``tags = e.tags; s.flush(); tags.append("x"); s.flush()`` writes ``"x"``. Other documents
are diffed only at the flush after an assignment. Before diffing, a flush normalizes the
documents it may write (:meth:`ModelInfo.normalize`: a dict appended to a
``list[InnerDoc]`` becomes the InnerDoc, a wrongly typed list item raises
DocumentValidationError before anything is sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import Unpack

from esmapper import signals
from esmapper._changes import changed
from esmapper._keywords import OptionKeywords
from esmapper._limits import limited
from esmapper._session_reads import SessionReads, _defaults
from esmapper._writes import PendingWrite, write_documents
from esmapper.errors import EsmapperError, SessionClosedError
from esmapper.model.state import DocState, state_of
from esmapper.options import Options, given, keywords_checked

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.model import Document

__all__ = ["Session", "SessionClosedError"]

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")


def _is_model_doc(doc: Any) -> bool:
    info = getattr(type(doc), "__esmapper__", None)
    return info is not None and info.is_document


class Session(SessionReads):
    """A unit of work over a :class:`~esmapper.mapper.Mapper` (see the module docstring).

    ``options`` (``consistency``, ``notifications``, ``validate``, ...) apply to
    every flush and read of the session.
    """

    @keywords_checked
    def __init__(self, mapper: Mapper, **options: Unpack[OptionKeywords]) -> None:
        self.mapper = mapper
        self.options = Options().merge(**given(options))
        self._identity: dict[tuple[type, str], Any] = {}
        self._new: dict[int, Any] = {}
        self._deleted: dict[int, Any] = {}
        self._maybe_dirty: dict[int, Any] = {}
        # documents whose mutable values were handed out: never pruned from _maybe_dirty
        self._watched: dict[int, Any] = {}
        self._closed = False
        self._flushing = False

    # -- state ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError("this session is closed; open a new one")

    def _touch(self, doc: Any) -> None:
        if not self._flushing:
            self._maybe_dirty[id(doc)] = doc

    def _watch(self, doc: Any) -> None:
        if not self._flushing:
            key = id(doc)
            self._maybe_dirty[key] = doc
            self._watched[key] = doc

    def _forget(self, key: int) -> None:
        self._maybe_dirty.pop(key, None)
        self._watched.pop(key, None)

    def _adopt(self, doc: Any) -> Any:
        """Put a loaded document in the identity map, or return the one already there."""
        key = (type(doc), doc.id)
        existing = self._identity.get(key)
        if existing is not None:
            return existing
        self._map(doc, key, state_of(doc))
        return doc

    def _map(self, doc: Any, key: tuple[type, str], state: DocState | None) -> DocState:
        """Track ``doc`` (``state``: its state, if any) under ``key`` in the identity map."""
        if state is None:
            state = DocState(None)
            object.__setattr__(doc, "_esm_state", state)
        state.session = self
        self._identity[key] = doc
        return state

    def _changed(self, doc: Any) -> bool:
        """Whether ``doc`` differs from what the store last confirmed
        (:func:`esmapper._changes.changed`)."""
        return changed([doc])[0]

    @property
    def new(self) -> list[Document]:
        """Documents added to the session and not flushed yet."""
        return list(self._new.values())

    @property
    def deleted(self) -> list[Document]:
        """Documents marked for removal and not flushed yet."""
        return list(self._deleted.values())

    @property
    def dirty(self) -> list[Document]:
        """Loaded documents whose values differ from what the store last confirmed.

        Normalizes the documents it compares (see :meth:`ModelInfo.normalize`), so a
        wrongly typed list item raises DocumentValidationError here too."""
        self._flushing = True
        try:
            loaded = [
                d
                for k, d in self._maybe_dirty.items()
                if k not in self._new and k not in self._deleted
            ]
            return [d for d, differs in zip(loaded, changed(loaded), strict=True) if differs]
        finally:
            self._flushing = False

    def __contains__(self, doc: object) -> bool:
        key = id(doc)
        if key in self._new or key in self._deleted:
            return True
        model_id = getattr(doc, "id", None)
        return self._identity.get((type(doc), model_id)) is doc  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._identity.values()) + self.new)

    # -- changes -------------------------------------------------------------------------

    def add(self, doc: T) -> T:
        """Track ``doc``: a new document becomes a pending create; a document loaded
        elsewhere joins the identity map and is saved at flush if it changed."""
        self._check_open()
        if not _is_model_doc(doc):
            raise TypeError(f"add() takes an esmapper Document, got {doc!r}")
        self._deleted.pop(id(doc), None)
        state = state_of(doc)
        if state is not None and state.original_or_bytes is not None and doc.id is not None:
            self._check_not_mapped_elsewhere(doc)
            self._adopt(doc)
            self._maybe_dirty[id(doc)] = doc
            if state.watched:  # a mutable value was handed out before
                self._watched[id(doc)] = doc
        else:
            self._new[id(doc)] = doc
        return doc

    def add_all(self, docs: Iterable[Document]) -> None:
        for doc in docs:
            self.add(doc)

    def remove(self, doc: Document) -> None:
        """Mark ``doc`` for a hard delete at flush (a pending create is just dropped)."""
        self._check_open()
        if self._new.pop(id(doc), None) is not None:
            return
        if not _is_model_doc(doc) or doc.id is None:
            raise TypeError(f"remove() takes a stored esmapper Document, got {doc!r}")
        self._check_not_mapped_elsewhere(doc)
        self._deleted[id(doc)] = doc

    def _check_not_mapped_elsewhere(self, doc: Any) -> None:
        """One object per id: ``doc`` cannot join the session while it maps another."""
        existing = self._identity.get((type(doc), doc.id))
        if existing is not None and existing is not doc:
            raise EsmapperError(
                f"another {type(doc).__name__} object with id {doc.id!r} is already in "
                "this session (use that one, or expunge it first)",
                ids=[doc.id],
            )

    def expunge(self, doc: Document) -> None:
        """Forget ``doc``: it is no longer tracked, and nothing pending for it is written."""
        self._new.pop(id(doc), None)
        self._deleted.pop(id(doc), None)
        self._forget(id(doc))
        if doc.id is not None:
            key: tuple[type, str] = (type(doc), doc.id)
            if self._identity.get(key) is doc:
                del self._identity[key]
        state = state_of(doc)
        if state is not None and state.session is self:
            state.session = None

    # -- unit of work --------------------------------------------------------------------

    def _pending(self) -> list[PendingWrite]:
        """What a flush writes. Documents are normalized first (one wrong item raises
        DocumentValidationError before anything is sent); unchanged documents leave the
        maybe-dirty set, unless they are watched."""
        # removals first: remove(a) + add(b) of one id in a unit of work replaces a by b
        pendings = [PendingWrite("remove", d, type(d).__esmapper__) for d in self._deleted.values()]
        for doc in self._new.values():
            info = type(doc).__esmapper__
            info.normalize(doc)
            pendings.append(PendingWrite("add", doc, info))
        watched = self._watched
        self._flushing = True
        try:
            loaded = [
                (key, doc)
                for key, doc in self._maybe_dirty.items()
                if key not in self._new and key not in self._deleted
            ]
            verdicts = changed([doc for _key, doc in loaded])
            for (key, doc), differs in zip(loaded, verdicts, strict=True):
                if differs:
                    pendings.append(PendingWrite("save", doc, type(doc).__esmapper__))
                elif key not in watched:
                    del self._maybe_dirty[key]
        finally:
            self._flushing = False
        return pendings

    def _confirmed(self, pending: PendingWrite) -> None:
        doc = pending.doc
        key = id(doc)
        if pending.kind == "add":
            self._new.pop(key, None)
            mapped = (type(doc), doc.id)
            existing = self._identity.get(mapped)
            state = state_of(doc)
            if existing is not doc:
                if existing is not None:
                    # the store now holds this object's content: it replaces the stale one
                    self.expunge(existing)
                state = self._map(doc, mapped, state)
            if state is not None and state.watched:  # its values were handed out
                self._maybe_dirty[key] = doc
                self._watched[key] = doc
        elif pending.kind == "save":
            if key not in self._watched:
                self._maybe_dirty.pop(key, None)
        else:
            self._deleted.pop(key, None)
            self._forget(key)
            mapped = (type(doc), doc.id)
            if self._identity.get(mapped) is doc:  # not another object for the id
                del self._identity[mapped]

    @limited(_defaults)
    def flush(self) -> None:
        """Write every pending change in bulk requests (nothing for unchanged documents).

        Fires ``before_flush``/``after_flush`` (sender: the session). As in SQLAlchemy,
        what the flush writes is decided *after* ``before_flush``: documents a receiver
        adds, removes or changes there are written by this flush (the receiver's
        ``pending=`` is what was pending when it was called). Raises the pipeline's error
        after applying the confirmed writes; failed documents stay pending.
        """
        self._check_open()
        pendings = self._pending()
        if signals.has_receivers(signals.before_flush, self):
            signals.before_flush.send(self, pending=pendings)
            pendings = self._pending()  # what the receivers added or changed too
        if pendings:
            write_documents(
                self.mapper.services,
                pendings,
                self.options,
                on_success=self._confirmed,
                inherited_tenant=True,  # the session's tenant: for custom-field models
            )
        signals.send_safely(signals.after_flush, self, written=pendings)  # stored: log failures

    @limited(_defaults)
    def commit(self) -> None:
        """Flush, then fire ``after_commit``."""
        self.flush()
        signals.send_safely(signals.after_commit, self)

    def rollback(self) -> None:
        """Discard pending changes: new documents are dropped, removals cancelled, and
        loaded documents get back the values the store last confirmed. Writes already
        flushed stay (Elasticsearch has no transactions). Fires ``after_rollback``."""
        for doc in self._new.values():
            state = state_of(doc)
            if state is not None:
                state.session = None
        self._new.clear()
        self._deleted.clear()
        self._flushing = True
        try:
            for doc in self._maybe_dirty.values():
                _restore(doc)
        finally:
            self._flushing = False
        # restored documents hold fresh values: what was handed out no longer belongs to them
        self._maybe_dirty.clear()
        self._watched.clear()
        signals.after_rollback.send(self)

    def close(self) -> None:
        """Detach every document and refuse further use (pending changes are dropped)."""
        if self._closed:
            return
        for doc in list(self._identity.values()):
            state = state_of(doc)
            if state is not None and state.session is self:
                state.session = None
        self._identity.clear()
        self._new.clear()
        self._deleted.clear()
        self._maybe_dirty.clear()
        self._watched.clear()
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Session:
        self._check_open()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()

    def __repr__(self) -> str:
        return (
            f"<Session loaded={len(self._identity)} new={len(self._new)} "
            f"deleted={len(self._deleted)}{' closed' if self._closed else ''}>"
        )


def _restore(doc: Any) -> None:
    """Put the last confirmed values back into ``doc`` (in place)."""
    state = state_of(doc)
    if state is None or state.original is None:
        return
    info = type(doc).__esmapper__
    fresh = info.from_source(state.original, doc.id, getattr(doc, "version", None))
    for spec in info.fields:
        if spec.stored and spec.name != "id":
            object.__setattr__(doc, spec.name, object.__getattribute__(fresh, spec.name))
    state.watched = False
    state.assigned = None  # the assignments are undone: a save must not write them


class sessionmaker:
    """A factory of sessions with preset options (one session per web request)."""

    @keywords_checked
    def __init__(self, mapper: Mapper, **options: Unpack[OptionKeywords]) -> None:
        self.mapper = mapper
        self.options = given(options)

    def __call__(self, **overrides: Any) -> Session:
        return Session(self.mapper, **{**self.options, **overrides})
