"""Per-instance bookkeeping the mapper keeps on a loaded or written document."""

from __future__ import annotations

from typing import Any, overload

from esmapper import _json

__all__ = [
    "DecodedOnRead",
    "DocState",
    "declared_only",
    "loaded_state_code",
    "remember",
    "state_of",
    "stored_hit",
    "version_code",
    "version_of",
]


class DecodedOnRead:
    """An attribute over the slot ``slot`` holding a ``_source`` as a dict or as its JSON
    bytes: reading it decodes bytes (once: the dict replaces them in the slot), assigning
    stores the value as given (a dict, bytes or ``None``). The one rule of lazily decoded
    sources (:class:`DocState`'s ``original``, a pending write's ``original_source``)."""

    __slots__ = ("slot",)

    def __init__(self, slot: str) -> None:
        self.slot = slot

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> DecodedOnRead: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> dict[str, Any] | None: ...
    def __get__(
        self, obj: object | None, owner: type | None = None
    ) -> DecodedOnRead | dict[str, Any] | None:
        if obj is None:
            return self
        held = getattr(obj, self.slot)
        if held is None or type(held) is dict:
            return held  # type: ignore[no-any-return]
        decoded: dict[str, Any] = _json.loads(held)
        setattr(obj, self.slot, decoded)
        return decoded

    def __set__(self, obj: Any, value: dict[str, Any] | bytes | None) -> None:
        setattr(obj, self.slot, value)


class DocState:
    """What the store last confirmed for a document.

    ``original`` is the ``_source`` as loaded or last written (the basis of change
    detection and of ``ModifiedDocument.original``). It may be given as the JSON bytes of
    that ``_source`` (what was sent, or the hit's bytes as the server answered them): they
    are decoded the first time ``original`` is read, so a document whose original is never
    compared costs no decoding. ``index`` the physical index it was
    read from or written to, ``session`` the session tracking the document (if any).
    ``partial`` is true for a document read with ``includes``/``excludes``: ``original``
    holds only what was loaded, so a save writes only the fields that changed (a partial
    update), never the whole document. ``version`` is the ``"<primary_term>:<seq_no>"`` the
    store confirmed (kept for every model, ``Versioned`` or not, to guard internal
    read-modify-writes and partial saves). ``watched`` is set once a mutable value of the
    document (a list, an embedded object, a dict) was handed out to the caller: a session
    that takes the document in keeps diffing it at every flush, since the caller may
    mutate that value at any time. ``assigned`` names the fields assigned since a partial
    load. ``condition`` is ``(version, seq_no, primary_term)`` when the store gave the
    numbers with a version: a conditional write of a document whose ``version`` is that
    very string object sends them without parsing it again. ``declared_only`` is the
    very object ``original`` was held as when the loading proved it holds no key the
    model does not declare (:mod:`esmapper.model._wire_decode`'s strict mirror read it),
    else ``None``: a save of the document may then skip looking for undeclared keys to
    keep, as long as the original is still held as that object (:func:`declared_only`).
    """

    __slots__ = (
        "_original",
        "assigned",
        "condition",
        "declared_only",
        "index",
        "partial",
        "session",
        "version",
        "watched",
    )

    def __init__(  # noqa: PLR0917 - one per loaded hit: positional is cheaper
        self,
        original: dict[str, Any] | bytes | None,
        index: str | None = None,
        session: Any = None,
        partial: bool = False,
        version: str | None = None,
        condition: tuple[str, int, int] | None = None,
    ) -> None:
        self._original = original
        self.index = index
        self.session = session
        self.partial = partial
        self.version = version
        self.condition = condition
        self.watched = False
        self.declared_only: object = None
        #: fields assigned since a partial load (see ``partial``); ``None``: none
        self.assigned: set[str] | None = None

    #: the confirmed ``_source`` (bytes given for it are decoded when first read, once)
    original = DecodedOnRead("_original")

    @property
    def original_or_bytes(self) -> dict[str, Any] | bytes | None:
        """``original`` as held: the dict, or the bytes not decoded yet (for a copy of
        this state that should not decode them)."""
        return self._original


def version_of(
    seq_no: int | None, primary_term: int | None
) -> tuple[str | None, tuple[str, int, int] | None]:
    """The ``"<primary_term>:<seq_no>"`` version of a store answer's numbers and the
    :attr:`DocState.condition` that goes with it; ``(None, None)`` without both."""
    if seq_no is None or primary_term is None:
        return None, None
    version = f"{primary_term}:{seq_no}"
    return version, (version, seq_no, primary_term)


def version_code(seq_no: str, primary_term: str, version: str, condition: str) -> list[str]:
    """Statements of generated code setting the variables ``version`` and ``condition``
    to :func:`version_of` the variables ``seq_no`` and ``primary_term`` (inline: a
    hydration loop makes no call per hit)."""
    return [
        f"if {seq_no} is None or {primary_term} is None:",
        f"    {version} = {condition} = None",
        "else:",
        f'    {version} = f"{{{primary_term}}}:{{{seq_no}}}"',
        f"    {condition} = ({version}, {seq_no}, {primary_term})",
    ]


def loaded_state_code(
    ns: dict[str, Any],
    target: str,
    *,
    original: str,
    index: str,
    version: str,
    condition: str,
    partial: str = "False",
    declared_only: str = "None",
) -> list[str]:
    """Statements of generated code making ``target`` what ``DocState(original, index,
    None, partial, version, condition)`` makes (each argument the name of a variable, or
    an expression), its ``declared_only`` the variable ``declared_only``, without the
    call: a new instance, every slot stored (the names they use are put in ``ns``)."""
    ns["_new"] = object.__new__
    ns["_DocState"] = DocState
    values = {
        "_original": original,
        "index": index,
        "session": "None",
        "partial": partial,
        "version": version,
        "condition": condition,
        "watched": "False",
        "assigned": "None",
        "declared_only": declared_only,
    }
    if sorted(values) != sorted(DocState.__slots__):  # a slot added to DocState: set it here
        raise RuntimeError("loaded_state_code does not set every slot of DocState")
    return [f"{target} = _new(_DocState)", *(f"{target}.{k} = {v}" for k, v in values.items())]


def declared_only(doc: Any, model: type, held: object) -> bool:
    """Whether ``held`` (a document's original as held: bytes, a dict or ``None``, e.g. a
    pending write's ``original_as_held``) is the original the loading of ``doc`` proved to
    hold only keys its model declares (:attr:`DocState.declared_only`), and ``model`` (the
    model a save writes ``doc`` as) is that very model: a repository of a base class also
    saves instances of its subclasses, whose loading proved nothing about the keys the
    base class declares (a key only the subclass declares must be kept)."""
    if held is None or type(doc) is not model:
        return False
    state = state_of(doc)
    return state is not None and state.declared_only is held


def stored_hit(doc: Any) -> dict[str, Any]:
    """A document as the raw hit it was read from or last written as (its ``_source`` is
    the confirmed original; ``to_source()`` for a document never stored)."""
    state = state_of(doc)
    version = state.version if state is not None else None
    seq_no = primary_term = None
    if version:
        term, _, seq = version.partition(":")
        seq_no, primary_term = int(seq), int(term)
    return {
        "_id": doc.id,
        "_index": state.index if state is not None else None,
        "_source": state.original if state is not None else doc.to_source(),
        "_seq_no": seq_no,
        "_primary_term": primary_term,
    }


def state_of(doc: Any) -> DocState | None:
    """The :class:`DocState` of ``doc``, or ``None`` for a document never stored."""
    try:
        state: DocState | None = doc._esm_state
    except AttributeError:
        return None
    return state


def remember(
    doc: Any, original: dict[str, Any] | bytes | None, index: str | None, version: str | None = None
) -> DocState:
    """Record what the store confirmed for ``doc``, keeping its session link."""
    state = state_of(doc)
    if state is None:
        state = DocState(original, index, version=version)
        object.__setattr__(doc, "_esm_state", state)
    else:
        state.original = original
        state.version = version
        if index is not None:
            state.index = index
    return state
