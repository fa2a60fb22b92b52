"""Bad input by the thousand (Hypothesis): workload, SWF, class-table and host files and the
service's messages.  Every input ends in a valid result or in the reader's own error, one line
naming the file (and line, where there is one), never in another exception.

Inputs are real files mutated (lines dropped, doubled, swapped, cut; words replaced by others
of the corpus or by odd tokens; bytes that are not UTF-8) and arbitrary text.  The run is
bounded and derandomized, so CI sees the same inputs each time: ``EXAMPLES`` per reader.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.class_tables import DEFAULT_TABLE, ClassTableError, load_class_table
from testbed.hosts import HostsError, read_hostfile
from testbed.service.protocol import REQUEST_TYPES, ProtocolError, decode_body, parse_request
from testbed.workloads.files import WorkloadError, load_workload
from testbed.workloads.swf import SwfError, read_swf

EXAMPLES = 400
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

WORKLOAD = """\
# testbed: compress=100 seed=1
# arrival pes command...
0     2  bsp --work 10 --pattern nn --io 0.1 --mem 20M
1.5   2  limit=30 user=ann mem=300M id=4 python3 prog.py --size 1000
3     1  estimate=40 class=batch bsp --work 30 --variance 0.2 --granularity 0.05
4     2  after=4 id=5 prime bsp --work 5 --pattern aa
owner 7 1 20
"""
SWF = """\
; Version: 2.2
; MaxProcs: 64
1 0 10 100 4 -1 -1 4 200 -1 1 3 1 1 1 -1 -1 -1
2 5 0 50 8 -1 -1 8 60 -1 1 4 1 2 1 -1 1 10
"""
HOSTFILE = "# hosts\nnode1:2\nnode2\nnode3:4  # a comment\n"
ODD = ["", " ", "-1", "0", "1e309", "nan", "inf", "-0", "=", "id=", "id=1", "after=9",
       "limit=-3", "mem=1X", "pes", "\t", "#", "owner", ";", ":", "x" * 300, "\u00e9", "1.5.5",
       "[", "]", "{", '"', "0x10", "1_000", "9" * 40]


def _mutated(text: str) -> st.SearchStrategy[bytes]:
    """Mutations of ``text``: its lines dropped, doubled, swapped or cut, its words replaced
    by other words of it or by odd tokens, and stray bytes that are not UTF-8."""
    lines = text.splitlines()
    words = sorted({w for line in lines for w in line.split()}) + ODD

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        out = list(lines)
        for _ in range(draw(st.integers(1, 6))):
            if not out:
                out.append(draw(st.sampled_from(lines)))
            i = draw(st.integers(0, len(out) - 1))
            kind = draw(st.sampled_from(["drop", "double", "swap", "cut", "word", "insert"]))
            if kind == "drop":
                del out[i]
            elif kind == "double":
                out.insert(i, out[i])
            elif kind == "swap":
                j = draw(st.integers(0, len(out) - 1))
                out[i], out[j] = out[j], out[i]
            elif kind == "cut":
                out[i] = out[i][:draw(st.integers(0, max(0, len(out[i]))))]
            elif kind == "word":
                parts = out[i].split() or [""]
                parts[draw(st.integers(0, len(parts) - 1))] = draw(st.sampled_from(words))
                out[i] = " ".join(parts)
            else:
                out.insert(i, draw(st.text(max_size=60)))
        data = "\n".join(out).encode("utf-8", "surrogatepass")
        if draw(st.booleans()) and data:
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from([b"\xff", b"\x00", b"\xc3", b"\r"])) + \
                data[at:]
        return data

    return st.one_of(mutate(), st.binary(max_size=200),
                     st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory(prefix="testbed-fuzz-") as directory:
        yield Path(directory)


def _read(scratch: Path, name: str, data: bytes, reader: Any, error: type[Exception]) -> Any:
    """``reader`` of ``data`` written to ``scratch/name``: its result, or None when it raised
    ``error`` as one line starting with the file's path (any other exception fails)."""
    path = scratch / name
    path.write_bytes(data)
    try:
        return reader(path)
    except error as err:
        message = str(err)
        assert "\n" not in message.strip(), message
        assert message.startswith(str(path)), message
        return None


@FUZZ
@given(data=_mutated(WORKLOAD))
def test_workload_files(scratch, data):
    workload = _read(scratch, "workload.txt", data, load_workload, WorkloadError)
    if workload is not None:
        ids = [j.source_id for j in workload.jobs if j.source_id is not None]
        assert len(ids) == len(set(ids))
        assert all(j.pes >= 1 and j.arrival >= 0 for j in workload.jobs)


@FUZZ
@given(data=_mutated(SWF))
def test_swf_files(scratch, data):
    _read(scratch, "trace.swf", data, read_swf, SwfError)


@FUZZ
@given(data=_mutated(DEFAULT_TABLE.read_text()), pes=st.integers(1, 512))
def test_class_tables(scratch, data, pes):
    _read(scratch, "classes.toml", data, lambda path: load_class_table(path, pes),
          ClassTableError)


@FUZZ
@given(data=_mutated(HOSTFILE))
def test_hostfiles(scratch, data):
    hosts = _read(scratch, "hosts", data, read_hostfile, HostsError)
    if hosts is not None:
        assert hosts and all(h.slots >= 1 for h in hosts)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
FIELD_NAMES = sorted({f.name for kind in REQUEST_TYPES.values() for f in fields(kind)})
REQUEST = st.fixed_dictionaries(
    {"type": st.sampled_from([*REQUEST_TYPES, "x"])},
    optional={name: JSON for name in FIELD_NAMES})


@FUZZ
@given(body=st.one_of(st.binary(max_size=300),
                      JSON.map(lambda v: json.dumps(v).encode()),
                      REQUEST.map(lambda v: json.dumps(v).encode())))
def test_service_messages(body):
    try:
        message = decode_body(body)
        parse_request(message)
    except ProtocolError as err:
        assert "\n" not in str(err).strip()
