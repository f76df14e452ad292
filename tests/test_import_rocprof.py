"""rocprofv3 CSV kernel traces. SYNTHETIC files in the column layout rocprofv3 documents (ROCm 6.4/7.x;
no AMD GPU or rocprofv3 here to record a real one); the numbers are made up."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.cli.main import main
from kernelscope.importers import find_importer, import_file

KERNELS = """\
"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"
"KERNEL_DISPATCH","Agent 2",1,0,70,1,33,"Cijk_Alik_Bljk_SB_MT128x128",5,1000000,1040000,0,0,128,0,48,256,1,1,65536,1,1
"KERNEL_DISPATCH","Agent 2",1,0,70,2,16,"elementwise_kernel",6,1050000,1060000,0,0,12,4,48,256,1,1,256,1,1
"KERNEL_DISPATCH","Agent 2",1,0,70,3,33,"Cijk_Alik_Bljk_SB_MT128x128",8,1100000,1140000,0,0,128,0,48,256,1,1,65536,1,1
"""
HIP = """\
"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"
"HIP_RUNTIME_API","hipLaunchKernel",238,238,5,990000,995000
"HIP_RUNTIME_API","hipLaunchKernel",238,238,6,996000,998000
"HIP_RUNTIME_API","hipDeviceSynchronize",238,238,7,999000,1070000
"HIP_RUNTIME_API","hipLaunchKernel",238,238,8,1080000,1085000
"""
MARKERS = """\
"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"
"MARKER_CORE_API","forward",238,238,1,980000,1075000
"MARKER_CORE_API","backward",238,238,2,1076000,1090000
"""


def _write(tmp_path: Path, hip: bool = True) -> Path:
    (tmp_path / "238_kernel_trace.csv").write_text(KERNELS)
    if hip:
        (tmp_path / "238_hip_api_trace.csv").write_text(HIP)
        (tmp_path / "238_marker_api_trace.csv").write_text(MARKERS)
    return tmp_path / "238_kernel_trace.csv"


def test_kernels_join_their_hip_launch_and_roctx_ranges(tmp_path: Path) -> None:
    path = _write(tmp_path)
    assert find_importer(str(path)).name == "rocprofv3-csv"
    profile = import_file(str(path))
    paths = {
        tuple(f.name for f in profile.path(n)): float(profile.exclusive("time_ns")[n])
        for n in range(1, len(profile))
        if float(profile.exclusive("time_ns")[n])
    }
    assert paths == {
        ("forward", "Cijk_Alik_Bljk_SB_MT128x128"): 40_000.0,
        ("forward", "elementwise_kernel"): 10_000.0,
        ("backward", "Cijk_Alik_Bljk_SB_MT128x128"): 40_000.0,
    }
    assert profile.total("count") >= 3


def test_without_the_hip_trace_kernels_are_unlinked_and_said_so(tmp_path: Path) -> None:
    profile = import_file(str(_write(tmp_path, hip=False)))
    assert profile.total("time_ns") == pytest.approx(90_000.0)
    assert any("hip_api_trace" in w for w in profile.metadata["import_warnings"])


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_kernel_trace_is_one_line_exit_2(
    tmp_path: Path, cut: float, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "1_kernel_trace.csv"
    path.write_text(KERNELS[: int(len(KERNELS) * cut)])
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "truncated" in err and "Traceback" not in err
