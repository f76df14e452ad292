"""A killed run leaves its profile: SIGTERM and SIGHUP save it and end with the signal's status;
SIGKILL, ``os._exit`` and a memory-limited process leave the last checkpoint, marked "ended abruptly"."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import env_without_color
from kernelscope.collect.checkpoint import CheckpointPolicy, Spent, abrupt_note, due
from kernelscope.model import FrameKind, Profile, load

pytestmark = pytest.mark.slow
pytest.importorskip("torch")

KILLABLE = Path(__file__).parent / "fixtures" / "killable.py"
LOOP_OPS = {"aten::addmm", "aten::relu"}


def _start(tmp_path: Path, *args: str, limit_bytes: int | None = None) -> subprocess.Popen[str]:
    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelscope",
            "run",
            "--no-view",
            "--max-overhead",
            "0",
            "-o",
            "k.ksprof",
            str(KILLABLE),
            *args,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_without_color(),
        preexec_fn=limit,
    )


def _wait_for_checkpoint(proc: subprocess.Popen[str], path: Path, timeout: float = 150) -> None:
    """Until the run's checkpoint holds the loop's ops (the recorder may take a while to start recording)."""
    end = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the run ended ({proc.returncode}) before a checkpoint of its loop: {proc.communicate()[1]}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail("no checkpoint of the loop within the timeout")
        if path.exists() and _ops(load(path)) >= LOOP_OPS:
            return
        time.sleep(0.3)


def _ops(p: Profile) -> set[str]:
    return {f.name for f in p.frames if f.kind is FrameKind.OP}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_save_then_end_with_the_signals_status(tmp_path: Path, sig: signal.Signals) -> None:
    proc = _start(tmp_path)
    out = tmp_path / "k.ksprof"
    _wait_for_checkpoint(proc, out)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -sig  # died of the signal, as without kernelscope (a shell shows 128 + sig)
    assert f"profile saved to k.ksprof (terminated by {sig.name})" in err and "Traceback" not in err
    p = load(out)
    assert "ended_abruptly" not in p.metadata  # the whole profile, not a checkpoint
    assert _ops(p) >= LOOP_OPS and p.total("count") > 0


def test_sigkill_leaves_the_last_checkpoint_marked(tmp_path: Path) -> None:
    proc = _start(tmp_path)
    out = tmp_path / "k.ksprof"
    _wait_for_checkpoint(proc, out)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    p = load(out)
    assert _ops(p) >= LOOP_OPS
    note = abrupt_note(p.metadata)
    assert note is not None and note.startswith("ended abruptly: recorded up to ")
    view = subprocess.run(
        [sys.executable, "-m", "kernelscope", "view", "k.ksprof"],
        cwd=tmp_path, capture_output=True, text=True, env=env_without_color(), timeout=120,
    )  # fmt: skip
    assert view.returncode == 0 and view.stdout.startswith("ended abruptly: recorded up to ")


def test_os_exit_leaves_the_last_checkpoint(tmp_path: Path) -> None:
    proc = _start(tmp_path, "exit", "8")
    _, err = proc.communicate(timeout=180)
    assert "Traceback" not in err
    assert proc.returncode == 5
    p = load(tmp_path / "k.ksprof")
    assert "ended_abruptly" in p.metadata and _ops(p) >= LOOP_OPS
    assert p.metadata["ended_abruptly"]["windows"] >= 1


def test_a_memory_limited_run_leaves_a_profile(tmp_path: Path) -> None:
    # the address-space limit: what the loop takes while it is recorded (a window's events included), plus
    # 768 MB for the leak to fill
    probe = _start(tmp_path, "peak", "4")
    _, probe_err = probe.communicate(timeout=180)
    peak_kb = next((line.split()[1] for line in probe_err.splitlines() if line.startswith("VmPeak ")), None)
    assert peak_kb is not None, probe_err
    limit = int(peak_kb) * 1024 + (768 << 20)
    proc = _start(tmp_path, "grow", "8", limit_bytes=limit)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode != 0, err  # it ran out of memory
    p = load(tmp_path / "k.ksprof")  # the final save, or else the last checkpoint
    assert _ops(p) >= LOOP_OPS
    assert p.metadata["coverage"]["recorded_seconds"] > 1.0, p.metadata["coverage"]  # the windows before the leak


def test_checkpoint_policy_bounds_the_cost() -> None:
    policy = CheckpointPolicy(min_interval_s=2.0, max_share=0.25)
    assert due(policy, Spent(), now=0.1, fold_seconds=0.0)  # the first one always
    done = Spent(writes=1, seconds=0.2, last_at=1.0)
    assert not due(policy, done, now=2.5, fold_seconds=10.0)  # too soon
    assert due(policy, done, now=3.0, fold_seconds=1.0)  # 0.2 <= 0.25 * 1.0
    assert not due(policy, done, now=30.0, fold_seconds=0.5)  # writing would cost more than a quarter of folding


def test_ctrl_c_before_the_program_started_says_nothing_was_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelscope.cli.main import main
    from kernelscope.collect import api

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "start", interrupted)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--no-view", "-o", "k.ksprof", str(KILLABLE)]) == 130
    assert capsys.readouterr().err == "kernelscope: interrupted before the program started; no profile was saved\n"
    assert not (tmp_path / "k.ksprof").exists()
