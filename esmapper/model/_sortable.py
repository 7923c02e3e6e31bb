"""Text fields with a keyword and a sort subfield (the reference's
``AddKeywordAndSortFields()`` and ``AddSortNormalizer()``).

:func:`keyword_and_sort_fields` gives the subfields of a text field: ``keyword`` (exact
matches, terms aggregations) and ``sort`` (a keyword normalized by the ``sort`` normalizer:
lowercased and ASCII-folded, so ``"émile"`` sorts with ``"Emile"``). The query layer sorts a
text field on its ``sort`` subfield when it has one (``FieldCatalog``). A mapping naming the
``sort`` normalizer needs it in the index's analysis settings: :func:`with_sort_normalizer`
adds it to the settings every index of the model is created with (``IndexSpec.body``), unless
the model's ``Index.settings`` define a ``sort`` normalizer of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticsearch.dsl import Keyword

__all__ = [
    "SORT_NORMALIZER",
    "keyword_and_sort_fields",
    "uses_sort_normalizer",
    "with_sort_normalizer",
]

#: The ``sort`` normalizer: lowercase, then fold accents (the reference's sort normalizer).
SORT_NORMALIZER: Mapping[str, Any] = {"type": "custom", "filter": ["lowercase", "asciifolding"]}


def keyword_and_sort_fields(ignore_above: int | None = 256) -> dict[str, Keyword]:
    """The subfields of a text field that also matches exactly and sorts:
    ``em.Text(fields=em.keyword_and_sort_fields())`` maps ``name`` (text), ``name.keyword``
    (a keyword, values longer than ``ignore_above`` characters not indexed; ``None``: no
    limit) and ``name.sort`` (a keyword with the ``sort`` normalizer, which esmapper adds to
    the index settings)."""
    keyword = Keyword() if ignore_above is None else Keyword(ignore_above=ignore_above)
    sort = Keyword(normalizer="sort")
    if ignore_above is not None:
        sort = Keyword(normalizer="sort", ignore_above=ignore_above)
    return {"keyword": keyword, "sort": sort}


def uses_sort_normalizer(mapping: Any) -> bool:
    """Whether a mapping (any part of one) names the ``sort`` normalizer."""
    if isinstance(mapping, Mapping):
        if mapping.get("normalizer") == "sort":
            return True
        return any(uses_sort_normalizer(v) for v in mapping.values())
    if isinstance(mapping, list | tuple):
        return any(uses_sort_normalizer(v) for v in mapping)
    return False


def with_sort_normalizer(settings: Mapping[str, Any], mapping: Any) -> dict[str, Any]:
    """``settings`` (an index's, as ``Index.settings`` gives them) with the ``sort``
    normalizer in ``analysis.normalizer`` when ``mapping`` names it and the settings do not
    define one (flat ``index.analysis`` keys included); otherwise a copy of ``settings``."""
    result = dict(settings)
    if not uses_sort_normalizer(mapping):
        return result
    index = result.get("index")
    nested = index.get("analysis") if isinstance(index, Mapping) else None
    for analysis in (result.get("analysis"), nested):
        if isinstance(analysis, Mapping) and "sort" in (analysis.get("normalizer") or {}):
            return result
    if any(
        key.startswith(("analysis.normalizer.sort.", "index.analysis.normalizer.sort."))
        for key in result
    ):
        return result
    analysis = dict(result.get("analysis") or {})
    analysis["normalizer"] = {**(analysis.get("normalizer") or {}), "sort": dict(SORT_NORMALIZER)}
    result["analysis"] = analysis
    return result
