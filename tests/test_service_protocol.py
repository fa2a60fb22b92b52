"""The service wire protocol: framing, request validation, replies."""

from __future__ import annotations

import json
import random
import socket
from typing import Any

import pytest

from testbed.service import protocol
from testbed.service.protocol import (
    HEADER,
    MAX_ARG,
    MAX_ARGV,
    MAX_ENV,
    MAX_LINES,
    MAX_MESSAGE,
    MAX_NAME,
    MAX_PATH,
    MAX_RANKS,
    OUTPUT_CHUNK,
    Cancel,
    Decoder,
    ProtocolError,
    Queue,
    Resume,
    Shutdown,
    Submit,
    SubmitWorkload,
    Suspend,
    decode_body,
    decode_output,
    encode,
    parse_request,
)

MESSAGES: list[dict[str, Any]] = [
    {"type": "ok"},
    {"type": "submit", "argv": ["prog", "é", "日本", "\U0001f600", "\udcff"], "n": [1, 2.5, None]},
    {"type": "error", "message": "x" * 1000, "nested": {"a": {"b": [True, False]}}},
]


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


# --- framing ---------------------------------------------------------------------------------


def test_encode_is_a_big_endian_length_then_ascii_json():
    data = encode({"type": "ok", "text": "é"})
    body = b'{"type":"ok","text":"\\u00e9"}'
    assert data == len(body).to_bytes(4, "big") + body


def test_messages_round_trip_through_encode_and_decoder():
    data = b"".join(encode(m) for m in MESSAGES)
    decoder = Decoder()
    assert decoder.feed(data) == MESSAGES
    assert decoder.buffered == 0


def test_split_feeds_at_every_byte_boundary_give_the_same_messages():
    data = encode(MESSAGES[0]) + encode(MESSAGES[1])
    for cut in range(len(data) + 1):
        decoder = Decoder()
        first = decoder.feed(data[:cut])
        assert decoder.buffered == cut - sum(len(encode(m)) for m in first)
        assert first + decoder.feed(data[cut:]) == MESSAGES[:2], cut
        assert decoder.buffered == 0


def test_byte_at_a_time_feed_yields_each_message_when_its_last_byte_arrives():
    sizes = [len(encode(m)) for m in MESSAGES]
    data = b"".join(encode(m) for m in MESSAGES)
    decoder = Decoder()
    completed_at = []
    for i in range(len(data)):
        if decoder.feed(data[i:i + 1]):
            completed_at.append(i + 1)
    assert completed_at == [sum(sizes[:k + 1]) for k in range(len(sizes))]


def test_an_oversized_length_is_refused_before_any_body_arrives():
    decoder = Decoder()
    header = HEADER.pack(MAX_MESSAGE + 1)
    assert decoder.feed(header[:3]) == []
    with pytest.raises(ProtocolError, match="exceeds"):
        decoder.feed(header[3:])


def test_a_body_of_exactly_max_message_bytes_is_accepted():
    body = b'{"a":"' + b"x" * (MAX_MESSAGE - 8) + b'"}'
    assert len(body) == MAX_MESSAGE
    assert Decoder().feed(frame(body)) == [{"a": "x" * (MAX_MESSAGE - 8)}]


def test_encode_refuses_a_message_over_the_limit():
    with pytest.raises(ProtocolError, match="exceeds"):
        encode({"a": "x" * MAX_MESSAGE})


@pytest.mark.parametrize("message", [{"a": float("nan")}, {"a": float("inf")}, {"a": object()},
                                     {"a": b"bytes"}])
def test_encode_refuses_what_json_cannot_carry(message):
    with pytest.raises(ProtocolError):
        encode(message)


BAD_BODIES = [
    pytest.param(b"", id="empty"),
    pytest.param(b'{"a":"\xff"}', id="invalid-utf8"),
    pytest.param(b'{"a":"\xed\xa0\x80"}', id="utf8-encoded-surrogate"),
    pytest.param(b'{"a":', id="truncated-json"),
    pytest.param(b"{'a': 1}", id="not-json"),
    pytest.param(b"[1, 2]", id="list"),
    pytest.param(b'"text"', id="string"),
    pytest.param(b"3", id="number"),
    pytest.param(b"null", id="null"),
    pytest.param(b'{"a":NaN}', id="nan"),
    pytest.param(b'{"a":-Infinity}', id="infinity"),
    pytest.param(b'{"a":1,"a":2}', id="duplicate-key"),
    pytest.param(b"[" * 100_000, id="deep-nesting"),
    pytest.param(b'{"a":1} {"b":2}', id="two-objects"),
]


@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_bodies_are_protocol_errors(body):
    with pytest.raises(ProtocolError):
        decode_body(body)
    with pytest.raises(ProtocolError):
        Decoder().feed(frame(body))


def test_a_failed_decoder_refuses_everything_after():
    decoder = Decoder()
    with pytest.raises(ProtocolError):
        decoder.feed(frame(b"[]") + b"\x00\x00")  # a bad message, then part of the next
    assert decoder.buffered == 0
    with pytest.raises(ProtocolError, match="already failed"):
        decoder.feed(encode({"type": "ok"}))


@pytest.fixture
def pair():
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # a guard, not a timing assumption: a read that wrongly blocks fails instead of hanging
    left.settimeout(5)
    right.settimeout(5)
    yield left, right
    left.close()
    right.close()


def test_send_and_recv_round_trip_then_none_on_clean_eof(pair):
    left, right = pair
    for message in MESSAGES:
        protocol.send(left, message)
    left.close()
    assert [protocol.recv(right) for _ in MESSAGES] == MESSAGES
    assert protocol.recv(right) is None


@pytest.mark.parametrize("partial", [b"\x00\x00", frame(b'{"a":1}')[:-2]],
                         ids=["mid-header", "mid-body"])
def test_recv_raises_on_eof_inside_a_message(pair, partial):
    left, right = pair
    left.sendall(partial)
    left.close()
    with pytest.raises(ProtocolError, match="closed in the middle"):
        protocol.recv(right)


def test_recv_refuses_an_oversized_length_without_reading_a_body(pair):
    left, right = pair
    left.sendall(HEADER.pack(MAX_MESSAGE + 1))  # no body follows; the peer stays open
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.recv(right)


def test_recv_raises_on_a_bad_body(pair):
    left, right = pair
    left.sendall(frame(b"[1]"))
    with pytest.raises(ProtocolError, match="not an object"):
        protocol.recv(right)


# --- requests --------------------------------------------------------------------------------


def submit_message(**changes: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "submit", "argv": ["./prog", "--size", "10"], "ranks": 2,
        "env": {"OMP_NUM_THREADS": "1", "_X9": ""}, "cwd": "/home/ann/run", "limit": 30,
        "user_label": "ann", "job_class": "short-1.x", "mem_mb": 512.5, "follow": True,
    }
    message.update(changes)
    return message


REQUESTS = [
    Submit(("./prog", "--size", "10"), 2, {"OMP_NUM_THREADS": "1", "_X9": ""}, "/home/ann/run",
           30.0, "ann", "short-1.x", 512.5, True),
    Submit(("prog",), 1, {}, "/", None, "", "", None, False),
    SubmitWorkload(("# testbed: compress=10", "", "0 2 bsp --work 1"), "jobs.txt"),
    Queue(),
    Cancel("j12"),
    Suspend("j3"),
    Resume("j3"),
    Shutdown(),
    protocol.Mpirun("mpiexec", ("-n", "2", "./prog", "\udcff"), {"PATH": "/bin", "_": ""},
                    "/home/ann"),
    protocol.Mpirun("mpirun", (), {}, "/"),
]


def test_submit_message_parses_field_by_field():
    request = parse_request(submit_message())
    assert request == REQUESTS[0]
    assert isinstance(request, Submit)
    assert isinstance(request.argv, tuple) and isinstance(request.limit, float)


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_every_request_type_round_trips_through_the_wire(request_):
    message = request_.to_message()
    assert message["type"] == type(request_).TYPE
    (received,) = Decoder().feed(encode(message))
    assert parse_request(received) == request_


def test_wire_type_names():
    assert {t: c.__name__ for t, c in protocol.REQUEST_TYPES.items()} == {
        "submit": "Submit", "submit_workload": "SubmitWorkload", "queue": "Queue",
        "cancel": "Cancel", "suspend": "Suspend", "resume": "Resume", "set_class": "SetClass",
        "migrate": "MigrateJob", "shutdown": "Shutdown", "mpirun": "Mpirun"}


def test_migrate_checks_its_pes():
    message = protocol.MigrateJob("j1", (1, 0)).to_message()
    assert message == {"type": "migrate", "job": "j1", "pes": [1, 0]}
    assert parse_request(message) == protocol.MigrateJob("j1", (1, 0))
    for bad in ([], [-1], [True], ["0"], "0"):
        with pytest.raises(ProtocolError) as err:
            parse_request({"type": "migrate", "job": "j1", "pes": bad})
        assert err.value.field.startswith("pes")


def test_set_class_checks_the_class_name():
    ok = parse_request({"type": "set_class", "job": "j1", "job_class": "standby"})
    assert ok == protocol.SetClass("j1", "standby")
    for bad in ("", "no spaces", "x" * 500):
        with pytest.raises(ProtocolError) as err:
            parse_request({"type": "set_class", "job": "j1", "job_class": bad})
        assert err.value.field == "job_class"


def test_argv_that_is_not_utf8_survives_byte_for_byte():
    raw = b"\xff\xfe-arg"
    argv = ("prog", raw.decode("utf-8", "surrogateescape"))
    request = Submit(argv, 1, {"V": argv[1]}, "/tmp", None, "", "", None, True)
    (received,) = Decoder().feed(encode(request.to_message()))
    parsed = parse_request(received)
    assert isinstance(parsed, Submit)
    assert parsed.argv[1].encode("utf-8", "surrogateescape") == raw
    assert parsed.env["V"].encode("utf-8", "surrogateescape") == raw


SUBMIT_ERRORS = [
    ({"argv": []}, "argv"),
    ({"argv": "prog"}, "argv"),
    ({"argv": ["prog"] * (MAX_ARGV + 1)}, "argv"),
    ({"argv": ["prog", 7]}, "argv[1]"),
    ({"argv": ["prog", "a\0b"]}, "argv[1]"),
    ({"argv": ["x" * (MAX_ARG + 1)]}, "argv[0]"),
    ({"ranks": 0}, "ranks"),
    ({"ranks": -3}, "ranks"),
    ({"ranks": 2.0}, "ranks"),
    ({"ranks": "2"}, "ranks"),
    ({"ranks": True}, "ranks"),
    ({"ranks": MAX_RANKS + 1}, "ranks"),
    ({"ranks": None}, "ranks"),
    ({"env": ["A=1"]}, "env"),
    ({"env": {"1BAD": "x"}}, "env"),
    ({"env": {"A-B": "x"}}, "env"),
    ({"env": {"": "x"}}, "env"),
    ({"env": {"A=B": "x"}}, "env"),
    ({"env": {f"V{i}": "" for i in range(MAX_ENV + 1)}}, "env"),
    ({"env": {"A": 1}}, "env['A']"),
    ({"env": {"A": None}}, "env['A']"),
    ({"env": {"A": "a\0b"}}, "env['A']"),
    ({"env": {"A": "x" * (MAX_ARG + 1)}}, "env['A']"),
    ({"cwd": "relative/dir"}, "cwd"),
    ({"cwd": ""}, "cwd"),
    ({"cwd": 5}, "cwd"),
    ({"cwd": "/a\0b"}, "cwd"),
    ({"cwd": "/" + "x" * MAX_PATH}, "cwd"),
    ({"limit": 0}, "limit"),
    ({"limit": -1.5}, "limit"),
    ({"limit": "30"}, "limit"),
    ({"limit": False}, "limit"),
    ({"limit": 10**400}, "limit"),
    ({"user_label": "ann smith"}, "user_label"),
    ({"user_label": "ann\tx"}, "user_label"),
    ({"user_label": "a" * (MAX_NAME + 1)}, "user_label"),
    ({"user_label": None}, "user_label"),
    ({"job_class": "-short"}, "job_class"),
    ({"job_class": "a b"}, "job_class"),
    ({"job_class": "x" * (MAX_NAME + 1)}, "job_class"),
    ({"job_class": 3}, "job_class"),
    ({"mem_mb": 0}, "mem_mb"),
    ({"mem_mb": -512}, "mem_mb"),
    ({"mem_mb": "512M"}, "mem_mb"),
    ({"follow": 1}, "follow"),
    ({"follow": "yes"}, "follow"),
    ({"follow": None}, "follow"),
    ({"extra": 1}, "extra"),
    ({"type": "submitt"}, "type"),
    ({"type": 3}, "type"),
]


@pytest.mark.parametrize(("changes", "field"), SUBMIT_ERRORS,
                         ids=[f"{f}-{i}" for i, (_, f) in enumerate(SUBMIT_ERRORS)])
def test_submit_validation_errors_name_their_field(changes, field):
    assert parse_request(submit_message())  # the base message is valid
    with pytest.raises(ProtocolError) as caught:
        parse_request(submit_message(**changes))
    assert caught.value.field == field
    assert f"field {field!r}" in str(caught.value)


@pytest.mark.parametrize("field", [*submit_message()])
def test_every_missing_submit_field_is_named(field):
    message = submit_message()
    del message[field]
    with pytest.raises(ProtocolError) as caught:
        parse_request(message)
    assert caught.value.field == field
    assert "missing" in str(caught.value)


def test_infinite_limit_from_the_wire_is_refused():
    body = json.dumps(submit_message()).replace('"limit": 30', '"limit": 1e400').encode()
    message = decode_body(body)
    with pytest.raises(ProtocolError) as caught:
        parse_request(message)
    assert caught.value.field == "limit"


OTHER_ERRORS = [
    ({"type": "submit_workload", "lines": [], "path": "w"}, "lines"),
    ({"type": "submit_workload", "lines": "0 1 bsp", "path": "w"}, "lines"),
    ({"type": "submit_workload", "lines": ["0 1 bsp\n0 1 bsp"], "path": "w"}, "lines[0]"),
    ({"type": "submit_workload", "lines": ["ok", 3], "path": "w"}, "lines[1]"),
    ({"type": "submit_workload", "lines": [""] * (MAX_LINES + 1), "path": "w"}, "lines"),
    ({"type": "submit_workload", "lines": ["0 1 bsp"], "path": ""}, "path"),
    ({"type": "submit_workload", "lines": ["0 1 bsp"]}, "path"),
    ({"type": "cancel"}, "job"),
    ({"type": "cancel", "job": ""}, "job"),
    ({"type": "suspend", "job": 12}, "job"),
    ({"type": "resume", "job": "j 1"}, "job"),
    ({"type": "resume", "job": "j" * (MAX_NAME + 1)}, "job"),
    ({"type": "queue", "all": True}, "all"),
    ({"type": "shutdown", "now": True}, "now"),
    ({"job": "j1"}, "type"),
    ({"type": "mpirun", "name": "srun", "argv": [], "environ": {}, "cwd": "/"}, "name"),
    ({"type": "mpirun", "name": "mpirun", "argv": ["a\0"], "environ": {}, "cwd": "/"},
     "argv[0]"),
    ({"type": "mpirun", "name": "mpirun", "argv": [], "environ": {"A-B": "1"}, "cwd": "/"},
     "environ"),
    ({"type": "mpirun", "name": "mpirun", "argv": [], "environ": {}, "cwd": "run"}, "cwd"),
    ({"type": "mpirun", "name": "mpirun", "argv": [], "environ": {}}, "cwd"),
]


@pytest.mark.parametrize(("message", "field"), OTHER_ERRORS,
                         ids=[f"{m.get('type')}-{f}" for m, f in OTHER_ERRORS])
def test_other_request_validation_errors_name_their_field(message, field):
    with pytest.raises(ProtocolError) as caught:
        parse_request(message)
    assert caught.value.field == field


def test_parse_request_copies_what_it_keeps():
    message = submit_message()
    request = parse_request(message)
    assert isinstance(request, Submit)
    message["env"]["OMP_NUM_THREADS"] = "8"
    message["argv"].append("more")
    assert request.env["OMP_NUM_THREADS"] == "1" and request.argv == ("./prog", "--size", "10")


# --- replies ---------------------------------------------------------------------------------


def test_reply_shapes():
    assert protocol.accepted("j1") == {"type": "accepted", "job": "j1"}
    assert protocol.exited("j1", "done", 0) == {"type": "exited", "job": "j1",
                                                "status": "done", "exit_code": 0, "reason": ""}
    assert protocol.error("no such job") == {"type": "error", "message": "no such job"}
    assert protocol.ok() == {"type": "ok"}
    assert protocol.note("ignored: -ppn 2") == {"type": "note", "text": "ignored: -ppn 2"}
    assert protocol.usage("no program") == {"type": "usage", "message": "no program"}
    assert protocol.queue_reply([{"job": "j1", "state": "running"}]) == {
        "type": "queue", "jobs": [{"job": "j1", "state": "running"}]}
    assert protocol.output("j1", "err", b"hi") == {"type": "output", "job": "j1",
                                                   "stream": "err", "data": "aGk="}


@pytest.mark.parametrize("data", [b"", bytes(range(256)), b"\x00\xff\r\n\x1b[0m" * 100,
                                  random.Random(7).randbytes(OUTPUT_CHUNK)],
                         ids=["empty", "all-bytes", "controls", "random-chunk"])
def test_output_survives_byte_for_byte_through_the_wire(data):
    (reply,) = Decoder().feed(encode(protocol.output("j1", "out", data)))
    assert protocol.check_reply(reply) == reply
    assert decode_output(reply) == data


def test_output_over_one_chunk_is_refused_and_output_chunks_split_it():
    data = random.Random(3).randbytes(2 * OUTPUT_CHUNK + 5)
    with pytest.raises(ValueError, match="output_chunks"):
        protocol.output("j1", "out", data)
    replies = list(protocol.output_chunks("j1", "out", data))
    assert len(replies) == 3
    assert all(len(encode(r)) <= MAX_MESSAGE for r in replies)
    assert b"".join(decode_output(r) for r in replies) == data
    assert list(protocol.output_chunks("j1", "out", b"")) == []


def test_output_refuses_an_unknown_stream():
    with pytest.raises(ValueError, match="stream"):
        protocol.output("j1", "stdout", b"x")


@pytest.mark.parametrize("reply", [{"type": "output", "job": "j1", "stream": "out",
                                    "data": "not base64!"},
                                   {"type": "output", "job": "j1", "stream": "out",
                                    "data": "aGk"},
                                   {"type": "output", "job": "j1", "stream": "out",
                                    "data": "aG k="},
                                   {"type": "output", "job": "j1", "stream": "out",
                                    "data": "aGk=\n"},
                                   {"type": "output", "job": "j1", "stream": "out"},
                                   {"type": "ok"}])
def test_decode_output_refuses_bad_replies(reply):
    with pytest.raises(ProtocolError):
        decode_output(reply)


@pytest.mark.parametrize(("reply", "field"), [
    ({"type": "accepted"}, "job"),
    ({"type": "output", "job": "j1", "stream": "tty", "data": ""}, "stream"),
    ({"type": "exited", "job": "j1", "status": "done", "exit_code": "0"}, "exit_code"),
    ({"type": "exited", "job": "j1", "status": "done", "exit_code": True}, "exit_code"),
    ({"type": "error"}, "message"),
    ({"type": "queue", "jobs": [1]}, "jobs"),
    ({"type": "queue", "jobs": {}}, "jobs"),
    ({"type": "hello"}, "type"),
    ({}, "type"),
])
def test_check_reply_names_the_bad_field(reply, field):
    with pytest.raises(ProtocolError) as caught:
        protocol.check_reply(reply)
    assert caught.value.field == field


def test_check_reply_accepts_every_builder():
    replies = [protocol.accepted("j1"), protocol.output("j1", "out", b"x"),
               protocol.exited("j1", "killed", None), protocol.error("e"),
               protocol.queue_reply([]), protocol.ok(), protocol.note("n"),
               protocol.usage("u")]
    assert [protocol.check_reply(r)["type"] for r in replies] == list(protocol.REPLY_TYPES)


@pytest.mark.parametrize(("status", "code", "expected"), [
    ("done", 0, 0), ("failed", 3, 3), ("failed", None, 1), ("timeout", None, 1),
    ("killed", -9, 1), ("done", None, 0),
])
def test_exit_code_of_follows_testbed_exec(status, code, expected):
    assert protocol.exit_code_of(protocol.exited("j1", status, code)) == expected
