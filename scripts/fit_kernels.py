#!/usr/bin/env python3
"""Fit the isolated-kernel efficiencies of data/hardware from the published kernel rows of
data/kernels (docs/kernels.md).

Each constant is one multiplier on a cost function's rate (a fraction of a peak), so the fit is
a fixed point: price every row with `projector kernels --json` as a projection would, divide the
constant by the median of measured time / predicted time over the rows it prices, repeat until
the medians are 1 (6 passes: the tile, wave and launch terms make the rate slightly non-linear).
Only constants with at least MIN_ROWS rows are fitted; every other value keeps its source. The
written source names the rule, the row count, some ids and the residual after the fit, which
`projector hardware show NAME` prints.

Usage: scripts/fit_kernels.py [--projector build/release/projector] [--check]
  --check: fit into a scratch copy and exit 1 when a shipped value differs by more than 0.5 %
           (the staleness test in tests/kernels).
Needs only the Python standard library.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_ROWS = 3
PASSES = 6

# Attention backends a framework runs by default (the "fused" fractions): TE / cuDNN / FA3 / FA4 on
# NVIDIA, AITER / CK (TE's ROCm backends, Primus-Turbo) on AMD, Pallas / Splash on TPUs. FA2-class
# kernels (flash-attn 2, Triton) price the `fa2` fractions torchtitan's SDPA path uses.
FUSED = {"cudnn", "fa3", "fa4", "te", "aiter", "ck"}
FA2 = {"fa2", "triton"}
# On AMD parts the frameworks' fused attention is AITER's assembly v3 kernels: Primus' images set
# NVTE_CK_USES_FWD_V3=1 and NVTE_CK_USES_BWD_V3=1, so Transformer Engine's CK backend (Megatron,
# MaxText's TE) runs them, as Primus-Turbo's flash attention does. Where a part has rows of those
# kernels, its 16-bit fused fractions are fitted on them alone; the other AITER entry points
# (aiter.flash_attn_func in HipKittens' harness), CK tile and HipKittens' own kernels are checked.
AMD_FRAMEWORK_ATTENTION = "AITER asm FA kernel"


# Ampere has no cuDNN preference: Transformer Engine gives FusedAttention precedence over
# FlashAttention only from sm90 (TE attention/dot_product_attention/utils.py get_attention_backend,
# "Disabling FlashAttention to give FusedAttention preference on Hopper+"), so on these parts the
# frameworks' fused attention is flash-attn 2 and its rows fit the fused fractions too.
AMPERE = ("a100_80gb", "a100_40gb")


def amd_framework_attention(r):
    return r["library"].startswith(AMD_FRAMEWORK_ATTENTION)

# Where a constant is absent from a file, the fit starts from the value the cost model falls back
# to (cost/memory_ops.cpp, cost/gemm.cpp).
START = {"hbm_gather_fraction": 0.30, "grouped_gemm_fraction": 1.0, "ssd_scan_fraction": 1.0,
         "grouped_gemm_fraction_fp8": 1.0, "ep_kernel_unit_bytes_per_s": 2.0e10,
         "attention_fp8_fwd_fraction": 0.5, "attention_fp8_bwd_fraction": 0.5,
         "attention_mxfp8_fwd_fraction": 0.5, "attention_mxfp8_bwd_fraction": 0.5}
# The 8-bit attention fractions (cuDNN's FP8 / MXFP8 kernels, Transformer Engine's fp8_dpa).
FP8_ATTENTION = ("attention_fp8_fwd_fraction", "attention_fp8_bwd_fraction",
                 "attention_mxfp8_fwd_fraction", "attention_mxfp8_bwd_fraction")
# Constants that are rates, not fractions of a peak: not capped at 1.
RATES = {"ep_kernel_unit_bytes_per_s"}

# Parts without rows of a class borrow a measured sibling's fit, as an estimate that names the
# rows: the memory-bound MoE permute kernels are measured on the H200 (and the fused HIP ones on the
# MI300X) only, and their fraction of
# HBM peak is a property of the kernel (an index gather / scatter of token rows), so every NVIDIA
# part of the same software stack borrows it; attention is compute-bound, so the parts with the
# H200's GH100 die (same SMs and clocks) borrow its cuDNN fractions.
HOPPER = ["h100_sxm", "h100_sxm_96gb_500w", "h800"]
BORROW = {
    # GB200 is the B200's die and HBM3e stack on the NVL72 board: its streaming fraction.
    "b200": [(("hbm_elementwise_fraction",), ["gb200"]),
             # DeepEP's per-SM copy rate: GB200 has the B200's SM and no SM sweep of its own.
             (("ep_kernel_unit_bytes_per_s",), ["gb200"]),
             # mamba_ssm's Triton SSD kernels are timed on the B200; GB200 runs them on its die.
             (("ssd_scan_fraction",), ["gb200"])],
    # Primus-Turbo's HIP permute / unpermute is measured on the MI300X only; the other CDNA 3 / 4
    # parts run the same kernel (Primus-Turbo builds it for gfx942 and gfx950).
    # PyTorch's fused Adam is measured on the 500 W Grand Teton H100 only; the fraction of HBM peak a
    # streaming optimizer step reaches is a property of the kernel and the GH100 memory system.
    "h100_sxm_96gb_500w": [(("hbm_optimizer_fraction",), ["h100_sxm", "h800", "h200"])],
    # The A100 40GB is the 80GB part's GA100 die with half the HBM.
    "a100_80gb": [(("attention_fwd_fraction", "attention_fa2_fwd_fraction"), ["a100_40gb"])],
    "mi300x": [(("hbm_gather_fraction",), ["mi325x", "mi350x", "mi355x"]),
               # The MI325X is the MI300X's gfx942 die (304 CUs) with more HBM and board power;
               # the fractions are of the peak at each part's own sustained clock.
               (("attention_fwd_fraction", "attention_bwd_fraction"), ["mi325x"])],
    # The MI350X is the MI355X's gfx950 die (256 CUs), air-cooled at a lower clock.
    "mi355x": [(("attention_fwd_fraction", "attention_bwd_fraction"), ["mi350x"])],
    # Megatron's eager cross entropy is measured on the H100 only; its fraction of HBM peak is a
    # property of the kernels (fp32 streaming passes over the logits), lent as the permute one is.
    "h100_sxm": [(("hbm_loss_fraction",),
                  ["h100_sxm_96gb_500w", "h800", "h200", "h20", "b200", "gb200"])],
    "h200": [(("hbm_permute_fraction", "hbm_gather_fraction"),
              HOPPER + ["h20", "b200", "gb200"]),
             (("attention_fwd_fraction", "attention_bwd_fraction") + FP8_ATTENTION, HOPPER),
             # The same Triton SSD kernels on the H200's GH100 die (same SMs and clocks).
             (("ssd_scan_fraction",), HOPPER + ["h20"])],
    # cuDNN's 8-bit attention is published on the NVL72 parts only; the B200 has GB200's die (the
    # B300, derived from the B200, takes them too: GB300's own rows are 10-40 % faster, an open
    # point).
    "gb200": [(FP8_ATTENTION, ["b200"])],
}

# (part, constant) pairs that take a sibling's fit even where the part has rows of its own: the
# H100's attention rows (PyTorch SDPA at 16 heads and one sequence, a 2024 cuDNN, one FA3 paper
# shape) check the H200's cuDNN training-shape fits of the same GH100 die, they do not refit them.
BORROWERS = {(t, key) for pairs in BORROW.values() for keys, targets in pairs for key in keys
             for t in targets}

# Constants fitted on the rows of every part of one die together (same SMs, clocks and kernels;
# the parts differ in HBM and board power, which the cost model prices separately): the 16-bit
# grouped GEMM main loop on GH100 is published for torch._grouped_mm on the H100 and the H200,
# each too few rows alone.
GH100 = ["h100_sxm", "h100_sxm_96gb_500w", "h200", "h800"]
POOL = {"grouped_gemm_fraction": GH100}


def pool_of(acc, key):
    members = POOL.get(key, [])
    return members if acc in members else [acc]


# Norm and softmax forwards as the frameworks run them: one fused kernel (TE, Apex, Liger, QuACK,
# FlashInfer, hp_rms_norm) that reads and writes each tensor once, a memory-bound pass like the
# ones hbm_elementwise_fraction prices. PyTorch-eager and HuggingFace providers run several
# kernels (their traffic is not one pass) and stay out; so do backward passes.
FUSED_NORM_KINDS = {"rmsnorm_fwd", "layernorm_fwd", "fused_add_rmsnorm_fwd", "softmax"}
EAGER_PROVIDERS = ("'torch'", "'huggingface'", "torch.compile", "torchcompile")


def fused_norm_forward(r):
    return (r["kind"] in FUSED_NORM_KINDS and r["pass"] == "fwd"
            and not any(p in r["library"] for p in EAGER_PROVIDERS)
            and ".backward." not in r["id"] and ".torch." not in r["id"]
            and ".torchcompile." not in r["id"] and ".huggingface." not in r["id"])


def dtype_key(dtype):
    return {"nvfp4": "fp4", "mxfp4": "fp4", "fp16": "fp16"}.get(dtype, dtype)


def rules(rows_by_id):
    """(accelerator, constant) -> selection predicate and a readable rule."""
    out = {}
    accs = {r["accelerator"] for r in rows_by_id.values()}
    accs = sorted(accs | {m for members in POOL.values() if accs & set(members) for m in members})
    for a in accs:
        asm = any(r["accelerator"] == a and r["op_class"] == "attention"
                  and amd_framework_attention(r) for r in rows_by_id.values())
        for d in ("bf16", "fp16", "tf32", "fp8", "mxfp8", "fp4"):
            out[(a, "gemm_peak_fraction." + d)] = (
                lambda r, a=a, d=d: r["op_class"] == "gemm" and r["accelerator"] == a
                and dtype_key(r["dtype"]) == d,
                f"op_class gemm, dtype {d}" + (" (per-tensor scaling)" if d == "fp8" else ""))
        out[(a, "gemm_fp8_blockwise_fraction")] = (
            lambda r, a=a: r["op_class"] == "gemm" and r["accelerator"] == a
            and r["dtype"] == "fp8" and r["scaling"] == "blockwise",
            "op_class gemm, dtype fp8, scaling blockwise")
        die = pool_of(a, "grouped_gemm_fraction")
        out[(a, "grouped_gemm_fraction")] = (
            lambda r, die=die: r["op_class"] == "grouped_gemm" and r["accelerator"] in die
            and r["dtype"] in ("bf16", "fp16"),
            "op_class grouped_gemm, 16-bit" + (f" (pooled: {', '.join(die)})"
                                               if len(die) > 1 else ""))
        out[(a, "grouped_gemm_fraction_fp8")] = (
            lambda r, a=a: r["op_class"] == "grouped_gemm" and r["accelerator"] == a
            and r["dtype"] in ("fp8", "mxfp8", "nvfp4", "mxfp4"), "op_class grouped_gemm, 8/4-bit")
        for key, backends, p, dts in (
                ("attention_fwd_fraction", FUSED, "fwd", ("bf16", "fp16")),
                ("attention_bwd_fraction", FUSED, "bwd", ("bf16", "fp16")),
                ("attention_fa2_fwd_fraction", FA2, "fwd", ("bf16", "fp16")),
                ("attention_fa2_bwd_fraction", FA2, "bwd", ("bf16", "fp16")),
                ("attention_fp8_fwd_fraction", FUSED, "fwd", ("fp8",)),
                ("attention_fp8_bwd_fraction", FUSED, "bwd", ("fp8",)),
                ("attention_mxfp8_fwd_fraction", FUSED, "fwd", ("mxfp8",)),
                ("attention_mxfp8_bwd_fraction", FUSED, "bwd", ("mxfp8",))):
            tpu = a.startswith("tpu")
            # TPUs publish forward and forward+backward timings: with the forward fitted, the
            # fwd_bwd rows fit the backward.
            passes = (p, "fwd_bwd") if tpu and p == "bwd" else (p,)
            only_asm = asm and backends is FUSED and dts[0] == "bf16"
            if a in AMPERE and backends is FUSED and dts[0] == "bf16":
                backends = FUSED | FA2
            out[(a, key)] = (
                lambda r, a=a, b=backends, ps=passes, tpu=tpu, dts=dts, only_asm=only_asm:
                r["op_class"] == "attention"
                and r["accelerator"] == a and r["pass"] in ps and r["dtype"] in dts
                and (r["backend"] in b or (tpu and b is FUSED))
                and (not only_asm or amd_framework_attention(r))
                # cuDNN's 8-bit kernels with a sliding window are a slow path (they do not skip
                # the masked tiles as the 16-bit ones do): checked, not fitted.
                and not (r["window"] and dts[0] in ("fp8", "mxfp8")),
                f"op_class attention, dtype {'/'.join(dts)}, pass {'/'.join(passes)}, backend in "
                f"{sorted(backends)}" + (" (TPU: every backend)" if tpu and backends is FUSED else "")
                + (" (Ampere: Transformer Engine runs flash-attn 2 below sm90)"
                   if a in AMPERE and "fa2" in backends and "cudnn" in backends else "")
                + (" (AMD: the AITER asm v3 kernels the frameworks run, Primus' "
                   "NVTE_CK_USES_FWD_V3 / BWD_V3)" if only_asm else ""))
        # Streaming kernels whose traffic the row states without ambiguity (a STREAM kernel, or
        # a stated byte count); fused norm / activation / cast kernels move a number of tensors
        # their rows do not always say, so they are checked, not fitted.
        out[(a, "hbm_elementwise_fraction")] = (
            lambda r, a=a: r["op_class"] == "memory" and r["accelerator"] == a
            and (r["kind"] in ("copy", "triad", "stream_add") or r.get("bytes", 0) > 0
                 or fused_norm_forward(r)),
            "op_class memory, STREAM kinds, a stated byte count or a fused norm / softmax forward")
        # Mamba-2's SSD scan as mamba_ssm's Triton kernels run it (the forward rows: the chunk
        # products at this fraction of the dense GEMM model, the state pass at the streaming one).
        out[(a, "ssd_scan_fraction")] = (
            lambda r, a=a: r["op_class"] == "linear_attention" and r["accelerator"] == a
            and r["kind"] == "mamba2_ssd", "op_class linear_attention, kind mamba2_ssd")
        out[(a, "hbm_loss_fraction")] = (
            lambda r, a=a: r["op_class"] == "memory" and r["accelerator"] == a
            and r["kind"] == "cross_entropy", "op_class memory, kind cross_entropy")
        out[(a, "hbm_optimizer_fraction")] = (
            lambda r, a=a: r["op_class"] == "memory" and r["accelerator"] == a
            and r["kind"] == "adam", "op_class memory, kind adam")
        out[(a, "hbm_permute_fraction")] = (
            lambda r, a=a: r["op_class"] == "permute" and r["accelerator"] == a
            and r["impl"] == "eager", "op_class permute, impl eager")
        out[(a, "hbm_gather_fraction")] = (
            lambda r, a=a: r["op_class"] == "permute" and r["accelerator"] == a
            and r["impl"] in ("te_fused", "triton", "other"), "op_class permute, fused impls")
        # DeepEP's normal kernels within one node: their per-SM copy rate, from a part whose table
        # measures the same kernel at two or more SM counts, on the rows at its smallest count
        # (the SM-bound end of the sweep; at the larger counts the links bound it).
        counts = {r["sms"] for r in rows_by_id.values() if deepep_intranode(r, a)}
        if len(counts) >= 2:
            out[(a, "ep_kernel_unit_bytes_per_s")] = (
                lambda r, a=a, c=min(counts): deepep_intranode(r, a) and r["sms"] == c,
                f"op_class ep_dispatch, impl deepep_normal, one node, the smallest of the SM "
                f"counts {sorted(counts)} its rows sweep ({min(counts)} SMs)")
    return out


def deepep_intranode(r, acc):
    return (r["op_class"] == "ep_dispatch" and r["accelerator"] == acc
            and r["impl"] == "deepep_normal" and r.get("sms", 0) > 0 and r.get("nodes", 1) == 1)


def training_shape(op_class, s):
    """Whether a row's problem is of the size a training step runs (the fits use only these; the
    gate checks every row): GEMMs with tokens, hidden and K of 1024 or more; grouped (expert)
    GEMMs with hidden and K of 1024 or more and 512 or more rows per group, since a fine-grained
    MoE at MBS 1 gives each local expert only a few hundred to a few thousand rows (DeepSeek-V3 /
    Qwen3 at seq 4096, EP 8: 512-1024); attention over 2048 tokens or more, memory-bound kernels
    moving 32 MiB or more, linear-attention / SSD scans over 32k tokens or more."""
    if op_class == "gemm":
        return min(s.get("m", 0), s.get("n", 0), s.get("k", 0)) >= 1024
    if op_class == "grouped_gemm":
        rows = s.get("m", 0) / s.get("groups", 1.0)
        return rows >= 512 and min(s.get("n", 0), s.get("k", 0)) >= 1024
    if op_class == "attention":
        return s.get("seq_q", 0) >= 2048
    if op_class == "memory":
        size = s.get("bytes", 2.0 * s.get("rows", 0) * s.get("cols", 0))
        return size == 0 or size >= 32 * 2**20  # a bandwidth without a size is a STREAM run
    if op_class == "linear_attention":
        # A training microbatch's scan: 32k tokens or more (a Mamba layer at MBS 2 x 16k, or 4 x
        # 8k); below, an SSD call's working set sits in L2 or its launches dominate.
        return s.get("batch", 1) * s.get("seq_q", 0) >= 32768
    return True


def load_rows(kernels_json, kernels_dir):
    """Priced rows joined with the fields of the YAML rows the JSON does not carry."""
    meta = {}
    for name in sorted(os.listdir(kernels_dir)):
        if not name.endswith(".yaml"):
            continue
        # Small reader for the fields used here: the row id, then shape keys below it.
        cur = None
        for line in open(os.path.join(kernels_dir, name)):
            m = re.match(r"^- id: (.+)$", line)
            if m:
                cur = meta.setdefault(m.group(1).strip().strip("'\""), {})
                continue
            m = re.match(r"^  (scaling|library): (.+)$", line) or re.match(
                r"^    (pass|backend|kind|impl): (.+)$", line)
            if cur is not None and m:
                cur[m.group(1)] = m.group(2).strip().strip("'\"")
            m = re.match(r"^    (m|n|k|batch|groups|seq_q|bytes|rows|cols|sms|nodes|window): ([0-9.eE+]+)$",
                         line)
            if cur is not None and m:
                cur[m.group(1)] = float(m.group(2))
            # Stated group sizes (one flow list on the line): groups and all rows follow.
            m = re.match(r"^    m_per_group: \[([0-9, ]+)\]$", line)
            if cur is not None and m:
                sizes = [float(x) for x in m.group(1).split(",") if x.strip()]
                cur["m"], cur["groups"] = sum(sizes), float(len(sizes))
    rows = {}
    for r in json.load(open(kernels_json))["rows"]:
        if "error_pct" not in r:
            continue
        m = meta.get(r["id"], {})
        r["pass"] = m.get("pass", "fwd")
        r["backend"] = m.get("backend", "")
        r["kind"] = m.get("kind", "")
        r["impl"] = m.get("impl", "")
        r["scaling"] = m.get("scaling", "")
        r["library"] = m.get("library", "")
        r["training_shape"] = training_shape(r["op_class"], m)
        r["bytes"] = m.get("bytes", 0.0)
        r["sms"] = int(m.get("sms", 0))
        r["nodes"] = int(m.get("nodes", 1))
        r["window"] = int(m.get("window", 0))
        r["seq_q"] = m.get("seq_q", 0.0)
        rows[r["id"]] = r
    return rows


def read_value(text, key):
    if key.startswith("gemm_peak_fraction."):
        d = key.split(".")[1]
        block = re.search(r"\n  gemm_peak_fraction:\n((?:    .*\n)+)", text)
        if not block:
            return None
        m = re.search(r"^    " + d + r": \{value: ([0-9.eE+-]+)", block.group(1), re.M)
        return float(m.group(1)) if m else None
    m = re.search(r"\n  " + key + r": \{value: ([0-9.eE+-]+)", text)
    return float(m.group(1)) if m else None


def write_value(text, key, value, source):
    entry = "{value: %s, source: \"%s\"}" % (f"{value:.4g}", source)
    if key.startswith("gemm_peak_fraction."):
        d = key.split(".")[1]
        block = re.search(r"\n  gemm_peak_fraction:\n((?:    .*\n)+)", text)
        line = re.compile(r"^    " + d + r":.*$", re.M)
        if line.search(block.group(1)):
            new_block = line.sub(lambda _m: "    " + d + ": " + entry, block.group(1), count=1)
        else:
            new_block = block.group(1) + "    " + d + ": " + entry + "\n"
        return text[:block.start(1)] + new_block + text[block.end(1):]
    pat = re.compile(r"^  " + key + r": .*$", re.M)
    if pat.search(text):
        return pat.sub(lambda _m: "  " + key + ": " + entry, text, count=1)
    return text.rstrip("\n") + "\n  " + key + ": " + entry + "\n"


def run_kernels(projector, data_dir, out):
    subprocess.run([projector, "kernels", "--data-dir", data_dir, "--json", out], check=True,
                   capture_output=True)


def fit(projector, data_dir):
    acc_dir = os.path.join(data_dir, "hardware", "accelerators")
    kernels_dir = os.path.join(data_dir, "kernels")
    out = os.path.join(tempfile.mkdtemp(), "k.json")
    notes = {}
    original = {}
    for name in os.listdir(acc_dir):
        text = open(os.path.join(acc_dir, name)).read()
        for key in ("attention_fwd_fraction", "attention_bwd_fraction"):
            original[(name[:-5], key)] = read_value(text, key)
    for p in range(PASSES):
        run_kernels(projector, data_dir, out)
        rows = load_rows(out, kernels_dir)
        for (acc, key), (pred, rule) in sorted(rules(rows).items()):
            sel = [r for r in rows.values() if pred(r) and r["training_shape"]]
            # Blockwise-scaled FP8 (DeepSeek 1x128 / 128x128) carries its own scaling work; the
            # fp8 fraction prices per-tensor recipes, the frameworks' default, when it has rows.
            if key == "gemm_peak_fraction.fp8":
                sel = [r for r in sel if r["scaling"] != "blockwise"]
            if len(sel) < MIN_ROWS or (acc, key) in BORROWERS:
                continue  # a part that borrows its die sibling's fit: its own rows check it
            path = os.path.join(acc_dir, acc + ".yaml")
            text = open(path).read()
            if "\ncalibration:" not in text:
                continue  # a derived part takes its sibling's calibration: its rows check that
            old = read_value(text, key)
            if (old is None or old <= 0.0) and key == "gemm_fp8_blockwise_fraction":
                old = read_value(text, "gemm_peak_fraction.fp8")  # priced like per-tensor fp8
            if old is None or old <= 0.0:
                old = START.get(key)
            if old is None:
                continue
            ratio = statistics.median(r["measured_s"] / r["predicted_s"] for r in sel)
            new = old / ratio if key in RATES else min(1.0, max(0.01, old / ratio))
            notes[(acc, key)] = (new, rule, sel)
            open(path, "w").write(write_value(text, key, new, "fitting"))
    # Final pass: residuals after the fit, then the sources.
    run_kernels(projector, data_dir, out)
    rows = load_rows(out, kernels_dir)
    for (acc, key), (new, rule, sel) in sorted(notes.items()):
        res = sorted(abs(rows[r["id"]]["error_pct"]) for r in sel if r["id"] in rows)
        med = statistics.median(res)
        p90 = res[min(len(res) - 1, int(round(0.9 * (len(res) - 1))))]
        ids = [r["id"] for r in sel]
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        source = (f"fit (scripts/fit_kernels.py): median of measured/predicted over the "
                  f"{len(ids)} rows of data/kernels with "
                  f"{'an accelerator of the same die' if len(pool_of(acc, key)) > 1 else 'accelerator ' + acc}"
                  f", {rule} ({shown}); "
                  f"residual median |error| {med:.1f}%, P90 {p90:.1f}%")
        path = os.path.join(acc_dir, acc + ".yaml")
        text = open(path).read()
        open(path, "w").write(write_value(text, key, new, source))
        siblings = [t for keys, targets in BORROW.get(acc, []) if key in keys for t in targets]
        for sibling in siblings:
            spath = os.path.join(acc_dir, sibling + ".yaml")
            borrowed = (f"estimate: no {key.split('_')[1]} kernel rows on this part; the "
                        f"fraction the same kernels reach on {acc} (" + source + ")")
            if key in RATES:
                borrowed = (f"estimate: no SM sweep of these kernels on this part; the rate the "
                            f"same SM reaches on {acc} (" + source + ")")
            stext = open(spath).read()
            if "\ncalibration:" not in stext:
                continue  # a derived entry takes its sibling's calibration (derived_from)
            open(spath, "w").write(write_value(stext, key, new, borrowed))
    # A backward fraction without rows keeps its ratio to the forward one (the estimate it was).
    for (acc, key), (new, rule, sel) in sorted(notes.items()):
        fwd0, bwd0 = original.get((acc, key)), original.get((acc, "attention_bwd_fraction"))
        if key != "attention_fwd_fraction" or (acc, "attention_bwd_fraction") in notes:
            continue
        if not fwd0 or not bwd0:
            continue
        path = os.path.join(acc_dir, acc + ".yaml")
        text = open(path).read()
        src = (f"estimate: no backward rows on this part; the fitted forward fraction x "
               f"{bwd0 / fwd0:.3f}, the bwd / fwd ratio of the previous estimates")
        open(path, "w").write(write_value(text, "attention_bwd_fraction", new * bwd0 / fwd0, src))
    return notes


# Each fused-attention workgroup's fixed work (attention_workgroup_tiles, in key tiles): fitted
# per part with the fractions, on the rows the part's attention fractions fit at every sequence
# length (the fractions use the training lengths only; the short ones identify the fixed work). A
# grid, each point with the fractions refitted; the value of least mean |log(measured /
# predicted)|. Parts whose rows have one length cannot separate it from the fraction: none.
WG_KEY = "attention_workgroup_tiles"
WG_GRID = [0.5 * i for i in range(0, 33)]
ATTENTION_KEYS = ("attention_fwd_fraction", "attention_bwd_fraction", "attention_fa2_fwd_fraction",
                  "attention_fa2_bwd_fraction") + FP8_ATTENTION


def workgroup_rows(rows, rule_map, acc):
    preds = [rule_map[(acc, k)][0] for k in ATTENTION_KEYS if (acc, k) in rule_map]
    return [r for r in rows.values() if any(p(r) for p in preds)]


# The B200 and the GB200 carry one die (same SMs, clocks and cuDNN kernels): one value for both,
# fitted on their rows together.
WG_POOLS = [["b200", "gb200"]]


def wg_pool(acc):
    return next((p for p in WG_POOLS if acc in p), [acc])


def fit_workgroup_tiles(projector, data_dir):
    acc_dir = os.path.join(data_dir, "hardware", "accelerators")
    kernels_dir = os.path.join(data_dir, "kernels")
    out = os.path.join(tempfile.mkdtemp(), "k.json")
    run_kernels(projector, data_dir, out)
    rows = load_rows(out, kernels_dir)
    rule_map = rules(rows)

    def pool_rows(rows, acc):
        return [r for a in wg_pool(acc) for r in workgroup_rows(rows, rule_map, a)]

    parts = []
    for acc in sorted({r["accelerator"] for r in rows.values()}):
        path = os.path.join(acc_dir, acc + ".yaml")
        if (acc, "attention_fwd_fraction") in BORROWERS or not os.path.exists(path):
            continue
        if "\ncalibration:" not in open(path).read():
            continue
        if len({r["seq_q"] for r in pool_rows(rows, acc)}) >= 2:
            parts.append(acc)
    scores = {acc: [] for acc in parts}
    for c in WG_GRID:
        for acc in parts:
            path = os.path.join(acc_dir, acc + ".yaml")
            text = open(path).read()
            open(path, "w").write(write_value(text, WG_KEY, c, "fitting"))
        fit(projector, data_dir)
        run_kernels(projector, data_dir, out)
        rows = load_rows(out, kernels_dir)
        for acc in parts:
            sel = pool_rows(rows, acc)
            loss = statistics.mean(abs(math.log(r["measured_s"] / r["predicted_s"])) for r in sel)
            scores[acc].append((loss, c, len(sel), len({r["seq_q"] for r in sel})))
    chosen = {}
    for acc in parts:
        loss, c, n, lengths = min(scores[acc])
        zero = scores[acc][0][0]
        pool = wg_pool(acc)
        where = ("this part's" if len(pool) == 1 else
                 f"the attention fractions of {' and '.join(pool)} (one die)")
        source = (f"fit (scripts/fit_kernels.py): the value of {WG_GRID[0]:g}..{WG_GRID[-1]:g} "
                  f"(step 0.5) with the least mean |log(measured / predicted)| over the {n} rows "
                  f"of data/kernels that fit {where if len(pool) > 1 else where + ' attention fractions'}, "
                  f"at every sequence length ({lengths} lengths), the fractions refitted at each "
                  f"value; mean |log| {loss:.3f} (without: {zero:.3f})")
        chosen[acc] = c
        path = os.path.join(acc_dir, acc + ".yaml")
        text = open(path).read()
        open(path, "w").write(write_value(text, WG_KEY, c, source))
        for keys, targets in BORROW.get(acc, []):
            if "attention_fwd_fraction" not in keys:
                continue
            for t in targets:
                tpath = os.path.join(acc_dir, t + ".yaml")
                ttext = open(tpath).read()
                if "\ncalibration:" not in ttext:
                    continue
                borrowed = (f"estimate: no attention rows on this part at several lengths; the "
                            f"value the same kernels take on {acc} (" + source + ")")
                open(tpath, "w").write(write_value(ttext, WG_KEY, c, borrowed))
    return chosen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    data = os.path.join(ROOT, "data")
    if not a.check:
        for acc, c in sorted(fit_workgroup_tiles(a.projector, data).items()):
            print(f"{acc:<12} {WG_KEY:<28} {c:g}")
        notes = fit(a.projector, data)
        for (acc, key), (new, rule, sel) in sorted(notes.items()):
            print(f"{acc:<12} {key:<28} {new:.4g}  ({len(sel)} rows)")
        return 0
    scratch = tempfile.mkdtemp()
    shutil.copytree(data, os.path.join(scratch, "data"))
    chosen = fit_workgroup_tiles(a.projector, os.path.join(scratch, "data"))
    notes = fit(a.projector, os.path.join(scratch, "data"))
    stale = []
    for acc, c in chosen.items():
        shipped = read_value(open(os.path.join(data, "hardware", "accelerators",
                                               acc + ".yaml")).read(), WG_KEY)
        if (shipped or 0.0) != c:
            stale.append(f"{acc} {WG_KEY}: shipped {shipped}, refit {c:g}")
    for (acc, key), (new, _, _) in notes.items():
        shipped = read_value(open(os.path.join(data, "hardware", "accelerators",
                                               acc + ".yaml")).read(), key)
        if shipped is None or abs(shipped - new) > 0.005 * new:
            stale.append(f"{acc} {key}: shipped {shipped}, refit {new:.4g}")
    for s in stale:
        print("stale:", s)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
