"""Runnable examples of esmapper (not part of the installed package)."""
