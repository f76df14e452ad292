"""speedscope exports checked against speedscope's own file-format JSON schema (from its npm package).

``.ci/run`` unpacks ``npm pack speedscope@1.22.2`` into ``.cache/speedscope``; elsewhere set
``KERNELSCOPE_SPEEDSCOPE_SCHEMA`` to the schema file or the test is skipped.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, build
from kernelscope.model import Frame, Profile
from kernelscope.render.exporters import find_exporter

SCHEMA = Path(
    os.environ.get(
        "KERNELSCOPE_SPEEDSCOPE_SCHEMA",
        REPO / ".cache" / "speedscope" / "package" / "dist" / "release" / "file-format-schema.json",
    )
)


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"speedscope's schema not found at {SCHEMA} (npm pack speedscope; see .ci/run)")
    schema = json.loads(SCHEMA.read_text())
    return jsonschema.Draft7Validator(schema)


def document(profile: Profile) -> Any:
    buf = io.StringIO()
    find_exporter("speedscope").write(profile, buf)
    return json.loads(buf.getvalue())


def profiles() -> list[Profile]:
    line = Frame.python("train.py", 3, "forward</script>&")
    return [
        build([([line, Frame.op("aten::mm"), Frame.kernel("gemm", "cuda:0", 7)], {"time_ns": 10.0})]),
        build([([Frame.kernel("k" * 10_000)], {"time_ns": 1.0})]),
        build([([Frame.python("d.py", i + 1, f"f{i}") for i in range(5000)], {"time_ns": 1.0})]),
        build([]),  # empty
    ]


def test_exports_match_speedscopes_schema(validator: Any) -> None:
    for profile in profiles():
        errors = [e.message for e in validator.iter_errors(document(profile))]
        assert errors == []


def test_the_schema_rejects_a_broken_document(validator: Any) -> None:
    doc = document(profiles()[0])
    doc["profiles"][0]["type"] = "sampled-ish"
    assert list(validator.iter_errors(doc))  # the check can fail


def test_one_kernel_on_two_streams_stays_two_frames() -> None:
    p = build(
        [
            ([Frame.kernel("gemm", "cuda:0", 7)], {"time_ns": 1.0}),
            ([Frame.kernel("gemm", "cuda:0", 9)], {"time_ns": 2.0}),
        ]
    )
    names = sorted(f["name"] for f in document(p)["shared"]["frames"])
    assert names == ["gemm [cuda:0 stream 7]", "gemm [cuda:0 stream 9]"]
    buf = io.StringIO()
    find_exporter("folded").write(p, buf)
    assert buf.getvalue() == "gemm [cuda:0 stream 7] 1\ngemm [cuda:0 stream 9] 2\n"
