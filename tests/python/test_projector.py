"""`import projector` against the CLI: the same JSON documents, bad input named, a sweep."""
import glob
import json
import os
import pathlib
import subprocess

import pytest

import projector
from conftest import ROOT

EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml")))
LLAMA_8B = os.path.join(ROOT, "examples", "llama3.1_8B-BF16-pretrain.yaml")


def example_id(path):
    return os.path.basename(path)


@pytest.mark.parametrize("config", EXAMPLES, ids=example_id)
def test_memory_is_the_cli_document(config, cli_json):
    assert projector.memory(projector.load(config)) == cli_json("memory", "--config", config)


@pytest.mark.parametrize("config", EXAMPLES, ids=example_id)
def test_performance_is_the_cli_document(config, cli_json):
    assert projector.performance(projector.load(config)) == \
        cli_json("performance", "--config", config)


def test_time_to_train_is_the_cli_document(cli_json):
    doc = projector.performance(projector.load(LLAMA_8B), train_tokens="1T", gpu_hour_cost=2.0)
    assert doc == cli_json("performance", "--config", LLAMA_8B, "--train-tokens", "1T",
                           "--gpu-hour-cost", "2")
    plan = doc["results"]["time_to_train"]
    # 10^12 tokens at the projected tokens/s: days and GPU-hours follow by hand.
    tps = doc["results"]["tokens_per_s"]
    assert plan["days"] == pytest.approx(1e12 / tps / 86400)
    assert plan["gpu_hours"] == pytest.approx(plan["days"] * 24 * plan["gpus"])
    assert plan["cost_usd"] == pytest.approx(2.0 * plan["gpu_hours"])
    lo, hi = plan["days_interval"]
    assert lo < plan["days"] < hi
    with pytest.raises(projector.InputError):
        projector.performance(projector.load(LLAMA_8B), gpu_hour_cost=2.0)
    with pytest.raises(projector.InputError):
        projector.performance(projector.load(LLAMA_8B), train_tokens="15 parsecs")


def test_job_is_the_config_document(cli_json):
    assert projector.load(LLAMA_8B).to_dict() == cli_json("config", "--config", LLAMA_8B, flag=True)


def test_paths_may_be_pathlib():
    job = projector.load(pathlib.Path(LLAMA_8B))
    assert job.source == LLAMA_8B
    assert job.model == "llama3.1_8B"


def test_overrides_act_like_the_cli_flags(cli_json):
    job = projector.load(LLAMA_8B, overrides={"tp": 2, "nodes": 2, "hardware": "h100",
                                              "recompute_granularity": "full",
                                              "recompute_method": "uniform",
                                              "recompute_num_layers": 1})
    cli = cli_json("performance", "--config", LLAMA_8B, "--tp", "2", "--nodes", "2",
                   "--hardware", "h100", "--set", "recompute_granularity=full",
                   "--set", "recompute_method=uniform", "--set", "recompute_num_layers=1")
    doc = projector.performance(job)
    assert doc == cli
    assert doc["job"]["parallel"]["tp"] == 2
    assert doc["job"]["parallel"]["dp"] == 16 // 2  # 2 nodes x 8 GPUs over TP 2
    assert job.world_size == 16


def test_alloc_conf_acts_like_the_flag(cli_json):
    job = projector.load(LLAMA_8B, overrides={"alloc_conf": "expandable_segments:True"})
    cli = cli_json("memory", "--config", LLAMA_8B, "--alloc-conf", "expandable_segments:True")
    doc = projector.memory(job)
    assert doc == cli
    assert doc["allocator"]["kind"] == "pytorch caching, expandable segments"
    assert doc["peak_reserved_gib"] >= doc["peak_allocated_gib"]


def test_bad_yaml_names_file_line_and_key():
    path = os.path.join(ROOT, "tests", "data", "malformed.yaml")
    with pytest.raises(projector.InputError) as err:
        projector.load(path)
    assert err.value.file == path
    assert err.value.line > 0
    assert str(err.value).startswith(f"{path}:{err.value.line}:")


def test_impossible_layout_names_the_key():
    with pytest.raises(ValueError) as err:  # InputError is a ValueError
        projector.load(LLAMA_8B, overrides={"tp": 3})
    assert isinstance(err.value, projector.InputError)
    assert err.value.key == "tensor_model_parallel_size"
    assert "not divisible by TP 3" in err.value.message


def test_framework_version_is_the_cli_flag():
    toml = os.path.join(ROOT, "tests", "data", "torchtitan", "upstream", "llama3_8b.toml")
    job = projector.load(toml, overrides={"framework_version": "v0.1.0"}).to_dict()
    versions = [d for d in job["defaults"] if d["key"] == "framework_version"]
    assert versions and versions[0]["value"] == "torchtitan v0.1.0"
    assert versions[0]["reason"] == "--framework-version"
    with pytest.raises(projector.InputError) as err:
        projector.load(toml, overrides={"framework_version": "v9.9.9"})
    assert err.value.key == "--framework-version"


def test_unknown_model_names_the_file_and_key():
    path = os.path.join(ROOT, "tests", "data", "unknown_model.yaml")
    with pytest.raises(projector.InputError) as err:
        projector.load(path)
    assert err.value.file == path
    assert err.value.key


def test_override_of_an_unusable_type():
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides={"lr": {"nested": 1}})
    assert err.value.key == "lr"


def without_timing(doc):
    return {k: v for k, v in doc.items() if k != "elapsed_s"}


def test_sweep_is_the_cli_document(cli_json):
    grid = {"tp": [1, 2], "pp": [1, 2], "mbs": [1, 2], "recompute": ["none", "full"]}
    doc = projector.sweep(projector.load(LLAMA_8B), nodes=2, grid=grid, threads=2)
    cli = cli_json("sweep", "--config", LLAMA_8B, "--nodes", "2", "-j", "2",
                   "--grid", "tp=1,2; pp=1,2; mbs=1,2; recompute=none,full")
    assert without_timing(doc) == without_timing(cli)
    # Ranked best first; the Pareto front is lightest first with rising throughput.
    rates = [c["tokens_per_s_per_gpu"] for c in doc["candidates"]]
    assert rates == sorted(rates, reverse=True)
    front = [doc["candidates"][r - 1] for r in doc["pareto_ranks"]]
    assert front and all(c["pareto"] for c in front)
    peaks = [c["peak_point_bytes"] for c in front]
    assert peaks == sorted(peaks)
    assert [c["tokens_per_s_per_gpu"] for c in front] == sorted(c["tokens_per_s_per_gpu"]
                                                                for c in front)
    assert doc["world_size"] == 16
    assert {c["layout"]["tp"] for c in doc["candidates"]} <= {1, 2}


def test_sweep_grid_as_text_equals_grid_as_dict():
    job = projector.load(LLAMA_8B)
    a = projector.sweep(job, nodes=1, grid="tp=1,2; mbs=1,2", threads=1)
    b = projector.sweep(job, nodes=1, grid={"tp": [1, 2], "mbs": [1, 2]}, threads=1)
    assert without_timing(a) == without_timing(b)


def test_sweep_rejects_a_bad_memory_limit():
    with pytest.raises(projector.InputError):
        projector.sweep(projector.load(LLAMA_8B), memory_limit=2.0)


def test_validate_is_the_cli_document(cli_json):
    runs = os.path.join(ROOT, "data", "validation", "calibration_runs.yaml")
    doc = projector.validate(runs)
    assert doc == cli_json("validate", runs)
    assert doc["summary"]["compared"] > 0
    # The runs' framework configs (data/validation/configs/index.yaml) are projected as the CLI
    # does; configs="none" is --configs none.
    assert doc["summary"]["config_path"]["runs"] > 0
    off = projector.validate(runs, configs="none")
    assert off == cli_json("validate", runs, "--configs", "none")
    assert off["summary"]["config_path"]["runs"] == 0
    assert off["summary"]["throughput"] == doc["summary"]["throughput"]


# --------------------------------------------------------------------- every command of the CLI

QWEN = os.path.join(ROOT, "tests", "profile", "data", "qwen1.5_0.5B-bf16-forward.yaml")
QWEN_TRACE = os.path.join(ROOT, "tests", "profile", "data", "qwen1.5_0.5b_fwd_h100.json.gz")


@pytest.mark.parametrize("config", EXAMPLES, ids=example_id)
def test_both_is_the_cli_document(config, cli_json):
    doc = projector.both(projector.load(config))
    assert doc == cli_json("both", "--config", config)
    assert doc["kind"] == "both"
    assert doc["memory"]["peak"]["point_bytes"] > 0


def test_both_options_are_the_cli_flags(cli_json):
    doc = projector.both(projector.load(LLAMA_8B), train_tokens="1T", gpu_hour_cost=2,
                         gpu_clock_mhz=1800, scan_nodes=[1, 2, 4])
    assert doc == cli_json("both", "--config", LLAMA_8B, "--train-tokens", "1T",
                           "--gpu-hour-cost", "2", "--gpu-clock-mhz", "1800",
                           "--scan-nodes", "1,2,4")
    assert [p["nodes"] for p in doc["scaling"]] == [1, 2, 4]
    assert any(d["key"] == "gpu_clock_mhz" and d["value"] == "1800" for d in doc["defaults"])
    # The clock changes the projection: slower than at the accelerator's sustained clock.
    plain = projector.both(projector.load(LLAMA_8B))
    assert doc["results"]["iteration_time_ms"] != plain["results"]["iteration_time_ms"]


def test_performance_scan_as_text_equals_scan_as_list(cli_json):
    job = projector.load(LLAMA_8B)
    doc = projector.performance(job, scan_nodes="1,2")
    assert doc == projector.performance(job, scan_nodes=(1, 2))
    assert doc == cli_json("performance", "--config", LLAMA_8B, "--scan-nodes", "1,2")


@pytest.mark.parametrize("config", EXAMPLES, ids=example_id)
def test_workload_is_the_cli_document(config, cli_json):
    doc = projector.workload(projector.load(config))
    assert doc == cli_json("workload", "--config", config)
    assert doc["chunks"] and doc["chunks"][0]["ops"]


def test_config_is_the_cli_document(cli_json):
    job = projector.load(LLAMA_8B, overrides={"tp": 2, "mbs": 2})
    doc = projector.config(job)
    assert doc == cli_json("config", "--config", LLAMA_8B, "--tp", "2", "--mbs", "2", flag=True)
    assert doc == job.to_dict()
    assert doc["parallel"]["tp"] == 2


def test_profile_is_the_cli_document(cli_json):
    # No hardware override: the accelerator the trace was recorded on (an H100), as the CLI.
    job = projector.load(QWEN, overrides={"gpus_per_node": 1})
    doc = projector.profile(job, QWEN_TRACE)
    assert doc == cli_json("profile", "--trace", QWEN_TRACE, "--config", QWEN,
                           "--gpus-per-node", "1")
    assert doc["kind"] == "measured_profile"
    assert doc["layers"]["forward"]["layers"] == 24
    gap = projector.profile(job, pathlib.Path(QWEN_TRACE), launch_gap_us=20)
    assert gap == cli_json("profile", "--trace", QWEN_TRACE, "--config", QWEN,
                           "--gpus-per-node", "1", "--launch-gap-us", "20")


def test_benchmark_mode_is_the_cli_document(cli_json, tmp_path):
    job = projector.load(QWEN, overrides={"gpus_per_node": 1})
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(projector.profile(job, QWEN_TRACE)))
    target = projector.load(QWEN, overrides={"gpus_per_node": 1, "hardware": "h100"})
    for mode in ("benchmark", "both"):
        doc = projector.performance(target, profiling_mode=mode, profile=profile)
        assert doc == cli_json("performance", "--config", QWEN, "--gpus-per-node", "1",
                               "--hardware", "h100", "--profiling-mode", mode,
                               "--profile", str(profile))
        assert "benchmark" in doc
    # A forward-only trace cannot anchor training memory: refused as by the CLI, by both() and
    # by memory() alike; memory() in benchmark mode needs the profile.
    with pytest.raises(projector.InputError) as err:
        projector.both(target, memory_mode="benchmark", profile=profile)
    assert err.value.key == "memory"
    with pytest.raises(projector.InputError) as err:
        projector.memory(target, memory_mode="benchmark", profile=profile)
    assert err.value.key == "memory"
    binary = os.environ.get("PROJECTOR_BINARY", os.path.join(ROOT, "build", "release", "projector"))
    cli = subprocess.run([binary, "memory", "--config", QWEN,
                          "--gpus-per-node", "1", "--hardware", "h100", "--memory-mode",
                          "benchmark", "--profile", str(profile), "--json", "-"],
                         capture_output=True, text=True)
    assert cli.returncode == 2 and "memory" in cli.stderr + cli.stdout
    with pytest.raises(projector.InputError) as err:
        projector.memory(target, memory_mode="benchmark")
    assert err.value.key == "profile"
    assert projector.memory(target, memory_mode="simulate") == projector.memory(target)


def test_hardware_list_is_the_cli_document(cli_json):
    doc = projector.hardware()
    assert doc == cli_json("hardware", "list", flag=True)
    assert doc == projector.hardware("list")
    names = [a["name"] for a in doc["accelerators"]]
    assert "mi300x" in names and doc["networks"]
    mi300x = doc["accelerators"][names.index("mi300x")]
    assert mi300x["peak_tflops"]["bf16"] > 0 and mi300x["hbm_bytes"] > 0


@pytest.mark.parametrize("name", ["mi300x", "h100", "gfx942", "h100_ib400"])
def test_hardware_show_is_the_cli_document(name, cli_json):
    doc = projector.hardware("show", name)
    assert doc == cli_json("hardware", "show", name, flag=True)
    assert doc["name"]


def test_hardware_compare_is_the_cli_document(cli_json):
    facts = projector.hardware("compare", "mi300x", "h100")
    assert facts == cli_json("hardware", "compare", "mi300x", "h100", flag=True)
    assert "projection" not in facts
    doc = projector.hardware("compare", "mi300x", "h100", config=LLAMA_8B, nodes=2)
    assert doc == cli_json("hardware", "compare", "mi300x", "h100", "--config", LLAMA_8B,
                           "--nodes", "2", flag=True)
    p = doc["projection"]
    assert p["a"]["world_size"] == 16
    assert p["speedup_tokens_per_s_per_gpu"] == pytest.approx(
        p["b"]["tokens_per_s_per_gpu"] / p["a"]["tokens_per_s_per_gpu"])


def test_models_is_the_cli_document(cli_json):
    doc = projector.models()
    assert doc == cli_json("models", "list", flag=True)
    llama = [m for m in doc["models"] if m["name"] == "llama3.1_8B"]
    assert llama and llama[0]["layers"] == 32
    assert 7.5e9 < llama[0]["params"] < 8.5e9


# ------------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("key", ["tp", "nodes", "mbs", "sync_free_stage", "num_layers"])
def test_override_beyond_64_bits_names_the_key(key):
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides={key: 2**70})
    assert err.value.key == key
    assert err.value.file == "overrides"


def test_override_beyond_the_count_bound_names_the_key():
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides={"tp": 2**40})
    assert err.value.key == "tp"


@pytest.mark.parametrize("key,value", [
    ("tp", [2]), ("tp", None), ("tp", 2.0), ("tp", True), ("tp", "2"), ("tp", -1),
    ("sync_free_stage", "2"), ("sync_free_stage", 7), ("enable_deepep", 1),
    ("enable_deepep", None), ("allow_tp_beyond_node", [True]), ("moe_expert_load_cv", "x"),
    ("moe_expert_load_cv", float("nan")), ("hardware", None), ("hardware", 3),
    ("pipeline_schedule", 1), ("lr", None), ("lr", float("inf")), ("lr", {"a": 1}),
    ("lr", "\ud800"),
])
def test_override_of_a_wrong_type_names_the_key(key, value):
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides={key: value})
    assert err.value.key == key


def test_overrides_and_paths_of_a_wrong_type():
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides=[("tp", 2)])
    assert err.value.key == "overrides"
    with pytest.raises(projector.InputError) as err:
        projector.load(LLAMA_8B, overrides={2: 2})
    assert err.value.key == "overrides"
    with pytest.raises(projector.InputError) as err:
        projector.load(42)
    assert err.value.key == "path"


def test_runs_file_with_invalid_utf8_names_file_and_line(tmp_path, cli_json):
    text = pathlib.Path(ROOT, "data", "validation", "calibration_runs.yaml").read_bytes()
    first_id = b"- id: megatron-sc21-gpt-1.7b-a100x32\n"
    assert text.splitlines(keepends=True)[2] == first_id
    bad = tmp_path / "runs.yaml"
    bad.write_bytes(text.replace(first_id, b"- id: megatron-sc21-gpt-1.7b-a100x32-caf\xe9\n", 1))
    with pytest.raises(projector.InputError) as err:
        projector.validate(bad)
    assert err.value.file == str(bad)
    assert err.value.line == 3
    assert "UTF-8" in err.value.message
    # The CLI refuses it with the same one line (exit 2).
    proc = subprocess.run([os.environ.get("PROJECTOR_BINARY", "projector"), "validate", str(bad)],
                          capture_output=True, text=True, errors="replace")
    assert proc.returncode == 2
    assert f"{bad}:3:" in proc.stderr


@pytest.mark.parametrize("kwargs,key", [
    ({"threads": -1}, "threads"), ({"threads": 2**70}, "threads"), ({"threads": "2"}, "threads"),
    ({"threads": 1.5}, "threads"), ({"nodes": 0}, "nodes"), ({"nodes": 2**70}, "nodes"),
    ({"memory_limit": "0.9"}, "memory_limit"), ({"include_vshape": 1}, "include_vshape"),
    ({"objective": 3}, "objective"), ({"gpu_hour_cost": -1}, "gpu_hour_cost"),
])
def test_sweep_argument_of_a_wrong_value_names_it(kwargs, key):
    with pytest.raises(projector.InputError) as err:
        projector.sweep(projector.load(LLAMA_8B), grid={"tp": [1]}, **kwargs)
    assert err.value.key == key


@pytest.mark.parametrize("kwargs,key", [
    ({"profiling_mode": "fast"}, "profiling_mode"), ({"profiling_mode": "benchmark"}, "profile"),
    ({"memory_mode": "benchmark"}, "profile"), ({"gpu_clock_mhz": 1.0}, "gpu_clock_mhz"),
    ({"gpu_clock_mhz": 1e6}, "gpu_clock_mhz"), ({"scan_nodes": [0]}, "scan_nodes"),
    ({"scan_nodes": "1,x"}, "scan_nodes"), ({"scan_nodes": [2**70]}, "scan_nodes"),
    ({"benchmark_gpus": -1}, "benchmark_gpus"), ({"train_tokens": [1]}, "train_tokens"),
])
def test_projection_argument_of_a_wrong_value_names_it(kwargs, key):
    job = projector.load(LLAMA_8B)
    for fn in (projector.performance, projector.both):
        with pytest.raises(projector.InputError) as err:
            fn(job, **kwargs)
        assert err.value.key == key


def test_hardware_and_profile_bad_input():
    with pytest.raises(projector.InputError) as err:
        projector.hardware("frobnicate")
    assert err.value.key == "command"
    with pytest.raises(projector.InputError) as err:
        projector.hardware("show")
    assert err.value.key == "names"
    with pytest.raises(projector.InputError) as err:
        projector.hardware("list", config=LLAMA_8B)
    assert err.value.key == "config"
    with pytest.raises(projector.InputError) as err:
        projector.hardware("compare", "mi300x", "h100", config=LLAMA_8B, nodes=-2)
    assert err.value.key == "nodes"
    with pytest.raises(projector.InputError):
        projector.hardware("show", "no-such-accelerator")
    job = projector.load(QWEN, overrides={"gpus_per_node": 1})
    with pytest.raises(projector.InputError) as err:
        projector.profile(job, QWEN_TRACE, pp_rank=-1)
    assert err.value.key == "pp_rank"
    missing = os.path.join(ROOT, "tests", "no-such-trace.json")
    with pytest.raises(projector.InputError) as err:
        projector.profile(job, missing)
    assert err.value.file == missing
