"""``kernelscope run --json examples/slow_line.py``, once per test session (shared by the MCP and JSON tests)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "slow_line.py"


def planted_line() -> int:
    """The line of examples/slow_line.py marked ``# SLOW``."""
    lines = EXAMPLE.read_text().splitlines()
    (number,) = [i for i, text in enumerate(lines, start=1) if "# SLOW" in text]
    return number


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO / "src") + os.pathsep + out.get("PYTHONPATH", "")
    out["NO_COLOR"] = "1"
    return out


@dataclass(frozen=True)
class Run:
    profile: Path
    stdout: str
    stderr: str
    returncode: int

    @property
    def doc(self) -> Any:
        return json.loads(self.stdout)


@functools.cache
def run_slow_line(folder: Path) -> Run:
    out = folder / "slow_line.ksprof"
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "run", "--json", "-o", str(out), "examples/slow_line.py"],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return Run(out, proc.stdout, proc.stderr, proc.returncode)
