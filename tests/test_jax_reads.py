"""The host-read recorder (collect/jax_reads.py) on a stand-in array type: reads noted at the user line that made
them, values passed through unchanged, the property restored. (The real ``ArrayImpl`` is exercised by the planted
JAX program in test_advisor_jax.py, in a child process.)"""

from __future__ import annotations

import os
import sys

from kernelscope.collect.jax_reads import HostReads


class FakeArray:
    def __init__(self, v: float) -> None:
        self.v = v

    @property
    def _value(self) -> float:
        return self.v * 2


def test_reads_are_noted_per_user_line_and_the_property_is_restored() -> None:
    original = FakeArray.__dict__["_value"]
    reads = HostReads()
    reads.wrap(FakeArray, "FakeArray")
    assert not reads.note
    try:
        values = [FakeArray(k)._value for k in range(3)]  # one line, three reads
        line = sys._getframe().f_lineno - 1
    finally:
        reads.remove()
    assert values == [0, 2, 4]
    assert FakeArray.__dict__["_value"] is original
    ((file, at, _fn), (n, ns)) = next(iter(reads.by_line.items()))
    assert (os.path.basename(file), at, n) == ("test_jax_reads.py", line, 3) and ns >= 0
    (row,) = reads.rows()
    assert row["reads"] == 3 and row["line"] == line
    FakeArray(1)._value  # noqa: B018  (after remove: not counted)
    assert reads.rows()[0]["reads"] == 3


def test_a_type_without_the_property_records_nothing_and_says_so() -> None:
    reads = HostReads()
    reads.wrap(int, "int")
    assert "no ArrayImpl._value" in reads.note and not reads.by_line
