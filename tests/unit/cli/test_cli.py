from click.testing import CliRunner

import esmapper
from esmapper.cli import main


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"esmapper, version {esmapper.__version__}"
