"""``python -m examples.django_contacts``: serve the Django contacts site (see :mod:`.run`)."""

import sys

from examples.django_contacts.run import main

sys.exit(main())
