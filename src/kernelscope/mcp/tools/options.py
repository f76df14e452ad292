"""Option types shared by the tools: each carries the description an agent reads in the tool's schema."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...analysis.views import GROUPINGS
from ..bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES

Path = Annotated[
    str,
    Field(
        description="a kernelscope profile (.ksprof) or a trace file (Kineto .json/.json.gz, JAX .xplane.pb, Proton)"
    ),
]
By = Annotated[str, Field(description="grouping: " + ", ".join(GROUPINGS), json_schema_extra={"enum": list(GROUPINGS)})]
Metric = Annotated[
    str | None,
    Field(
        description="a stored metric (summary lists them: time_ns, cpu_time_ns, count, flops, bytes, ...); "
        "default time_ns, else the profile's first metric"
    ),
]
Limit = Annotated[int, Field(description=f"at most this many rows (default {DEFAULT_LIMIT}, at most 500)")]
MaxBytes = Annotated[
    int, Field(description=f"cap on the answer's JSON size in bytes (default {DEFAULT_MAX_BYTES}, 1000 to 200000)")
]
Regex = Annotated[
    str | None, Field(description="regular expression over context labels (as kernelscope view --include)")
]
