"""What a document write sends: the bulk action of an add, save, remove or patch.

The one owner of "never replace what was not loaded": a fully loaded document is written
whole plus the ``_source`` fields its model does not declare (:func:`with_extras`, also
inside embedded objects; a document whose stored source has none, the usual case, is
sent as the bytes of its model's compiled encoder, :mod:`esmapper.model._wire_encode`);
a partially loaded one (``includes``/``excludes``) as a version-guarded partial update
of what changed or was assigned, refusing any change that would overwrite what was not
read (:func:`document_action`; see docs/architecture.md).
A patch sends what its :class:`~esmapper._pending.PatchForm` says: an update (partial or
script), or an ``index`` of the source patched client-side, conditioned on the version
its source was read at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from esmapper._pending import PendingWrite, split_version
from esmapper.bulk import BulkAction
from esmapper.errors import DocumentError
from esmapper.model._wire_encode import source_encoder, undeclared_keys
from esmapper.model.state import declared_only, state_of
from esmapper.options import Options

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["document_action", "merged", "partial_changes", "sends_bytes", "with_extras"]


def _covers(loaded: Any, full: Any) -> bool:
    """Whether ``loaded`` (a partially loaded value) holds every key of ``full`` (the
    model's form of it), recursively: then it was loaded whole."""
    if isinstance(full, dict):
        return isinstance(loaded, dict) and all(
            k in loaded and _covers(loaded[k], v) for k, v in full.items()
        )
    if isinstance(full, list):
        return (
            isinstance(loaded, list)
            and len(loaded) == len(full)
            and all(_covers(a, b) for a, b in zip(loaded, full, strict=True))
        )
    return True


def _lost_keys(before: Any, after: Any) -> bool:
    """Whether ``after`` lacks a key ``before`` has, at any depth (a partial update merges
    objects, so it cannot remove keys)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return any(k not in after or _lost_keys(v, after[k]) for k, v in before.items())
    return False


def partial_changes(  # noqa: PLR0917 - one recursive step, all positional
    info: ModelInfo,
    doc: Any,
    loaded: Mapping[str, Any],
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    assigned: set[str],
    path: str = "",
) -> dict[str, Any]:
    """What a partially loaded document's save sends (``doc`` of an Update API call).

    A field loaded whole (or assigned) is sent whole when it changed (or was assigned,
    even to the value that stands in for an unloaded one); an object loaded in part is
    diffed key by key. A change that would overwrite what was not loaded (an unloaded
    field mutated in place, a list loaded in part) or remove keys (the update merges
    objects) raises :class:`DocumentError` before anything is sent.
    """
    changes: dict[str, Any] = {}
    for key, value in current.items():
        name = f"{path}{key}"
        base = baseline.get(key, _ABSENT)
        whole = key in assigned or (key in loaded and _covers(loaded[key], base))
        if whole:
            if key in assigned or value != base:
                if key in loaded and _lost_keys(loaded[key], value):
                    raise _partial_error(info, doc, name, "it would remove keys of an object")
                changes[key] = value
            continue
        if value == base:
            continue
        if key in loaded and isinstance(value, dict) and isinstance(base, dict):
            inner = partial_changes(info, doc, loaded[key], base, value, set(), f"{name}.")
            if inner:
                changes[key] = inner
            continue
        raise _partial_error(info, doc, name, "it changed but was not (fully) loaded")
    return changes


def _partial_error(info: ModelInfo, doc: Any, name: str, why: str) -> DocumentError:
    return DocumentError(
        f"cannot save {info.name} {doc.id!r}, loaded with includes/excludes: field "
        f"{name!r}: {why}, so writing it would overwrite stored data that was not read. "
        "Load the document without includes/excludes to change it, or assign the field.",
        ids=[doc.id],
        error_type="partial_document",
    )


def merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` deep-merged in (what a partial update leaves stored)."""
    out = dict(base)
    for key, value in changes.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merged(current, value)
        else:
            out[key] = value
    return out


class _Absent:
    __slots__ = ()


_ABSENT = _Absent()


def with_extras(
    body: dict[str, Any], original: Mapping[str, Any] | None, info: ModelInfo | None = None
) -> dict[str, Any]:
    """``body`` plus the ``_source`` fields of ``original`` the model does not declare
    (written by a newer deploy, or by another application): a save keeps them, also inside
    embedded objects (``info`` given: its non-list InnerDoc fields are followed)."""
    if original is None:
        return body
    if original.keys() <= body.keys():  # the common case: nothing undeclared (no new set)
        out = body
    else:
        extra = original.keys() - body.keys()
        out = {**{k: original[k] for k in extra}, **body}
    if info is None or not info.inner_fields:
        return out
    for name, inner in info.inner_fields:
        value, before = out.get(name), original.get(name)
        if isinstance(value, dict) and isinstance(before, dict):
            if before.keys() <= value.keys() and not inner.inner_fields:
                continue  # the common case, without a call: nothing undeclared in there
            merged = with_extras(value, before, inner)
            if merged is not value:
                out = out if out is not body else dict(body)
                out[name] = merged
    return out


def sends_bytes(pending: PendingWrite) -> bool:
    """Whether an add or save sends its document as the compiled encoder's bytes (when the
    encoder expresses it): a whole document whose stored source holds no key its model
    does not declare (those are kept: :func:`with_extras`; an original its loading proved
    to hold none, :func:`~esmapper.model.state.declared_only`, is not looked into)."""
    state = state_of(pending.doc)
    if state is not None and state.partial:
        return False
    held = pending.original_as_held  # one its loading proved declared-only is not read again
    return declared_only(pending.doc, pending.info.cls, held) or not undeclared_keys(
        pending.info, held
    )


def document_action(
    pending: PendingWrite,
    index: str,
    options: Options,
    encoded: bytes | Literal[False] | None = None,
) -> BulkAction:
    """The bulk action of an add/save/remove/patch (see the module docstring).
    ``encoded``: the encoder's bytes of an add's or save's document, already made by the
    caller for a write :func:`sends_bytes` says sends them; ``False``: the caller found it
    takes the dict path (not asked again); ``None``: decided here."""
    doc, info = pending.doc, pending.info
    if pending.kind == "patch":
        return _patch_action(pending, index, options)
    if pending.kind == "remove":
        seq_no = primary_term = None
        if pending.guard is not None:
            seq_no, primary_term = split_version(pending.guard, owner=info.name, id=doc.id)
        elif pending.conditional and info.versioned and options.version_check:
            seq_no, primary_term = split_version(doc.version, owner=info.name, id=doc.id)
        return BulkAction(
            op="delete",
            index=index,
            id=doc.id,
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            ref=pending,
        )
    state = state_of(doc)
    # the _source's bytes from the compiled encoder, unless the stored source may hold
    # fields the model does not declare (kept: with_extras; an original its loading
    # proved to hold none is not looked into again) or a value needs the dict path
    if encoded is None:  # not decided by the caller
        encode = source_encoder(info) if sends_bytes(pending) else None
        source = None if encode is None else encode(doc)
    else:  # the caller's bytes, or False: it decided on the dict path
        source = encoded or None
    body = info.to_source(doc) if source is None else None
    if pending.kind == "add":
        return BulkAction("create", index, doc.id, body, ref=pending, source=source)
    seq_no = primary_term = None
    if info.versioned and options.version_check:
        version = doc.version
        condition = None if state is None else state.condition
        if condition is not None and condition[0] is version:  # the numbers it was made of
            seq_no, primary_term = condition[1], condition[2]
        else:
            seq_no, primary_term = split_version(version, owner=info.name, id=doc.id)
    original = pending.original_source if source is None else None
    if state is not None and state.partial and original is not None:
        assert body is not None
        baseline = info.to_source(info.from_source(original, doc.id, None))
        changes = partial_changes(info, doc, original, baseline, body, state.assigned or set())
        if seq_no is None and options.version_check:  # never merge into an unseen version
            seq_no, primary_term = split_version(state.version, owner=info.name, id=doc.id)
        pending.written = merged(original, changes)
        return BulkAction(
            op="update",
            index=index,
            id=doc.id,
            body={"doc": changes},
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            ref=pending,
        )
    if original is not None:
        body = with_extras(body, original, info)  # type: ignore[arg-type]
    return BulkAction(
        "index", index, doc.id, body, seq_no, primary_term, None, None, pending, False, None, source
    )


def _patch_action(pending: PendingWrite, index: str, options: Options) -> BulkAction:
    """A patch's action (its ``form``): the update it compiled, or an ``index`` of the
    source patched client-side (a JsonPatch's, else the patched document's plus the stored
    fields its model does not declare), conditioned on the version the source was read
    at unless ``options.version_check`` is off."""
    form, info = pending.form, pending.info
    assert form is not None, "a patch write carries its form"
    seq_no = primary_term = None
    if options.version_check:
        seq_no, primary_term = split_version(form.version, owner=info.name, id=pending.id)
    body = form.body
    if form.update:
        return BulkAction(
            op="update",
            index=index,
            id=pending.id,
            body=body,
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            retry_on_conflict=form.retry_on_conflict,
            ref=pending,
        )
    if body is None:
        body = with_extras(info.to_source(pending.doc), pending.original_source, info)
    return BulkAction("index", index, pending.id, body, seq_no, primary_term, None, None, pending)
