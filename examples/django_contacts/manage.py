"""The site's ``manage.py``: ``python -m examples.django_contacts.manage esmapper migrate``
(or ``status``, or any ``esmapper`` command) with the mapper of its settings."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_contacts.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
