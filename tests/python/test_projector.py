"""`import projector` against the CLI: the same JSON documents, bad input named, a sweep."""
import glob
import os
import pathlib

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
