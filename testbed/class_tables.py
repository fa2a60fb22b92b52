"""Reading T3D job-class tables (TOML, ``testbed/data/t3d_daytime.toml`` is the default).

A table names each class's ``priority``, ``max_wait`` (s), ``dnd_multiplier`` (s per PE),
``pe_limit`` and optionally ``preemptable`` (default true), the global ``large_size``,
``large_limit``, ``job_limit`` and ``system_limit`` (PEs), the ``[defaults]`` class of
``interactive`` and ``batch`` jobs, and ``reference_pes`` and ``time_scale``: PE figures are
scaled to the machine by ``PEs / reference_pes`` and times by ``time_scale``.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from testbed.policies.classes import ClassTable, JobClass

DEFAULT_TABLE = Path(__file__).parent / "data" / "t3d_daytime.toml"
CLASS_KEYS = {"priority", "max_wait", "dnd_multiplier", "pe_limit", "preemptable"}
TOP_KEYS = {"reference_pes", "time_scale", "large_size", "large_limit", "job_limit",
            "system_limit", "defaults", "classes"}


class ClassTableError(ValueError):
    """A bad class table: says the file and the field."""

    def __init__(self, path: Path, field: str, problem: str) -> None:
        super().__init__(f"{path}: field '{field}': {problem}")


def _number(path: Path, data: dict[str, Any], key: str, where: str, integer: bool,
            minimum: float) -> float:
    field = f"{where}{key}"
    if key not in data:
        raise ClassTableError(path, field, "missing")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            integer and not isinstance(value, int)):
        raise ClassTableError(path, field, f"expected {'an integer' if integer else 'a number'}"
                                           f", got {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise ClassTableError(path, field, f"must be >= {minimum:g}, got {value!r}")
    return value


def load_class_table(path: Path | None, pes: int) -> ClassTable:
    """The table at ``path`` (default: T3D's daytime table) scaled to ``pes`` PEs; raises
    ``ClassTableError`` naming the file and field of the first problem."""
    path = path or DEFAULT_TABLE
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise ClassTableError(path, "file", err.strerror or str(err)) from None
    except UnicodeDecodeError:
        raise ClassTableError(path, "file", "not a text file") from None
    except tomllib.TOMLDecodeError as err:
        raise ClassTableError(path, "syntax", str(err)) from None
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ClassTableError(path, sorted(unknown)[0], "unknown key")
    classes: dict[str, JobClass] = {}
    raw_classes = data.get("classes")
    if not isinstance(raw_classes, dict) or not raw_classes:
        raise ClassTableError(path, "classes", "no [classes.NAME] table")
    for name, raw in raw_classes.items():
        where = f"classes.{name}."
        if not isinstance(raw, dict):
            raise ClassTableError(path, f"classes.{name}", "expected a table")
        if set(raw) - CLASS_KEYS:
            raise ClassTableError(path, where + sorted(set(raw) - CLASS_KEYS)[0], "unknown key")
        preemptable = raw.get("preemptable", True)
        if not isinstance(preemptable, bool):
            raise ClassTableError(path, where + "preemptable", f"expected true or false, got "
                                                               f"{preemptable!r}")
        classes[name] = JobClass(
            name, int(_number(path, raw, "priority", where, True, -math.inf)),
            _number(path, raw, "max_wait", where, False, 0),
            _number(path, raw, "dnd_multiplier", where, False, 0),
            int(_number(path, raw, "pe_limit", where, True, 1)), preemptable)
    defaults = data.get("defaults", {})
    for kind, fallback in (("interactive", "interactive"), ("batch", "production")):
        name = defaults.get(kind, fallback)
        if name not in classes:
            raise ClassTableError(path, f"defaults.{kind}", f"no class {name!r}")
    table = ClassTable(classes, *(int(_number(path, data, key, "", True, 1)) for key in
                                  ("large_size", "large_limit", "job_limit", "system_limit")),
                       defaults.get("interactive", "interactive"),
                       defaults.get("batch", "production"))
    reference = int(_number(path, data, "reference_pes", "", True, 1))
    scale = _number(path, data, "time_scale", "", False, 0) if "time_scale" in data else 1.0
    return table.scaled(pes, reference, scale)
