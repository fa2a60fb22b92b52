"""The C sources and shell scripts: the shim, the memory walk, the mpirun client, the
launchers' temporary-file notes, the ``testbed`` command and ``testbed-ssh``.

They live in ``native/`` at the top of the source tree and are installed as the package
``testbed.native`` (``[tool.setuptools]`` in pyproject.toml maps it here), so an installed
wheel has them in ``testbed/native/`` and an editable install finds them here.  ``DIR`` is
where they are either way; builds go to ``DIR / "build"`` (``testbed.emulation.build``).
"""

from pathlib import Path

DIR = Path(__file__).parent
