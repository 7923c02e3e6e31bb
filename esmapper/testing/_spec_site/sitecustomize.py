"""Record this subprocess's Elasticsearch requests for the spec check of the test run that
started it (``ESMAPPER_SPEC_LOG`` names the directory), then run the ``sitecustomize`` this one
shadows, if any.

Python imports ``sitecustomize`` at start-up from the first ``sys.path`` entry that has one;
the pytest plugin's ``--es-spec`` puts this directory first on ``PYTHONPATH``. The recorder is
loaded by path (importing ``esmapper`` here would slow every subprocess and change what it
imports first) and patches ``elastic_transport`` only when that is imported.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    directory = os.environ.get("ESMAPPER_SPEC_LOG", "")
    if not directory:
        return
    path = os.path.join(os.path.dirname(_HERE), "_spec_recorder.py")
    spec = importlib.util.spec_from_file_location("_esmapper_spec_recorder", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install_on_import(directory)


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` (the one this file shadows)."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _install()
except Exception as exc:  # a broken recorder must not stop the subprocess
    print(f"esmapper spec recorder not installed: {exc!r}", file=sys.stderr)
_chain()
