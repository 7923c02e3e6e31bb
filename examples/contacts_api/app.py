"""The contacts API: list, filter, read, create, edit, delete (to the trash) and restore
contacts, and define a company's custom fields, as JSON endpoints.

Every endpoint that takes ``session: SessionDep`` gets the request's esmapper session
(:mod:`esmapper.contrib.fastapi`): what it changes is written when the request succeeds,
before the response is sent, and nothing is written when it fails. The endpoints that answer
with what a write gives back (the new id, the new version) call ``session.flush()``
themselves; the others leave the write to the commit. Errors are JSON: 404 for a contact
that does not exist, 409 for an edit over another version, 422 for an invalid filter or
contact.

``uvicorn examples.contacts_api.app:app`` serves :data:`app`, whose mapper the lifespan
builds from the environment in each worker process (see :mod:`.models`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, Query, Request, Response
from pydantic import BaseModel, Field

import esmapper as em
from esmapper.contrib.fastapi import EsmapperFastAPI, EsmapperRoute, MapperDep, SessionDep
from examples.contacts_api.models import Contact, build_mapper

__all__ = [
    "ContactEdit",
    "ContactIn",
    "ContactOut",
    "ContactPage",
    "FieldIn",
    "FieldOut",
    "app",
    "create_app",
    "router",
]

FieldType = Literal["string", "keyword", "int", "double", "bool", "date"]


class ContactIn(BaseModel):
    """A new contact."""

    name: str
    email: str = ""
    company: str
    tags: list[str] = Field(default_factory=list)
    custom_fields: dict[str, Any] = Field(default_factory=dict)


class ContactEdit(BaseModel):
    """Changes to a contact: the fields given are changed, the others kept."""

    version: str | None = Field(
        default=None, description="The version the change was made from: another is a 409."
    )
    name: str | None = None
    email: str | None = None
    tags: list[str] | None = None
    custom_fields: dict[str, Any] | None = Field(
        default=None, description="Merged into the contact's; a null value removes a field."
    )


class ContactOut(BaseModel):
    """A stored contact."""

    id: str
    version: str | None
    name: str
    email: str
    company: str
    tags: list[str]
    custom_fields: dict[str, Any]
    deleted: bool
    created_utc: dt.datetime | None
    updated_utc: dt.datetime | None

    @classmethod
    def of(cls, contact: Contact) -> ContactOut:
        assert contact.id is not None
        return cls(
            id=contact.id,
            version=contact.version,
            name=contact.name,
            email=contact.email,
            company=contact.company,
            tags=list(contact.tags),
            custom_fields=dict(contact.custom_fields or {}),
            deleted=contact.is_deleted,
            created_utc=contact.created_utc,
            updated_utc=contact.updated_utc,
        )


class ContactPage(BaseModel):
    """A page of a search: ``total`` matches in all."""

    total: int
    contacts: list[ContactOut]


class FieldIn(BaseModel):
    """A custom field of a company."""

    name: str
    type: FieldType


class FieldOut(BaseModel):
    """A company's custom field and the slot it is stored in."""

    name: str
    type: str
    slot: str


router = APIRouter(route_class=EsmapperRoute)


def _contact(session: em.Session, id: str, *, deleted: bool = False) -> Contact:
    """The contact ``id`` (in the trash too when ``deleted``); 404 when there is none."""
    found = session.get(Contact, id, soft_deletes="all" if deleted else "active")
    if found is None:
        raise em.DocumentNotFoundError(id)
    return found


@router.get("/contacts")
def list_contacts(
    session: SessionDep,
    *,
    company: str | None = None,
    q: Annotated[str | None, Query(description="A filter, e.g. `level:>=3 AND tags:vip`")] = None,
    sort: str = "name.keyword",
    page: Annotated[int, Query(ge=1)] = 1,
    size: Annotated[int, Query(ge=1, le=100)] = 20,
    deleted: bool = False,
) -> ContactPage:
    """Contacts matching ``q`` (of ``company``, whose custom fields the filter and the sort
    may name), sorted by ``sort``; the trash with ``deleted=true``."""
    found = session.find(
        Contact,
        q or None,
        tenant=company or None,
        sort=sort,
        page=page,
        limit=size,
        soft_deletes="deleted" if deleted else "active",
    )
    return ContactPage(total=found.total, contacts=[ContactOut.of(c) for c in found])


@router.get("/contacts/{id}")
def read_contact(id: str, session: SessionDep, deleted: bool = False) -> ContactOut:
    """The contact ``id`` (also in the trash with ``deleted=true``)."""
    return ContactOut.of(_contact(session, id, deleted=deleted))


@router.post("/contacts", status_code=201)
def create_contact(new: ContactIn, session: SessionDep) -> ContactOut:
    """Add a contact (flushed here: the answer has its id and version)."""
    contact = session.add(Contact(**new.model_dump()))
    session.flush()
    return ContactOut.of(contact)


@router.patch("/contacts/{id}")
def edit_contact(id: str, edit: ContactEdit, session: SessionDep) -> ContactOut:
    """Change the fields given; 409 when ``version`` is not the stored one (or another
    request saves first)."""
    contact = _contact(session, id)
    if edit.version is not None and edit.version != contact.version:
        raise em.VersionConflictError(
            f'Contact "{id}" changed since version {edit.version}: read it again', ids=[id]
        )
    for name in ("name", "email", "tags"):
        value = getattr(edit, name)
        if value is not None:
            setattr(contact, name, value)
    if edit.custom_fields is not None:
        merged = {**(contact.custom_fields or {}), **edit.custom_fields}
        contact.custom_fields = {k: v for k, v in merged.items() if v is not None}
    session.flush()  # the answer carries the new version
    return ContactOut.of(contact)


@router.delete("/contacts/{id}", status_code=204)
def delete_contact(id: str, session: SessionDep) -> None:
    """Move the contact to the trash (written by the commit, before the 204 is sent)."""
    _contact(session, id).is_deleted = True


@router.post("/contacts/{id}/restore", status_code=204)
def restore_contact(id: str, session: SessionDep) -> None:
    """Take the contact out of the trash."""
    _contact(session, id, deleted=True).is_deleted = False


@router.get("/companies/{company}/fields")
def list_fields(company: str, mapper: MapperDep) -> list[FieldOut]:
    """The custom fields ``company`` defined."""
    mapping = mapper.custom_fields(Contact).get_field_mapping(company)
    return [
        FieldOut(name=d.name, type=d.index_type, slot=d.slot_name)
        for d in sorted(mapping.values(), key=lambda d: d.name.lower())
    ]


@router.post("/companies/{company}/fields", status_code=201)
def add_field(company: str, field: FieldIn, mapper: MapperDep) -> FieldOut:
    """Define a custom field for ``company`` (written at once, not by the session)."""
    added = mapper.custom_fields(Contact).add_field(company, field.name, field.type)
    return FieldOut(name=added.name, type=added.index_type, slot=added.slot_name)


async def _name_the_worker(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    response = await call_next(request)
    response.headers["X-Worker"] = str(os.getpid())
    return response


def create_app(mapper: em.Mapper | Callable[[], em.Mapper] = build_mapper) -> FastAPI:
    """The application on ``mapper``: a :class:`~esmapper.Mapper` (yours to close), or a
    function the lifespan calls at start-up for one (closed at shutdown). Every response
    names its worker process in an ``X-Worker`` header."""
    esm = EsmapperFastAPI(mapper, consistency="wait")  # a write is searchable when answered
    application = FastAPI(title="Contacts", lifespan=esm.lifespan)
    esm.init_app(application)
    application.include_router(router)
    application.middleware("http")(_name_the_worker)
    return application


#: The application ``uvicorn examples.contacts_api.app:app`` serves.
app = create_app()
