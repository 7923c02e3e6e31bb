"""Patches and by-query writes of a repository (FEATURES PA-*, RI-11, MB-5, EV-13).

- ``patch(id, Partial|Script)`` is one ``update`` through the bulk writer (server-side
  merge or script, ``detect_noop``); ``patch(ids, Partial|Script)`` one update per id.
- ``patch(id, Json|Action)`` GETs the document, applies the patch client-side and writes it
  back with ``if_seq_no``/``if_primary_term``; ``patch(ids, Json|Action)`` runs as
  ``patch_all`` over those ids.
- ``patch_all(filter, Partial|Script)`` is one ``_update_by_query`` when the model is not
  cached; otherwise, and for Json/Action, documents are processed in point-in-time batches.
- ``remove_all`` is ``_delete_by_query`` (re-run while version conflicts remain, at most 10
  times) unless removal signals have receivers or the model is cached: then batches go
  through the write pipeline, one bulk request per batch.

Patches skip validation and the saving/saved signals; ``documents_changed`` fires with an
empty list except for a single-document ActionPatch; ``updated_utc`` is set on every patch
(a caller-supplied value wins for Partial/Script).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import jsonpatch
from elasticsearch import NotFoundError
from elasticsearch.dsl.query import Query

from esmapper import signals
from esmapper._search import is_index_missing
from esmapper._writes import PendingWrite, publish_changes, write_documents
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    DocumentNotFoundError,
    VersionConflictError,
)
from esmapper.ids import check_id
from esmapper.indexes.reads import get_document, locate_documents
from esmapper.model.codec import format_datetime
from esmapper.model.state import DocState
from esmapper.options import Options, refresh_param
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, Patch, ScriptPatch
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper.repository import Repository

__all__ = ["patch_all", "patch_ids", "remove_all"]

log = logging.getLogger("esmapper.repository")

_PARTIAL_SCRIPT = "ctx._source.putAll(params.__esm_doc)"
_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)


def _now_text(repo: Repository[Any]) -> str:
    return format_datetime(repo.mapper.clock())


def _update_body(repo: Repository[Any], patch: PartialPatch | ScriptPatch) -> dict[str, Any]:
    """The Update API body of a Partial/Script patch, with ``updated_utc`` tracking."""
    dated = repo.info.has_dates
    if isinstance(patch, PartialPatch):
        doc = dict(patch.doc)
        if dated and "updated_utc" not in doc:
            doc["updated_utc"] = _now_text(repo)
        return {"doc": doc, "detect_noop": True}
    params = dict(patch.params or {})
    source = patch.source
    if dated and "updated_utc" not in params:
        params["__esm_now"] = _now_text(repo)
        source = f"{source.rstrip().rstrip(';')};\nctx._source.updated_utc = params.__esm_now;"
    return {"script": {"source": source, "lang": "painless", "params": params}}


def _by_query_script(repo: Repository[Any], patch: PartialPatch | ScriptPatch) -> dict[str, Any]:
    body = _update_body(repo, patch)
    if "script" in body:
        return dict(body["script"])
    return {"source": _PARTIAL_SCRIPT, "lang": "painless", "params": {"__esm_doc": body["doc"]}}


def _raise_for(outcome: BulkOutcome, repo: Repository[Any]) -> None:
    kwargs: dict[str, Any] = {
        "index": outcome.index,
        "error_type": outcome.error_type,
        "reason": outcome.reason,
    }
    if outcome.status == 404:
        raise DocumentNotFoundError(str(outcome.id), **kwargs)
    if outcome.status == 409:
        raise VersionConflictError(
            f"version conflict patching {repo.info.name} {outcome.id!r}: {outcome.reason}",
            ids=[outcome.id],
            **kwargs,
        )
    raise DocumentError(
        f"patch of {repo.info.name} {outcome.id!r} failed with status {outcome.status}: "
        f"{outcome.error_type}: {outcome.reason}",
        ids=[outcome.id],
        **kwargs,
    )


def _after_patch(
    repo: Repository[Any], ids: list[str], options: Options, documents: list[Any] | None = None
) -> None:
    repo.mapper.invalidate_ids(repo.info, ids)
    if signals.has_receivers(signals.documents_changed, repo.model):
        signals.documents_changed.send(
            repo.model, documents=documents or [], change_type=ChangeType.SAVED, options=options
        )
    publish_changes(repo.mapper, repo.info, [(i, ChangeType.SAVED) for i in ids], options)


def patch_ids(
    repo: Repository[Any], ids: str | Iterable[str], patch: Patch, options: Options
) -> None:
    id_list = [ids] if isinstance(ids, str) else list(dict.fromkeys(ids))
    for id in id_list:
        check_id(id)
    if not id_list:
        return
    if isinstance(patch, PartialPatch | ScriptPatch):
        body = _update_body(repo, patch)
        targets = locate_documents(repo.mapper.client, repo.spec, id_list)
        # time-series ids stored nowhere: not found, like a 404 of the update
        missing = [
            BulkItemFailure(
                id, repo.spec.alias, "update", 404, "document_missing_exception", "document missing"
            )
            for id in id_list
            if id not in targets
        ]
        actions = [
            BulkAction(
                op="update",
                index=targets[id],
                id=id,
                body=body,
                retry_on_conflict=patch.retry_on_conflict,
            )
            for id in id_list
            if id in targets
        ]
        outcomes = (
            repo.mapper.writer.write(actions, refresh=refresh_param(options.consistency))
            if actions
            else []
        )
        changed = [o.id for o in outcomes if o.ok and o.result != "noop"]
        _after_patch(repo, [str(i) for i in changed], options)
        failed = [o for o in outcomes if not o.ok]
        if len(id_list) == 1 and missing:
            raise DocumentNotFoundError(id_list[0], index=repo.spec.alias)
        if failed or missing:
            if len(outcomes) == 1 and not missing:
                _raise_for(failed[0], repo)
            raise BulkWriteError([o.to_failure() for o in failed] + missing, changed)
        return
    if len(id_list) > 1:
        ids_query = Query.get_dsl_class("ids")(values=id_list)
        patch_all(repo, ids_query, patch, options.merge(soft_deletes="all"), notify_ids=id_list)
        return
    _patch_one_client_side(repo, id_list[0], patch, options)


def _patch_one_client_side(
    repo: Repository[Any], id: str, patch: JsonPatch | ActionPatch, options: Options
) -> None:
    if repo.spec.is_time_series:
        found = get_document(repo.mapper.client, repo.spec, id)
        if found is None:
            raise DocumentNotFoundError(id, index=repo.spec.alias)
        raw = found
    else:
        try:
            raw = repo.mapper.client.get(index=repo.spec.read_target, id=id).body
        except NotFoundError as exc:
            raise DocumentNotFoundError(id, index=repo.spec.alias) from exc
    outcome, document, original = _apply_client_side(repo, raw, patch, options)
    if outcome is None:
        return
    if not outcome.ok:
        _raise_for(outcome, repo)
    documents = [ModifiedDocument(document, original)] if isinstance(patch, ActionPatch) else []
    _after_patch(repo, [id], options, documents)


def _apply_client_side(
    repo: Repository[Any],
    raw: dict[str, Any],
    patch: JsonPatch | ActionPatch,
    options: Options,
    *,
    send: bool = True,
) -> tuple[Any, Any, Any]:
    """Apply ``patch`` to a hit; returns ``(outcome or action, document, original)``."""
    info = repo.info
    source = raw.get("_source") or {}
    version = f"{raw['_primary_term']}:{raw['_seq_no']}" if "_seq_no" in raw else None
    original = info.from_source(source, raw["_id"], version)
    if isinstance(patch, JsonPatch):
        if not patch.operations:
            return None, None, original
        try:
            new_source = jsonpatch.JsonPatch(list(patch.operations)).apply(source)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise DocumentError(
                f"JsonPatch of {info.name} {raw['_id']!r} failed: {exc}",
                ids=[raw["_id"]],
                index=raw.get("_index"),
                error_type="json_patch_failed",
                reason=str(exc),
            ) from exc
        if info.has_dates:
            new_source["updated_utc"] = _now_text(repo)
        document = info.from_source(new_source, raw["_id"], version)
    else:
        document = info.from_source(source, raw["_id"], version)
        if not patch.apply(document):
            return None, document, original
        if info.has_dates:
            document.updated_utc = repo.mapper.clock()
        new_source = info.to_source(document)
    action = BulkAction(
        op="index",
        index=raw.get("_index") or repo.spec.write_target,
        id=raw["_id"],
        body=new_source,
        if_seq_no=raw.get("_seq_no") if options.version_check else None,
        if_primary_term=raw.get("_primary_term") if options.version_check else None,
        ref=document,
    )
    if not send:
        return action, document, original
    outcome = repo.mapper.writer.write([action], refresh=refresh_param(options.consistency))[0]
    if outcome.ok:
        if info.versioned:
            document.version = outcome.version
        object.__setattr__(document, "_esm_state", DocState(new_source, outcome.index))
    return outcome, document, original


def _compile_query(
    repo: Repository[Any], filter: str | Query | None, options: Options
) -> dict[str, Any]:
    return repo.search(filter, **_option_kwargs(options)).query_body()


def _option_kwargs(options: Options) -> dict[str, Any]:
    """``options`` as keyword arguments for the internal searches of by-query writes
    (never cached under a caller's custom key: those keys are for the caller's reads)."""
    return {
        "consistency": options.consistency,
        "soft_deletes": options.soft_deletes,
        "cache": False if isinstance(options.cache, str) else options.cache,
        "notifications": options.notifications,
        "validate": options.validate,
        "version_check": options.version_check,
    }


def patch_all(
    repo: Repository[Any],
    filter: str | Query | None,
    patch: Patch,
    options: Options,
    *,
    notify_ids: list[str] | None = None,
) -> int:
    """See the module docstring. ``notify_ids``: publish one message per listed id (noop
    ids included) once anything changed, instead of one per changed id (FEATURES MB-5)."""
    query = _compile_query(repo, filter, options)
    if isinstance(patch, PartialPatch | ScriptPatch) and not repo.mapper.is_cached(repo.info):
        try:
            response = repo.mapper.client.update_by_query(
                index=repo.spec.write_target,
                query=query,
                script=_by_query_script(repo, patch),
                conflicts="proceed",
                refresh=bool(refresh_param(options.consistency, by_query=True)),
            ).body
        except NotFoundError as exc:
            if is_index_missing(exc):
                return 0
            raise
        if response.get("version_conflicts"):
            log.warning(
                "patch_all on %s: %s version conflicts were skipped",
                repo.spec.alias,
                response["version_conflicts"],
            )
        updated = int(response.get("updated", 0))
        if updated:
            if signals.has_receivers(signals.documents_changed, repo.model):
                signals.documents_changed.send(
                    repo.model, documents=[], change_type=ChangeType.SAVED, options=options
                )
            publish_changes(repo.mapper, repo.info, [(None, ChangeType.SAVED)], options)
        return updated

    changed = 0
    failures: list[BulkOutcome] = []

    def process(documents: list[Any]) -> bool:
        nonlocal changed
        actions = []
        for document in documents:
            state = document._esm_state
            raw = {
                "_id": document.id,
                "_source": state.original if state else {},
                "_index": state.index if state else None,
            }
            if document.version:
                term, seq = document.version.split(":")
                raw["_primary_term"], raw["_seq_no"] = int(term), int(seq)
            if isinstance(patch, PartialPatch | ScriptPatch):
                actions.append(
                    BulkAction(
                        op="update",
                        index=raw["_index"] or repo.spec.write_target,
                        id=document.id,
                        body=_update_body(repo, patch),
                        retry_on_conflict=patch.retry_on_conflict,
                        ref=document,
                    )
                )
                continue
            action, _, _ = _apply_client_side(repo, raw, patch, options, send=False)
            if action is not None:
                actions.append(action)
        if not actions:
            return True
        outcomes = repo.mapper.writer.write(actions)
        done = [str(o.id) for o in outcomes if o.ok and o.result != "noop"]
        failures.extend(o for o in outcomes if not o.ok)
        changed += len(done)
        if done:
            repo.mapper.invalidate_ids(repo.info, done)
            if notify_ids is None:
                _after_patch(repo, done, options)
        return True

    repo.batch_process(
        filter, process, batch_size=500, **_option_kwargs(options.merge(consistency="eventual"))
    )
    _final_refresh(repo, options)
    if notify_ids is not None and changed:
        _after_patch(repo, notify_ids, options)
    if failures:
        if all(o.status == 409 for o in failures):
            raise VersionConflictError(
                f"patch_all on {repo.info.name}: {len(failures)} document(s) changed "
                "concurrently and were not patched",
                ids=[o.id for o in failures],
                index=repo.spec.alias,
                error_type=failures[0].error_type,
                reason=failures[0].reason,
            )
        raise BulkWriteError([o.to_failure() for o in failures], [])
    return changed


def _final_refresh(repo: Repository[Any], options: Options) -> None:
    if options.consistency != "eventual":
        with contextlib.suppress(NotFoundError):
            repo.mapper.client.indices.refresh(index=repo.spec.alias)


def remove_all(repo: Repository[Any], filter: str | Query | None, options: Options) -> int:
    listened = any(signals.has_receivers(s, repo.model) for s in _REMOVE_SIGNALS)
    if not listened and not repo.mapper.is_cached(repo.info):
        query = _compile_query(repo, filter, options)
        total = 0
        for _attempt in range(10):
            try:
                response = repo.mapper.client.delete_by_query(
                    index=repo.spec.write_target,
                    query=query,
                    conflicts="proceed",
                    refresh=bool(refresh_param(options.consistency, by_query=True)),
                ).body
            except NotFoundError as exc:
                if is_index_missing(exc):
                    return total
                raise
            total += int(response.get("deleted", 0))
            if not response.get("version_conflicts"):
                break
        else:
            log.warning(
                "remove_all on %s: version conflicts remain after 10 attempts", repo.spec.alias
            )
        if total:
            publish_changes(repo.mapper, repo.info, [(None, ChangeType.REMOVED)], options)
        return total

    removed = 0

    def process(documents: list[Any]) -> bool:
        nonlocal removed
        pendings = [PendingWrite("remove", d, repo.info) for d in documents]
        removed += len(
            write_documents(repo.mapper, pendings, options.merge(consistency="eventual"))
        )
        return True

    repo.batch_process(
        filter, process, batch_size=500, **_option_kwargs(options.merge(consistency="eventual"))
    )
    _final_refresh(repo, options)
    return removed
