"""The site's pages. Each takes the request's esmapper session,
:func:`esmapper.contrib.django.session`: what a page changes is written when it succeeds
(before it is sent), and nothing when it answers an error: a form sent back with its errors
(422) writes nothing of what the view had already changed."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

import esmapper as em
from esmapper.contrib.django import get_mapper, session
from examples.contacts_api.models import Contact

__all__ = [
    "add_field",
    "contact_form",
    "contact_list",
    "delete_contact",
    "restore_contact",
]

#: A custom field's type as the form shows it, by its index type.
FIELD_TYPES = {
    "string": "Text",
    "keyword": "Word",
    "int": "Whole number",
    "double": "Number",
    "bool": "Yes/no",
    "date": "Date",
}


def _contact(request: HttpRequest, id: str, *, deleted: bool = False) -> Contact:
    """The contact ``id`` (in the trash too with ``deleted``): a 404 page when there is none."""
    found = session(request).get(Contact, id, soft_deletes="all" if deleted else "active")
    if found is None:
        raise em.DocumentNotFoundError(id)  # the middleware's 404 page
    return found


def _fields(company: str) -> list[Any]:
    """The custom fields ``company`` defined, by name."""
    if not company:
        return []
    mapping = get_mapper().custom_fields(Contact).get_field_mapping(company)
    return sorted(mapping.values(), key=lambda d: d.name.lower())


def _parse(kind: str, raw: str) -> object:
    """The value typed in a custom field's box; raises ``ValueError``."""
    if kind == "int":
        return int(raw)
    if kind == "double":
        return float(raw)
    if kind == "bool":
        if raw.lower() not in ("yes", "no", "true", "false"):
            raise ValueError("yes or no")
        return raw.lower() in ("yes", "true")
    if kind == "date":
        return dt.date.fromisoformat(raw).isoformat()
    return raw


def contact_list(request: HttpRequest) -> HttpResponse:
    """The contacts matching ``q`` (of ``company``, whose custom fields ``q`` may name), or
    the trash (``trash=1``)."""
    q = request.GET.get("q", "").strip()
    company = request.GET.get("company", "").strip()
    trash = request.GET.get("trash") == "1"
    problem = ""
    try:
        found = session(request).find(
            Contact,
            q or None,
            tenant=company or None,
            sort="name.keyword",
            limit=100,
            soft_deletes="deleted" if trash else "active",
        )
        contacts, total = list(found), found.total
    except em.QueryValidationError as error:
        contacts, total, problem = [], 0, f"Invalid filter: {error}"
    context = {
        "contacts": contacts,
        "total": total,
        "q": q,
        "company": company,
        "trash": trash,
        "problem": problem,
    }
    return render(request, "contacts/list.html", context, status=422 if problem else 200)


def contact_form(request: HttpRequest, id: str | None = None) -> HttpResponse:
    """Create (no ``id``) or edit a contact. The edit names the version it was made from:
    another one is a 409 page (and so is a commit that loses to a concurrent save)."""
    contact = None if id is None else _contact(request, id)
    source = request.POST if request.method == "POST" else request.GET
    company = contact.company if contact is not None else source.get("company", "").strip()
    fields = _fields(company)
    errors: dict[str, str] = {}
    if request.method == "POST":
        form = request.POST
        if contact is None:
            contact = session(request).add(Contact(company=company))
        elif form.get("version") != contact.version:
            raise em.VersionConflictError(
                f"{contact.name} was changed by someone else since you opened the form: "
                "open it again",
                ids=[contact.id],
            )
        contact.name = form.get("name", "").strip()
        contact.email = form.get("email", "").strip()
        contact.tags = [t.strip() for t in form.get("tags", "").split(",") if t.strip()]
        custom: dict[str, object] = {}
        for field in fields:
            raw = form.get(f"custom.{field.name}", "").strip()
            if raw:
                try:
                    custom[field.name] = _parse(field.index_type, raw)
                except ValueError:
                    errors[field.name] = f"{field.name}: not a {FIELD_TYPES[field.index_type]}."
        contact.custom_fields = custom
        if not errors:
            try:
                session(request).flush()  # now: its errors are shown on the form
            except em.DocumentValidationError as error:
                errors[error.field or "name"] = str(error)
        if not errors:
            messages.success(request, f"{contact.name} was saved.")
            return redirect("contacts")
    values = _form_values(contact, request, company)
    context = {"contact": contact, "values": values, "fields": fields, "errors": errors}
    return render(request, "contacts/form.html", context, status=422 if errors else 200)


def _form_values(contact: Contact | None, request: HttpRequest, company: str) -> dict[str, Any]:
    if request.method == "POST":  # what was typed, to type again
        return {**request.POST.dict(), "company": company}
    if contact is None:
        return {"company": company}
    values = {
        "name": contact.name,
        "email": contact.email,
        "company": contact.company,
        "tags": ", ".join(contact.tags),
        "version": contact.version,
    }
    for name, value in (contact.custom_fields or {}).items():
        values[f"custom.{name}"] = ("yes" if value else "no") if isinstance(value, bool) else value
    return values


@require_POST
def delete_contact(request: HttpRequest, id: str) -> HttpResponse:
    """Move the contact to the trash (written by the commit, before the redirect is sent)."""
    contact = _contact(request, id)
    contact.is_deleted = True
    messages.success(request, f"{contact.name} was moved to the trash.")
    return redirect("contacts")


@require_POST
def restore_contact(request: HttpRequest, id: str) -> HttpResponse:
    """Take the contact out of the trash."""
    contact = _contact(request, id, deleted=True)
    contact.is_deleted = False
    messages.success(request, f"{contact.name} was restored.")
    return redirect("contacts")


def add_field(request: HttpRequest, company: str) -> HttpResponse:
    """A company's custom fields, and a form to define one (written at once, not by the
    session)."""
    error = ""
    if request.method == "POST":
        name, kind = request.POST.get("name", "").strip(), request.POST.get("type", "")
        try:
            get_mapper().custom_fields(Contact).add_field(company, name, kind)
        except (ValueError, em.EsmapperError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"{company} has a new field: {name}.")
            return redirect("fields", company=company)
    context = {"company": company, "fields": _fields(company), "types": FIELD_TYPES, "error": error}
    return render(request, "contacts/fields.html", context, status=422 if error else 200)
