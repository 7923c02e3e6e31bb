"""Queries across a parent/child join (:mod:`esmapper._join`): ``has_child``,
``has_parent`` and ``parent_id`` as ``elasticsearch.dsl`` queries, for ``filter=`` of any
search of the other side (``find``, ``count``, ``exists``, ``patch_all``...), alone or
combined with ``&``, ``|`` and ``~``::

    companies.find(em.has_child(Employee, "email:ann@acme.com"))
    employees.find(em.has_parent(Organization, "name:acme") & Q("term", age=30))
    employees.count(em.parent_id(Employee, org.id))

The inner filter is the other model's filter language (or a DSL query), resolved against
that model's fields, with that model's soft-delete clause in the mode ``soft_deletes``
(``"active"``, the default: a soft-deleted child does not make its parent match, a
soft-deleted parent does not make its children match; ``"all"``: no clause;
``"deleted"``: the deleted ones only, for a model with soft deletes). Nothing is sent
when they are built; a bad filter raises :class:`~esmapper.errors.QueryValidationError`
then, a model outside a join ``TypeError``. The local test server does not run these
queries (a real cluster does).
"""

from __future__ import annotations

from esmapper._join import has_child, has_parent, parent_id

__all__ = ["has_child", "has_parent", "parent_id"]
