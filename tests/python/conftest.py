"""Shared fixtures: the built module (PYTHONPATH set by ctest) and the CLI beside it."""
import json
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PRIMUS_ENV = ("PRIMUS_TP", "PRIMUS_PP", "PRIMUS_EP", "PRIMUS_CP", "PRIMUS_VPP", "PRIMUS_ETP",
              "NNODES", "GPUS_PER_NODE", "PRIMUS_GPU_ARCH", "PRIMUS_GPU_CLOCK_MHZ", "PRIMUS_PATH")


@pytest.fixture(scope="session")
def cli_json(tmp_path_factory):
    """Runs `projector ARGS --json FILE` (the Primus environment cleared) and parses FILE;
    `flag=True` for commands whose --json is a switch that prints to stdout (config)."""
    binary = os.environ.get("PROJECTOR_BINARY", os.path.join(ROOT, "build", "release", "projector"))
    env = {k: v for k, v in os.environ.items() if k not in PRIMUS_ENV}
    out_dir = tmp_path_factory.mktemp("cli")

    def run(*args, flag=False):
        out = out_dir / "doc.json"
        extra = ["--json"] if flag else ["--json", str(out)]
        proc = subprocess.run([binary, *args, *extra], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout if flag else out.read_text())

    return run


@pytest.fixture(autouse=True)
def clean_primus_environment(monkeypatch):
    for name in PRIMUS_ENV:
        monkeypatch.delenv(name, raising=False)
