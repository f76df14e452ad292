"""The command line as a new user meets it: one-line errors, validated flags, help in sync with docs."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO, build
from kernelscope.cli.main import main
from kernelscope.model import Frame, save
from test_views import sample


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prof") / "p.ksprof"
    save(sample(), path)
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


BAD_FLAGS = [
    (["--depth", "-1"], "--depth: '-1' is negative"),
    (["--depth", "x"], "--depth: 'x' is not an integer"),
    (["--limit", "-3"], "--limit: '-3' is negative"),
    (["--threshold", "-1"], "--threshold: '-1' is not a percentage"),
    (["--threshold", "101"], "--threshold: '101' is not a percentage"),
    (["--threshold", "nan"], "--threshold: 'nan' is not a finite number"),
    (["--by", "file"], "--by: invalid choice: 'file'"),
    (["--sort", "nope"], "--sort 'nope': not a stored metric"),
    (["-m", "nope"], "unknown metric 'nope'"),
    (["--include", "("], "bad --include regex"),
    (["--by", "line", "--depth", "2"], "--depth applies to --by tree only"),
    (["--by", "op", "--hide", "x"], "--hide applies to --by tree only"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_every_bad_view_flag_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], profile_path: Path, flags: list[str], message: str
) -> None:
    line = one_line_error(capsys, ["view", str(profile_path), *flags])
    assert message in line
    assert not line.startswith("kernelscope: error: kernelscope")  # no doubled prefix


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["timeline", "x", "--top", "-1"], "--top: '-1' is negative"),
        (["timeline", "x", "--kernel-wait-us", "-5"], "--kernel-wait-us: '-5' is negative"),
        (["import", "x", "--jobs", "0"], "--jobs: '0' must be 1 or more"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["view"], "required: PROFILE|TRACE"),
    ],
)
def test_bad_flags_of_other_verbs(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert message in one_line_error(capsys, argv)


def test_a_missing_metric_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "noshapes.ksprof"
    save(build([([Frame.op("aten::mm")], {"time_ns": 1.0, "count": 1})]), path)
    line = one_line_error(capsys, ["view", str(path), "-m", "flops"])
    assert "needs 'flops', which this profile does not have (it was recorded without input shapes)" in line


def test_version_short_and_long(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("-V", "--version"):
        with pytest.raises(SystemExit) as exc:
            main([flag])
        assert exc.value.code == 0
        assert re.match(r"kernelscope \d", capsys.readouterr().out)


def test_run_without_a_script_names_only_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["run"])
    assert "SCRIPT|MODULE" in line and "ARGS" not in line


def test_importing_a_profile_points_at_view(capsys: pytest.CaptureFixture[str], profile_path: Path) -> None:
    line = one_line_error(capsys, ["import", str(profile_path)])
    assert "already a kernelscope profile" in line and "kernelscope view" in line


_GOOD = io.BytesIO()


def _good_bytes() -> bytes:
    if not _GOOD.getvalue():
        from kernelscope.model.io import to_bytes

        _GOOD.write(to_bytes(sample()))
    return _GOOD.getvalue()


@settings(
    max_examples=int(os.environ.get("KS_CORRUPT_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    how=st.sampled_from(["flip", "truncate"]),
)
def test_corrupt_profiles_give_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject, how: str
) -> None:
    good = bytearray(_good_bytes())
    if how == "flip":
        positions = data.draw(st.lists(st.integers(0, len(good) - 1), min_size=1, max_size=8, unique=True))
        for pos in positions:
            good[pos] ^= data.draw(st.integers(1, 255))
    else:
        good = good[: data.draw(st.integers(0, len(good) - 1))]
    path = tmp_path / "bad.ksprof"
    path.write_bytes(bytes(good))
    rc = main(["view", str(path)])
    out = capsys.readouterr()
    if rc == 0:  # a flip the archive cannot notice (e.g. in a comment field) may leave it readable
        return
    assert rc == 2
    assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    assert "corrupt kernelscope profile" in out.err or "not a kernelscope profile" in out.err


HELP_START, HELP_END = "<!-- help:start -->\n", "<!-- help:end -->\n"


def _help(verb: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("verb", ["view", "timeline", "import"])
def test_docs_page_shows_the_current_help(
    verb: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/VERB.md carries ``kernelscope VERB --help`` at 100 columns (KERNELSCOPE_UPDATE_DOCS=1 rewrites it)."""

    monkeypatch.setenv("COLUMNS", "100")
    page_path = REPO / "docs" / f"{verb}.md"
    page = page_path.read_text()
    block = f"```\n$ kernelscope {verb} --help\n{_help(verb, capsys)}```\n"
    head, _, rest = page.partition(HELP_START)
    _, _, tail = rest.partition(HELP_END)
    expected = f"{head}{HELP_START}{block}{HELP_END}{tail}"
    if os.environ.get("KERNELSCOPE_UPDATE_DOCS"):
        page_path.write_text(expected)
        page = expected
    assert page == expected, f"docs/{verb}.md is out of date with --help; rerun with KERNELSCOPE_UPDATE_DOCS=1"


def test_per_second_metrics_are_per_wall_second_and_blank_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a scope that processed 4,096 tokens in a run of 2 s wall time (op time 1 ms)
    paths = [
        ([Frame.scope("step"), Frame.op("aten::mm")], {"time_ns": 1e6, "count": 1}),
        ([Frame.scope("step")], {"tokens": 4096}),
    ]
    timed, untimed = tmp_path / "timed.ksprof", tmp_path / "untimed.ksprof"
    save(build(paths, {"wall_ns": 2e9}), timed)
    save(build(paths), untimed)
    # then tokens/s is 2,048 (not 4,096,000 per op second), and blank with no wall time
    assert main(["view", str(timed), "--by", "op", "-m", "tokens,tokens/s"]) == 0
    total = [line for line in capsys.readouterr().out.splitlines() if line.rstrip().endswith("total")]
    assert total and "2,048" in total[0]
    assert main(["view", str(untimed), "-m", "tokens/s,count", "--threshold", "0"]) == 0
    out = capsys.readouterr().out
    assert "wall time not recorded" in out
    assert re.search(r"^\s+total$", out, re.MULTILINE)  # tokens/s blank, not 0 and not per op second


def test_readme_include_example_shows_what_is_inside_attention(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    live = Path(__file__).parent / "data" / "tiny_transformer_cpu.ksprof"
    assert main(["view", str(live), "--include", "attn", "--depth", "8", "--threshold", "1"]) == 0
    out = capsys.readouterr().out
    assert "filtered: time inside /attn/" in out
    assert re.search(r"blocks\.\d\.attn\.qkv \(Linear\)", out)  # a submodule of attention
    assert re.search(r"\baten::\w+", out)  # and the ops doing its work


def test_no_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "give a command (run, view" in one_line_error(capsys, [])


def test_hostile_names_and_a_deep_stack_fit_80_columns_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_views import HOSTILE

    deep = [Frame.python(f"pkg/deep{i}.py", i, f"f{i}") for i in range(5000)]
    paths = [
        ([Frame.python(f"x/{n}.py", 7, n), Frame.op(n), Frame.kernel(n)], {"time_ns": 1e6, "count": 1}) for n in HOSTILE
    ]
    path = tmp_path / "hostile.ksprof"
    save(build([*paths, (deep, {"time_ns": 5e6, "count": 1})]), path)
    monkeypatch.setenv("COLUMNS", "80")
    for argv in (
        ["--by", "tree"],
        ["--by", "tree", "--no-collapse"],
        ["--by", "line"],
        ["--by", "kernel"],
        ["--by", "function"],
    ):
        assert main(["view", str(path), *argv]) == 0
        out = capsys.readouterr().out
        assert max(len(line) for line in out.splitlines()) <= 80, argv
        assert "[bold]markup[/bold]" in out or "markup" in out
    assert main(["view", str(path)]) == 0
    tree = capsys.readouterr().out
    assert "pkg/deep4999.py:4999 f4999" in tree and "[4999 hidden: pkg]" in tree  # the chain in one line
