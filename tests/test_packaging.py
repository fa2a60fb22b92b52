"""What pyproject.toml ships.  ``native/`` lies outside ``testbed/`` and is mapped in as the
package ``testbed.native``, which setuptools' package finder cannot see, so the packages are
listed by hand (docs/architecture.md, Layout): these keep that list and the C sources' package
data whole, so that a new subpackage or source file is not left out of the wheel."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_directory_of_python_or_data_is_a_listed_package():
    found = {"testbed.native"} | {
        ".".join(directory.relative_to(ROOT).parts)
        for top in ("testbed", "benchmarks")
        for directory in [ROOT / top, *(ROOT / top).rglob("*")]
        if directory.is_dir() and "__pycache__" not in directory.parts
        and any(directory.glob("*.py")) | any(directory.glob("*.toml"))}
    assert sorted(SETUPTOOLS["packages"]) == sorted(found)
    assert SETUPTOOLS["package-dir"] == {"testbed.native": "native"}


def test_every_file_in_native_is_package_data():
    patterns = SETUPTOOLS["package-data"]["testbed.native"]
    missing = [path.name for path in (ROOT / "native").iterdir()
               if path.is_file() and path.suffix != ".py"
               and not any(fnmatch(path.name, pattern) for pattern in patterns)]
    assert missing == []
