"""The suite's tiers (tests/tiers.py): a test leaves `make test` only when it is expensive and
every line of tp it runs is run by a test that stays, and a stale tests/slow.txt is refused."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest
import tiers


def test_only_expensive_tests_whose_lines_others_run_are_slow() -> None:
    per_test = {
        "a": {("m.py", 1)},  # cheap: stays whatever it runs
        "b": {("m.py", 1), ("m.py", 2)},  # expensive, the only one to run line 2: stays
        "c": {("m.py", 2)},  # expensive, line 2 run by b, and c costs more per line: slow
        "d": {("m.py", 1)},  # expensive, line 1 run by a: slow
    }
    times = {"a": 0.01, "b": 5.0, "c": 9.0, "d": 3.0, "docs": 30.0}  # docs runs no tp line
    assert tiers.choose(per_test, times) == {"c", "d"}


def test_the_cheapest_cover_per_line_is_kept() -> None:
    per_test = {"big": {("m.py", i) for i in range(10)}, "small": {("m.py", 0)}}
    # "big" runs ten lines for 4 s, "small" one for 1 s: big stays, small is covered by it.
    assert tiers.choose(per_test, {"big": 4.0, "small": 1.0}) == {"small"}


def test_check_fails_when_make_test_misses_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    per_test = {"a": {("m.py", 1)}, "b": {("m.py", 2)}}
    assert tiers.check(per_test, set(), slow={"b"}) == 1
    assert "1 lines not run by make test" in capsys.readouterr().out
    assert tiers.check(per_test, set(), slow=set()) == 0


def test_junit_names_become_node_ids(tmp_path: Path) -> None:
    report = tmp_path / "times.xml"
    report.write_text(
        '<testsuites><testsuite><testcase classname="tests.test_x" name="test_a[1-b]" '
        'time="1.5"/><testcase classname="tests.test_x.TestY" name="test_b" time="2"/>'
        "</testsuite></testsuites>"
    )
    assert tiers.durations(str(report)) == {
        "tests/test_x.py::test_a[1-b]": 1.5,
        "tests/test_x.py::TestY::test_b": 2.0,
    }


def test_a_test_costs_the_most_any_report_gives(tmp_path: Path) -> None:
    """The fast tier's own run may charge a test set-up the whole suite's run charged to
    another (a shared program generated first by a slow test): the larger time counts."""
    whole, alone = tmp_path / "whole.xml", tmp_path / "alone.xml"
    case = '<testsuites><testsuite><testcase classname="tests.test_x" name="test_{}" time="{}"/>'
    whole.write_text(
        case.format("a", 1) + '<testcase classname="tests.test_x" name="test_b" '
        'time="3"/></testsuite></testsuites>'
    )
    alone.write_text(case.format("a", 4) + "</testsuite></testsuites>")
    assert tiers.durations(str(whole), str(alone)) == {
        "tests/test_x.py::test_a": 4.0,
        "tests/test_x.py::test_b": 3.0,
    }


def _collect(slow: set[str], ids: list[str], whole_suite: bool, monkeypatch) -> list:
    monkeypatch.setattr(conftest, "read_slow", lambda: slow)
    source = pytest.Config.ArgsSource.TESTPATHS if whole_suite else pytest.Config.ArgsSource.ARGS
    items = [SimpleNamespace(nodeid=i, marks=[]) for i in ids]
    for item in items:
        item.add_marker = item.marks.append
    conftest.pytest_collection_modifyitems(SimpleNamespace(args_source=source), items)
    return items


def test_listed_tests_are_marked_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _collect({"t::b"}, ["t::a", "t::b"], True, monkeypatch)
    assert [len(i.marks) for i in items] == [0, 1]
    assert items[1].marks[0].name == "slow"


def test_a_stale_id_is_refused_on_a_whole_suite_run(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.UsageError, match="1 ids that name no test, e.g. t::gone"):
        _collect({"t::gone"}, ["t::a"], True, monkeypatch)
    _collect({"t::gone"}, ["t::a"], False, monkeypatch)  # a chosen file: others not collected


def test_the_checked_in_list_names_only_tests_of_this_suite() -> None:
    files = {i.split("::")[0] for i in tiers.read_slow()}
    assert files and all((tiers.ROOT / f).is_file() for f in files)


def test_a_pick_made_redundant_by_later_picks_is_dropped() -> None:
    per_test = {
        "first": {("m.py", 1), ("m.py", 2)},  # best rate at first (2 lines / 1 s) ...
        "left": {("m.py", 1), ("m.py", 3)},  # ... then these two each add a line of their own
        "right": {("m.py", 2), ("m.py", 4)},  # and together run all of first's
    }
    assert tiers.choose(per_test, {"first": 1.0, "left": 1.5, "right": 1.5}) == {"first"}
