"""The site's addresses."""

from __future__ import annotations

from django.urls import path
from django.views.generic.base import RedirectView

from examples.django_contacts import views

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="contacts")),
    path("contacts/", views.contact_list, name="contacts"),
    path("contacts/new", views.contact_form, name="new"),
    path("contacts/<str:id>/edit", views.contact_form, name="edit"),
    path("contacts/<str:id>/delete", views.delete_contact, name="delete"),
    path("contacts/<str:id>/restore", views.restore_contact, name="restore"),
    path("companies/<str:company>/fields", views.add_field, name="fields"),
]
