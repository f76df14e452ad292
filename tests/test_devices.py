"""One device shape (model.devices) read from every source's own, and from earlier kernelscope files."""

from __future__ import annotations

from pathlib import Path

from kernelscope.inputs import open_profile
from kernelscope.model.devices import Device, devices_of


def test_a_kineto_trace_s_device_properties() -> None:
    props = [
        {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_000_000_000, "computeMajor": 8,
         "computeMinor": 0, "numSms": 108, "warpSize": 32},
        {"id": 1, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4, "numSms": 304},
    ]  # fmt: skip
    a100, mi300 = devices_of({"deviceProperties": props})
    assert (a100.id, a100.type, a100.index, a100.arch, a100.sms) == ("cuda:0", "cuda", 0, "sm_80", 108)
    assert a100.memory_bytes == 85_000_000_000 and a100.get("warpSize") == 32
    assert a100.compute_capability == (8, 0)
    # ROCm puts its gfx version where CUDA has its compute capability: no sm_ arch is made up
    assert mi300.arch == "" and mi300.compute_capability == (9, 4)


def test_proton_device_info_and_an_early_live_entry() -> None:
    (h100,) = devices_of({"devices": {"CUDA": {"0": {"arch": "90", "num_sms": 132, "bus_width": 5120}}}})
    assert (h100.id, h100.arch, h100.sms, h100.bus_bits) == ("cuda:0", "sm_90", 132, 5120)
    early = {"type": "cuda", "index": 1, "name": "NVIDIA H100", "arch": "sm_90", "sms": 132, "memory_bus_width": 5120}
    (gpu,) = devices_of({"devices": [early]})
    assert (gpu.id, gpu.index, gpu.bus_bits) == ("cuda:1", 1, 5120)


def test_the_shape_round_trips() -> None:
    d = Device(id="cuda:0", type="cuda", index=0, name="X", arch="sm_90", sms=132, extra=(("ecc", True),))
    assert Device.from_json(d.to_json()) == d
    assert devices_of({"devices": [d.to_json()]}) == [d]


def test_every_importer_writes_the_one_shape(shared_traces: Path) -> None:
    p = open_profile(str(shared_traces / "hta_a100_alexnet_cuda_sync.json.gz"))
    (dev,) = [d for d in devices_of(p.metadata) if d.type == "cuda"][:1]
    assert dev.name.startswith("NVIDIA A100") and dev.arch == "sm_80"
    assert all("id" in d and "type" in d for d in p.metadata["devices"])
    assert "deviceProperties" not in p.metadata


def test_merged_ranks_keep_each_rank_s_devices_with_their_rank(shared_traces: Path) -> None:
    from kernelscope.importers.multirank import merge_ranks

    one = open_profile(str(shared_traces / "hta_a100_alexnet_cuda_sync.json.gz"))
    merged = merge_ranks([one, one], [0, 1])
    gpus = [d for d in devices_of(merged.metadata) if d.type == "cuda"]
    assert {d.rank for d in gpus} == {0, 1}
    assert merged.timeline is not None
    named = {t.device for t in merged.timeline.tracks}
    assert {d.id for d in gpus} & named == {"rank 0/cuda:0", "rank 1/cuda:0"}  # the timeline's names
