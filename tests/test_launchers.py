"""``kernelscope run`` under launchers: torchrun (real gloo jobs on CPU, 2 and 4 ranks), SLURM and MPI (their
environment), each rank its own profile in one folder per job, ``--store`` writing the job store, and
``kernelscope ranks`` on the live job naming the planted straggler."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, env_without_color
from kernelscope import load
from kernelscope.collect.launcher import Launch, detect, rank_output

DDP = REPO / "tests" / "fixtures" / "ddp_straggler.py"
EAGER = REPO / "tests" / "live_matrix" / "eager.py"


# --- which rank, where its profile goes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        (
            {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "none"},
            Launch("torchrun", 3, 4, 1, None),
        ),
        (
            {"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "abc", "SLURM_PROCID": "7"},
            Launch("torchrun", 1, 2, None, "abc"),
        ),
        (
            {
                "SLURM_PROCID": "5",
                "SLURM_NTASKS": "8",
                "SLURM_LOCALID": "1",
                "SLURM_JOB_ID": "991",
                "SLURM_STEP_ID": "0",
            },
            Launch("slurm", 5, 8, 1, "991.0"),
        ),
        (
            {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
            Launch("mpi", 2, 4, 0, None),
        ),
        ({"PMI_RANK": "0", "PMI_SIZE": "2"}, Launch("mpi", 0, 2, None, None)),
        ({"RANK": "x"}, None),
    ],
)
def test_detect_reads_each_launchers_environment(env: dict[str, str], expected: Launch | None) -> None:
    assert detect(env) == expected


def test_rank_output_is_one_folder_per_job(tmp_path: Path) -> None:
    out = str(tmp_path / "train.ksprof")
    assert rank_output(out, Launch("slurm", 3, 4, 0, "991/0")) == str(tmp_path / "train.991_0" / "train.rank3.ksprof")
    assert rank_output(out, Launch("torchrun", 0, 2, 0, None)) == str(tmp_path / "train.ranks" / "train.rank0.ksprof")
    assert (tmp_path / "train.ranks").is_dir()
    uuid = "fe0eb6b0-ef91-452e-88e7-4c07d2e22508"
    assert rank_output(out, Launch("torchrun", 1, 2, 1, uuid)) == str(
        tmp_path / "train.fe0eb6b0" / "train.rank1.ksprof"
    )


# --- real runs ------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torchrun(n: int, *ks_args: str, cwd: Path, slow: int = 1, steps: int = 6) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(n),
        "--master_port",
        str(_free_port()),
        "-m",
        "kernelscope",
        "run",
        "--no-view",
        "--max-overhead",
        "0",
        *ks_args,
        str(DDP),
    ]
    env = env_without_color() | {"KS_SLOW_RANK": str(slow), "KS_STEPS": str(steps), "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def ks(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env_without_color(), capture_output=True, text=True
    )


@pytest.mark.slow
def test_torchrun_two_ranks_each_write_their_own_profile(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    r = torchrun(2, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "trained on 2 ranks" in r.stdout
    (folder,) = tmp_path.glob("ddp_straggler.*")  # one folder for the job (named by torchrun's run id if any)
    assert folder.is_dir()
    assert sorted(p.name for p in folder.iterdir()) == ["ddp_straggler.rank0.ksprof", "ddp_straggler.rank1.ksprof"]
    assert not (tmp_path / "ddp_straggler.ksprof").exists()
    for rank in (0, 1):
        meta = load(str(folder / f"ddp_straggler.rank{rank}.ksprof")).metadata
        assert (meta["rank"], meta["world_size"], meta["launcher"]) == (rank, 2, "torchrun")
    # each holds its own rank's work: only rank 1 ran the planted extra work
    planted = []
    for rank in (0, 1):
        view = ks("view", str(folder / f"ddp_straggler.rank{rank}.ksprof"), "--by", "function", "--json", cwd=tmp_path)
        assert view.returncode == 0, view.stderr
        rows = json.loads(view.stdout)["rows"]
        planted.append(sum(r["metrics"]["time_ns"] for r in rows if (r["key"] or "").endswith(":planted_extra_work")))
    assert planted[0] == 0 < planted[1]


@pytest.mark.slow
def test_torchrun_four_ranks_store_names_the_planted_straggler(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("duckdb")
    # 10 steps: the planted rank is last at each gradient all-reduce; the loss all-reduce after it, which
    # the all-reduce before synchronised, has a last rank by chance (4 ranks on 2 cores)
    r = torchrun(4, "--store", "job", cwd=tmp_path, slow=2, steps=10)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("job store job complete (4 rank(s)") == 1
    doc = json.loads((tmp_path / "job" / "store.json").read_text())
    assert [x["rank"] for x in doc["ranks"]] == [0, 1, 2, 3]
    assert doc["job"]["signature"]["world_size"] == 4
    out = ks("ranks", "job", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ranks"] == [0, 1, 2, 3]
    # 10 steps: a gradient all-reduce and the loss all-reduce each, and DDP's two start-up broadcasts
    assert report["collectives"] >= 20
    assert all(c["ranks"] == 4 for c in report["top_skew"])
    assert report["straggler"]["rank"] == 2
    lines = [e["key"] for e in report["straggler"]["excess"] if e["by"] == "line"]
    assert any(key.endswith("ddp_straggler.py:18") for key in lines[:3]), lines  # planted_extra_work's matmul
    # every verb reads the store like a profile
    view = ks("view", "job", "--by", "line", "--json", cwd=tmp_path)
    assert view.returncode == 0, view.stderr


@pytest.mark.slow
def test_store_refuses_a_finished_store_and_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    r = ks("run", "--store", "other", str(EAGER), cwd=tmp_path)
    assert r.returncode == 2 and "not a kernelscope job in progress" in r.stderr and "Traceback" not in r.stderr
    r = ks("run", "--store", "s", "-o", "x.ksprof", str(EAGER), cwd=tmp_path)
    assert r.returncode == 2 and "not both" in r.stderr
    (tmp_path / "s" / "ranks").mkdir(parents=True)
    r = ks("ranks", "s", cwd=tmp_path)
    assert r.returncode == 2 and "not complete" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("launcher", "env", "folder"),
    [
        (
            "slurm",
            {"SLURM_PROCID": "{r}", "SLURM_NTASKS": "2", "SLURM_LOCALID": "{r}", "SLURM_JOB_ID": "4242"},
            "eager.4242",
        ),
        ("mpi", {"OMPI_COMM_WORLD_RANK": "{r}", "OMPI_COMM_WORLD_SIZE": "2"}, "eager.ranks"),
    ],
)
def test_slurm_and_mpi_ranks_write_their_own_profiles(
    launcher: str, env: dict[str, str], folder: str, tmp_path: Path
) -> None:
    """Both ranks started at once, as srun / mpirun would, with their launcher's environment."""
    pytest.importorskip("torch")
    (tmp_path / "_common.py").write_text((EAGER.parent / "_common.py").read_text())
    procs = []
    for rank in (0, 1):
        penv = env_without_color() | {k: v.format(r=rank) for k, v in env.items()}
        for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            penv.pop(var, None)
        cmd = [sys.executable, "-m", "kernelscope", "run", "--no-view", str(EAGER)]
        procs.append(subprocess.Popen(cmd, cwd=tmp_path, env=penv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for p in procs:
        _out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-2000:]
    for rank in (0, 1):
        meta = load(str(tmp_path / folder / f"eager.rank{rank}.ksprof")).metadata
        assert (meta["rank"], meta["world_size"], meta["launcher"]) == (rank, 2, launcher)
    assert sorted(os.listdir(tmp_path / folder)) == ["eager.rank0.ksprof", "eager.rank1.ksprof"]
