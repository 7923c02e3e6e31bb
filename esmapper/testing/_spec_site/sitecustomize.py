"""Record this subprocess's Elasticsearch requests for the spec check of the test run that
started it (``ESMAPPER_SPEC_LOG`` names the directory), then run the ``sitecustomize`` this one
shadows, if any.

Python imports ``sitecustomize`` at start-up from the first ``sys.path`` entry that has one;
the pytest plugin's ``--es-spec`` puts this directory first on ``PYTHONPATH``. Start-up only
adds an import hook (nothing is imported here): when ``elastic_transport`` is first imported,
the recorder (``esmapper/testing/_spec_recorder.py``, loaded by path: importing ``esmapper``
would slow every subprocess and change what it imports first) patches it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at start-up: every subprocess would pay for it
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_RECORDER = os.path.join(os.path.dirname(_HERE), "_spec_recorder.py")


def _record(module: ModuleType, directory: str) -> None:
    """Load the recorder by path and patch ``module`` (``elastic_transport``) with it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_esmapper_spec_recorder", _RECORDER)
    if spec is None or spec.loader is None:
        return
    recorder = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = recorder
    spec.loader.exec_module(recorder)
    os.makedirs(directory, exist_ok=True)
    recorder.patch_transport(module, directory)


class _RecordOnImport:
    """A meta path finder that lets ``elastic_transport`` import as usual, then records it
    (it leaves ``sys.meta_path`` at its first use)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if fullname != "elastic_transport":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        loader: Any = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module
        directory = self.directory

        def exec_module(module: ModuleType) -> None:
            execute(module)
            try:
                _record(module, directory)
            except Exception as exc:  # a broken recorder must not stop the subprocess
                print(f"esmapper spec recorder not installed: {exc!r}", file=sys.stderr)

        loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` (the one this file shadows)."""
    import importlib.machinery

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_directory = os.environ.get("ESMAPPER_SPEC_LOG", "")
if _directory:
    sys.meta_path.insert(0, _RecordOnImport(os.path.abspath(_directory)))
_chain()
