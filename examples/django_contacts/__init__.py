"""The contacts, as a Django site: list, filter, create, edit, delete (to the trash) and
restore contacts, and define a company's custom fields, as HTML pages.

The model is the contacts API's (:class:`examples.contacts_api.models.Contact`: per-company
custom fields, soft deletes, versions), served here by Django through
:mod:`esmapper.contrib.django`: ``settings.ESMAPPER`` (:mod:`.settings`), one session per
request committed when the page succeeds (:mod:`.middleware`), ``python -m
examples.django_contacts.manage esmapper migrate``. ``python -m examples.django_contacts``
serves it with two worker processes sharing an embedded Redis (:mod:`.run`).
"""
