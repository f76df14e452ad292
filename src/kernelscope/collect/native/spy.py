"""The sampler process: py-spy reading this process's native stacks from outside (``record --native``).

py-spy attaches with ptrace; without the permission (``kernel.yama.ptrace_scope``, containers without
``CAP_SYS_PTRACE``) it exits at once, and the run goes on without native samples (one line says so).
It writes a chrometrace file (chrome.py) when it is interrupted. Its clock is the monotonic clock, counted
from an instant shortly before it printed that it is sampling: ``ready_ns`` (monotonic) is when this process
read that line, which bounds that instant (align.py).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

RATE_DEFAULT = 20  # samples a second: py-spy stops the program ~2-4 ms a sample (benchmarks/README.md)
ATTACH_SECONDS = 30.0  # py-spy reads the symbols of every loaded library before its first sample
STOP_SECONDS = 30.0


class SpyUnavailable(Exception):
    """Native sampling cannot run here (one line, for the profile's notes)."""


def find_py_spy() -> str | None:
    return shutil.which("py-spy")


class Spy:
    """One py-spy ``record`` process sampling ``pid`` at ``rate`` until ``stop()``."""

    def __init__(self, pid: int, rate: int) -> None:
        exe = find_py_spy()
        if exe is None:
            raise SpyUnavailable("py-spy is not installed (pip install 'kernelscope[native]')")
        self.rate = rate
        self.dir = tempfile.mkdtemp(prefix="kernelscope-native-")
        self.path = os.path.join(self.dir, "samples.json")
        self.started_ns = time.monotonic_ns()
        self.ready_ns: int | None = None
        self.ready_cpu = 0.0  # py-spy's own CPU seconds when it began sampling (reading symbols before)
        self.sampling_cpu = 0.0  # ... and from then until it was stopped
        self.sampling_seconds = 0.0
        self.samples = 0
        self.errors = 0
        self.failure = ""
        self._lines: list[str] = []
        self._buffer = b""
        self._eof = False
        self.proc = subprocess.Popen(
            [
                exe,
                "record",
                "--native",
                "--idle",
                "--threads",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--format",
                "chrometrace",
                "--output",
                self.path,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C at the terminal is the program's, not py-spy's
        )
        # (no reader thread: py-spy stops and unwinds every Python thread of the process at each sample, so
        # one more thread here would cost at every sample; its few lines are read when waited for)

    def _pump(self, timeout: float) -> None:
        """Read what py-spy wrote within ``timeout`` seconds (until a line or its end)."""
        out = self.proc.stdout
        if out is None or self._eof:
            return
        ready, _, _ = select.select([out], [], [], max(0.0, timeout))
        if not ready:
            return
        chunk = os.read(out.fileno(), 65536)
        if not chunk:
            self._eof = True
            chunk = b"\n"
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            self._line(raw.decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        if self.ready_ns is None and "Sampling process" in line:
            self.ready_ns = time.monotonic_ns()
            self.ready_cpu = self._cpu_seconds()
        if line.strip():
            self._lines.append(line.strip())
        if "Samples:" in line:
            for part in line.replace(",", " ").split("Samples:", 1)[1].split():
                if part.isdigit():
                    self.samples = int(part)
                    break
            if "Errors:" in line:
                tail = line.split("Errors:", 1)[1].split()
                self.errors = int(tail[0]) if tail and tail[0].isdigit() else 0

    def _cpu_seconds(self) -> float:
        """py-spy's user + system CPU seconds so far (0 where /proc cannot say)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def wait_ready(self, timeout: float = ATTACH_SECONDS) -> bool:
        """Until py-spy samples (or failed); False with ``failure`` set when it cannot."""
        deadline = time.monotonic() + timeout
        while self.ready_ns is None and not self._eof:
            left = deadline - time.monotonic()
            self._pump(max(0.0, left))
            if left <= 0:
                break
        if self.ready_ns is None:
            self.failure = self._reason()
            return False
        return True

    def _reason(self) -> str:
        text = " ".join(self._lines)
        if "Permission Denied" in text or "Operation not permitted" in text:
            return "no permission to read this process (ptrace): run as root or set kernel.yama.ptrace_scope=0"
        if self.proc.poll() is None:
            return f"py-spy did not start sampling within {ATTACH_SECONDS:g} s"
        last = self._lines[-1] if self._lines else f"exit code {self.proc.returncode}"
        return f"py-spy could not sample this process ({last[:200]})"

    def stop(self) -> str | None:
        """Interrupt py-spy; returns the samples file, or None (``failure`` says why)."""
        if self.proc.poll() is None:
            if self.ready_ns is not None:
                self.sampling_cpu = max(0.0, self._cpu_seconds() - self.ready_cpu)
                self.sampling_seconds = (time.monotonic_ns() - self.ready_ns) / 1e9
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.failure = f"py-spy did not stop within {STOP_SECONDS:g} s"
                return None
        while not self._eof:
            self._pump(1.0)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.ready_ns is None and not self.failure:
            self.failure = self._reason()
        if not os.path.exists(self.path):
            self.failure = self.failure or self._reason()
            return None
        return self.path

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
