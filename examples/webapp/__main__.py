"""``python -m examples.webapp``: serve the employee directory (see :mod:`.run`)."""

import sys

from examples.webapp.run import main

sys.exit(main())
