"""``python -m examples.contacts_api``: serve the contacts API (see :mod:`.run`)."""

import sys

from examples.contacts_api.run import main

sys.exit(main())
