"""mpirun/mpiexec command lines as job requests."""

from __future__ import annotations

import pytest

from testbed.service.mpirun_args import MAX_SOCKET_PATH, MpirunRequest, parse_mpirun
from testbed.service.protocol import Submit, parse_request

CWD = "/home/ann/run"


def parse(*argv: str, environ: dict[str, str] | None = None, cwd: str = CWD) -> MpirunRequest:
    return parse_mpirun(list(argv), environ or {}, cwd)


def test_a_bare_program_is_one_rank_in_the_current_directory_with_nothing_set():
    assert parse("./prog", "a") == MpirunRequest(
        ranks=1, argv=("./prog", "a"), env={}, cwd=CWD, limit=None, job_class="", mem_mb=None,
        user_label="", socket=None, ignored=())


@pytest.mark.parametrize("words", [
    ["-n", "3"], ["-np", "3"], ["-c", "3"], ["--n", "3"], ["--np", "3"], ["-n=3"], ["-np=3"],
    ["--np=3"], ["--n=3"], ["-c=3"],
])
def test_every_rank_option_form(words):
    request = parse(*words, "prog")
    assert request.ranks == 3 and request.argv == ("prog",)


@pytest.mark.parametrize("words", [
    ["-n", "0"], ["-n", "-2"], ["-n", "two"], ["-n", "2.5"], ["-n", ""], ["-n="], ["-n", "+2"],
    ["-n", " 2"], ["-n", "9" * 5000], ["-n", "99999999"],
])
def test_bad_rank_counts_are_refused_naming_the_option(words):
    with pytest.raises(ValueError, match=f"^{words[0].partition('=')[0]} "):
        parse(*words, "prog")


def test_an_option_missing_its_value_is_refused():
    with pytest.raises(ValueError, match="-np needs a value"):
        parse("-np")


def test_ranks_given_twice_are_refused():
    with pytest.raises(ValueError, match=r"-np: given twice \(already by -n"):
        parse("-n", "2", "-np", "3", "prog")


def test_program_options_are_not_swallowed():
    request = parse("-n", "2", "prog", "-n", "5", "--testbed-limit", "9", "-x", "A", "--", "z")
    assert request.ranks == 2
    assert request.argv == ("prog", "-n", "5", "--testbed-limit", "9", "-x", "A", "--", "z")
    assert request.limit is None and request.env == {}


def test_double_dash_starts_the_program_even_if_it_looks_like_an_option():
    request = parse("-n", "2", "--", "-weird", "-n", "5", ":")
    assert request.ranks == 2 and request.argv == ("-weird", "-n", "5", ":")


@pytest.mark.parametrize(("words", "message"), [
    ([], "no program given"),
    (["-n", "2"], "no program given"),
    (["-n", "2", "--"], "no program given after '--'"),
])
def test_no_program_is_refused(words, message):
    with pytest.raises(ValueError, match=message):
        parse(*words)


def test_mpmd_colon_is_refused():
    with pytest.raises(ValueError, match="MPMD"):
        parse("-n", "1", "a", ":", "-n", "1", "b")


def test_environment_options_in_every_form_later_wins():
    environ = {"EXPORTED": "from here", "LISTED": "l", "A": "not this"}
    request = parse("-genv", "A", "1", "-env", "B", "two words", "-genv", "C=3", "-x", "D=4=4",
                    "-x", "EXPORTED", "-genv", "OPTS", "-O2", "-genv", "E", "x=y",
                    "-envlist", "LISTED", "-x", "B=override", "prog", environ=environ)
    assert request.env == {"A": "1", "B": "override", "C": "3", "D": "4=4",
                           "EXPORTED": "from here", "OPTS": "-O2", "E": "x=y", "LISTED": "l"}
    assert request.argv == ("prog",) and request.ignored == ()


def test_x_name_takes_the_value_from_the_environment_given_not_the_process():
    assert parse("-x", "HOME", "prog", environ={"HOME": "/elsewhere"}).env == {
        "HOME": "/elsewhere"}


def test_exporting_an_unset_variable_is_skipped_and_noted():
    request = parse("-x", "MISSING", "-genvlist", "SET,GONE", "prog", environ={"SET": "s"})
    assert request.env == {"SET": "s"}
    assert request.ignored == ("-x MISSING (not set)", "-genvlist GONE (not set)")
    note = request.note()
    assert note is not None and "-x MISSING (not set)" in note


@pytest.mark.parametrize(("words", "option"), [
    (["-x", "1BAD"], "-x"), (["-x", "A-B=1"], "-x"), (["-genv", "A-B", "1"], "-genv"),
    (["-env", "=1"], "-env"), (["-genvlist", "A,,B"], "-genvlist"),
])
def test_bad_variable_names_are_refused_naming_the_option(words, option):
    with pytest.raises(ValueError, match=f"^{option}: .* not a valid environment variable"):
        parse(*words, "prog", environ={"A": "a", "B": "b"})


@pytest.mark.parametrize(("words", "message"), [
    (["-genv", "A"], "-genv A needs a value"),
    (["-x"], "-x needs a value"),
    (["-x=A"], "does not take '=VALUE'"),
    (["-genv=A=1"], "does not take '=VALUE'"),
])
def test_incomplete_environment_options_are_refused(words, message):
    with pytest.raises(ValueError, match=message):
        parse(*words)


@pytest.mark.parametrize(("words", "cwd"), [
    (["-wdir", "/scratch/x"], "/scratch/x"),
    (["-wd", "sub/dir"], f"{CWD}/sub/dir"),
    (["--wdir", "../up"], f"{CWD}/../up"),
    (["--wdir=/abs"], "/abs"),
    (["-wdir=rel"], f"{CWD}/rel"),
    ([], CWD),
])
def test_working_directory_forms(words, cwd):
    assert parse(*words, "prog").cwd == cwd


def test_working_directory_twice_or_empty_is_refused():
    with pytest.raises(ValueError, match="given twice"):
        parse("-wdir", "/a", "-wd", "/b", "prog")
    with pytest.raises(ValueError, match="needs a directory"):
        parse("-wdir", "", "prog")


def test_a_relative_current_directory_is_refused():
    with pytest.raises(ValueError, match="absolute"):
        parse("prog", cwd="relative")


def test_host_placement_options_are_accepted_recorded_and_noted():
    words = ["-hosts", "a,b", "-host", "c", "-H", "d:2", "--host=e", "-ppn", "2", "-f", "hf",
             "--hostfile", "hf2", "-machinefile", "mf", "-bind-to", "core", "--map-by=slot",
             "--oversubscribe", "--allow-run-as-root"]
    request = parse("-n", "4", *words, "prog")
    assert request.ranks == 4 and request.argv == ("prog",)
    assert request.ignored == ("-hosts a,b", "-host c", "-H d:2", "--host=e", "-ppn 2", "-f hf",
                               "--hostfile hf2", "-machinefile mf", "-bind-to core",
                               "--map-by=slot", "--oversubscribe", "--allow-run-as-root")
    note = request.note()
    assert note is not None and "-hosts a,b" in note and "--oversubscribe" in note
    assert parse("prog").note() is None


def test_ppn_without_n_still_gives_one_rank_and_a_bad_ppn_is_refused():
    assert parse("-ppn", "4", "prog").ranks == 1
    with pytest.raises(ValueError, match="^-ppn "):
        parse("-ppn", "0", "prog")


@pytest.mark.parametrize("option", ["-foo", "--mca", "-N", "-l", "-", "---n", "-genvnone",
                                    "--testbed-scheduler", "-NP", "-help"])
def test_unknown_options_are_refused_by_name(option):
    with pytest.raises(ValueError, match=f"unknown mpirun option '{option}'"):
        parse(option, "1", "prog")


def test_testbed_options_on_the_command_line():
    request = parse("--testbed-limit", "30", "--testbed-class", "short", "--testbed-mem",
                    "512M", "--testbed-user", "ann", "--testbed-socket", "/tmp/tb.sock", "prog")
    assert (request.limit, request.job_class, request.mem_mb, request.user_label,
            request.socket) == (30.0, "short", 512.0, "ann", "/tmp/tb.sock")


@pytest.mark.parametrize(("size", "mib"), [("512M", 512.0), ("2G", 2048.0), ("64", 64.0),
                                           ("1.5G", 1536.0), ("512K", 0.5)])
def test_testbed_mem_is_mib(size, mib):
    assert parse(f"--testbed-mem={size}", "prog").mem_mb == mib


ALL_ENV = {"TESTBED_LIMIT": "12.5", "TESTBED_CLASS": "long", "TESTBED_MEM": "1G",
           "TESTBED_USER": "bob", "TESTBED_SOCKET": "/run/tb.sock"}


def test_testbed_options_default_from_the_environment():
    request = parse("prog", environ=ALL_ENV)
    assert (request.limit, request.job_class, request.mem_mb, request.user_label,
            request.socket) == (12.5, "long", 1024.0, "bob", "/run/tb.sock")
    assert request.env == {}  # the TESTBED_* variables configure the job, they are not set


def test_the_command_line_wins_over_the_environment():
    request = parse("--testbed-limit", "30", "--testbed-class", "short", "--testbed-mem", "2G",
                    "--testbed-user", "ann", "--testbed-socket", "/tmp/tb.sock", "prog",
                    environ=ALL_ENV)
    assert (request.limit, request.job_class, request.mem_mb, request.user_label,
            request.socket) == (30.0, "short", 2048.0, "ann", "/tmp/tb.sock")


def test_a_bad_environment_default_is_reported_by_name_unless_overridden():
    with pytest.raises(ValueError, match="^TESTBED_LIMIT: "):
        parse("prog", environ={"TESTBED_LIMIT": "soon"})
    assert parse("--testbed-limit", "5", "prog", environ={"TESTBED_LIMIT": "soon"}).limit == 5.0


def test_empty_environment_defaults_count_as_unset():
    request = parse("prog", environ=dict.fromkeys(ALL_ENV, ""))
    assert (request.limit, request.job_class, request.mem_mb, request.user_label,
            request.socket) == (None, "", None, "", None)


@pytest.mark.parametrize(("words", "option"), [
    (["--testbed-limit", "0"], "--testbed-limit"),
    (["--testbed-limit", "-5"], "--testbed-limit"),
    (["--testbed-limit", "inf"], "--testbed-limit"),
    (["--testbed-limit", "nan"], "--testbed-limit"),
    (["--testbed-limit=abc"], "--testbed-limit"),
    (["--testbed-mem", "0"], "--testbed-mem"),
    (["--testbed-mem", "lots"], "--testbed-mem"),
    (["--testbed-class", "a b"], "--testbed-class"),
    (["--testbed-class", "-x"], "--testbed-class"),
    (["--testbed-user", "ann smith"], "--testbed-user"),
    (["--testbed-socket", ""], "--testbed-socket"),
    (["--testbed-socket", "/" + "s" * MAX_SOCKET_PATH], "--testbed-socket"),
    (["--testbed-limit", "5", "--testbed-limit", "6"], "--testbed-limit"),
])
def test_bad_testbed_values_are_refused_naming_the_option(words, option):
    with pytest.raises(ValueError, match=f"^{option}: "):
        parse(*words, "prog")


def test_to_submit_is_the_checked_protocol_request():
    request = parse("-n", "2", "-genv", "A", "1", "--testbed-limit", "9", "--testbed-mem", "1G",
                    "--testbed-user", "ann", "--testbed-class", "c1", "prog", "x")
    submit = request.to_submit()
    assert submit == Submit(("prog", "x"), 2, {"A": "1"}, CWD, 9.0, "ann", "c1", 1024.0, True)
    assert parse_request(submit.to_message()) == submit
    assert request.to_submit(follow=False).follow is False
