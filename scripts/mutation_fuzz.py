#!/usr/bin/env python3
"""Mutation fuzzer for the projector CLI: hostile variants of the bundled examples and model presets.

Each case takes a seed (an example experiment, a model preset wrapped in a minimal experiment, or
a MaxText / TorchRec experiment or torchtitan TOML job file of the fuzz seed corpora),
applies a few random mutations (hostile scalars, deleted / duplicated / reordered lines, YAML
constructs, truncation, stray bytes, hostile --set / environment / CLI flags) and runs
`projector {both|memory}` on it with a timeout. Every outcome must be one of:

  ok            exit 0 or 1 with no NaN / infinite / negative figure in the output
  clean error   exit 2 with one line "projector: error: <where>: ..." where <where> is a file
                (with a line when the key is in the file), a CLI flag or an environment variable

Anything else is a finding, kept as a reproducer under --out: a crash (signal, exit 3, a
sanitizer report), a timeout, an error message without a location, or nonsense in a successful
output. Deterministic for a given --seed. Runs the cases on --jobs processes (use `nice -n 19`
on a shared machine).

  nice -n 19 python3 scripts/mutation_fuzz.py --binary build/asan/projector --cases 2000 --jobs 2
"""
import argparse
import concurrent.futures as futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HOSTILE_SCALARS = [
    "0", "-1", "1", "2", "3", "7", "-7", "1024", "65536", "2147483647", "2147483648", "-2147483648",
    "4294967296", "4294967304", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "99999999999999999999", "1" * 400, "1" * 30000, "0x7fffffff", "0xFFFFFFFFFFFFFFFFFF", "0b1111",
    "0777", "1_000_000", "99999999999999999999:0", "1:30:00", "1e308", "1.0e+309", "-1.0e+309",
    ".inf", "-.inf", ".nan", ".NaN", "0.5", "-0.5", "1.5", "7.0", "1e-5", "1.0e-5", "nan", "inf",
    "true", "false", "yes", "no", "on", "off", "null", "~", "''", '""', "abc", "[]", "{}", "[1, 2]",
    "[0]*3+[1]*58", "[1]*1073741824", "([1]*9)*9", "{a: 1}", "&x 4", "*undefined_alias",
    "${PRIMUS_TP}", "${NO_SUCH_VAR}", "${NO_SUCH_VAR:1" + "0" * 30 + "}", "${:1}", "${X",
    "!!binary aGVsbG8=", "!!float 3", "!!int abc", "'01'", "\t4", "|\n  literal", ">\n  folded",
    "rope", "RMSNorm", "block", "full", "selective", "interleaved", "zbv-formatted", "dualpipev",
    "fp8", "hybrid", "E|(tt|)*3000|L", "Et|" * 200 + "L", "E" + "(" * 200 + "t" + ")" * 200 + "L",
]

HOSTILE_KEYS = [
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "group_query_attention", "kv_channels", "vocab_size", "padded_vocab_size",
    "make_vocab_size_divisible_by", "max_position_embeddings", "seq_length", "micro_batch_size",
    "global_batch_size", "tensor_model_parallel_size", "pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size",
    "num_virtual_stages_per_pipeline_rank", "num_layers_per_virtual_pipeline_stage",
    "virtual_pipeline_model_parallel_size", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "pipeline_model_parallel_layout", "num_experts",
    "moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
    "moe_layer_freq", "moe_expert_capacity_factor", "moe_grouped_gemm", "multi_latent_attention",
    "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim",
    "mtp_num_layers", "attention_dropout", "hidden_dropout", "recompute_granularity",
    "recompute_method", "recompute_num_layers", "recompute_layer_ids", "recompute_modules",
    "window_size", "window_attn_skip_freq", "pipeline_schedule_algorithm", "fp8", "bf16", "fp16",
    "sequence_parallel", "use_distributed_optimizer", "ddp_bucket_size", "swiglu",
    "normalization", "position_embedding_type", "tokenizer_type", "tokenizer_model",
    "turbo_sync_free_moe_stage", "overlap_grad_reduce", "use_megatron_fsdp", "attention_backend",
    "extends", "<<", "overrides", "framework", "config", "model",
]

ENV_VARS = ["PRIMUS_TP", "PRIMUS_PP", "PRIMUS_EP", "PRIMUS_CP", "PRIMUS_VPP", "PRIMUS_ETP",
            "NNODES", "GPUS_PER_NODE", "PRIMUS_GPU_ARCH"]
FLAGS = ["--tp", "--pp", "--vpp", "--cp", "--ep", "--etp", "--mbs", "--gbs", "--seq", "--nodes",
         "--gpus-per-node", "--gpu-arch", "--hardware", "--hardware-config", "--sync-free-stage",
         "--pipeline-schedule-algorithm"]
FLAG_VALUES = ["0", "-1", "1", "2", "3", "8", "16", "64", "1073741824", "1073741825", "2147483647",
               "99999999999999999999", "nan", "abc", "", "mi300x", "h100", "/dev/zero", "/tmp",
               "/nonexistent.yaml", "auto", "interleaved", "dualpipev", "1" * 5000]

# What an error line must start with to name where the problem is.
LOCATION = re.compile(r"^projector: error: (?:(?P<file>[^:\s]*[/.][^:]*):(?:(?P<line>\d+):)?"
                      r"|(?P<flag>--?[a-z][a-z0-9-]*): |(?P<env>environment [A-Z_]+): "
                      r"|command line: )")
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|"
                       r"ThreadSanitizer|Segmentation fault|terminate called")
# A file name the mutation wrote ("config: nan" -> nan.yaml) is echoed, not computed: not "nan.".
NONSENSE = re.compile(r"(?<![\w.-])(?:-?nan|-?inf)(?![\w.])|(?<![\w.])-\d+(?:\.\d+)? GiB",
                      re.IGNORECASE)


def seeds():
    """(name, kind, text): example experiments, and model presets (wrapped at run time)."""
    out = []
    # The other back-ends through their fuzz seeds: MaxText and TorchRec experiments (YAML) and
    # torchtitan job files (TOML, written as config.toml).
    for d, kind in (("examples", "experiment"), ("data/models", "preset"),
                    ("fuzz/corpus/maxtext", "experiment"), ("fuzz/corpus/torchrec", "experiment"),
                    ("fuzz/corpus/torchtitan", "toml")):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith(".yaml") or f.endswith(".toml"):
                with open(os.path.join(ROOT, d, f)) as fh:
                    out.append((f, kind, fh.read()))
    return out


def preset_experiment(preset_path, rnd):
    """A minimal experiment that reads a (mutated) model preset by absolute path."""
    return ("modules:\n  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
            f"    model: {preset_path}\n    overrides:\n"
            f"      micro_batch_size: {rnd.choice([1, 2])}\n"
            f"      global_batch_size: {rnd.choice([64, 128, 256])}\n"
            f"      seq_length: {rnd.choice([2048, 4096])}\n"
            f"      tensor_model_parallel_size: {rnd.choice([1, 2, 8])}\n")


def scalar_lines(lines):
    return [i for i, l in enumerate(lines) if re.match(r"^\s*[\w<]+\s*[:=]\s*\S", l)
            and not l.strip().startswith("#")]


def split_scalar(line):
    """(key, separator) of a `key: value` (YAML) or `key = value` (TOML) line."""
    m = re.match(r"^(\s*[\w<]+)\s*([:=])", line)
    return (m.group(1), m.group(2)) if m else (line, ":")


def mutate_text(text, rnd):
    lines = text.split("\n")
    op = rnd.randrange(14)
    idx = scalar_lines(lines)
    if op <= 4 and idx:  # replace a value (the most productive mutation)
        i = rnd.choice(idx)
        key, sep = split_scalar(lines[i])
        lines[i] = f"{key}{' =' if sep == '=' else ':'} {rnd.choice(HOSTILE_SCALARS)}"
    elif op == 5 and idx:  # add a hostile key next to an existing one
        i = rnd.choice(idx)
        indent = re.match(r"^\s*", lines[i]).group(0)
        lines.insert(i + 1, f"{indent}{rnd.choice(HOSTILE_KEYS)}: {rnd.choice(HOSTILE_SCALARS)}")
    elif op == 6 and lines:  # delete a line
        del lines[rnd.randrange(len(lines))]
    elif op == 7 and lines:  # duplicate a line
        i = rnd.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op == 8 and len(lines) > 2:  # swap two lines
        a, b = rnd.randrange(len(lines)), rnd.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    elif op == 9 and lines:  # re-indent a line
        i = rnd.randrange(len(lines))
        lines[i] = rnd.choice(["", " ", "  ", "\t", "      "]) + lines[i].lstrip()
    elif op == 10:  # truncate
        return text[: rnd.randrange(len(text) + 1)]
    elif op == 11:  # stray bytes
        pos = rnd.randrange(len(text) + 1)
        junk = rnd.choice(["\x00", "\xff", "\t", ":", "-", "[", "{", "&a", "*a", "!!", "%", "@",
                           "\r", "'", '"', "#", "?", "|", ">", "\u2028", "\ufeff"])
        return text[:pos] + junk + text[pos:]
    elif op == 12 and idx:  # anchors and aliases
        i = rnd.choice(idx)
        key, _, value = lines[i].partition(":")
        lines[i] = f"{key}: &anchor{value}"
        j = rnd.choice(idx)
        k2, _, _ = lines[j].partition(":")
        lines[j] = f"{k2}: *anchor"
    elif op == 13 and lines:  # a large value
        i = rnd.randrange(len(lines))
        lines.insert(i, rnd.choice(["big: [" + ",".join(["1"] * 5000) + "]",
                                    "deep: " + "[" * 300 + "]" * 300,
                                    "long: " + "x" * 100000]))
    return "\n".join(lines)


def make_case(index, seed_list, base_seed, work):
    rnd = random.Random(base_seed * 1_000_003 + index)
    name, kind, text = rnd.choice(seed_list)
    command = rnd.choice(["both", "memory"])
    for _ in range(rnd.choice([1, 1, 1, 2, 2, 3])):
        text = mutate_text(text, rnd)
    case_dir = os.path.join(work, f"case{index:05d}")
    os.makedirs(case_dir, exist_ok=True)
    if kind == "preset":
        preset = os.path.join(case_dir, "preset.yaml")
        with open(preset, "w", errors="replace") as fh:
            fh.write(text)
        config_text = preset_experiment(preset, rnd)
    else:
        config_text = text
    config = os.path.join(case_dir, "config.toml" if kind == "toml" else "config.yaml")
    with open(config, "w", errors="replace") as fh:
        fh.write(config_text)
    args = [command, "--config", config]
    env = {}
    extra = rnd.random()
    if extra < 0.15:
        args += ["--set", f"{rnd.choice(HOSTILE_KEYS)}={rnd.choice(HOSTILE_SCALARS)}"]
    elif extra < 0.25:
        env[rnd.choice(ENV_VARS)] = rnd.choice(FLAG_VALUES + HOSTILE_SCALARS[:40])
    elif extra < 0.35:
        args += [rnd.choice(FLAGS), rnd.choice(FLAG_VALUES)]
    return {"index": index, "seed": name, "kind": kind, "args": args, "env": env, "dir": case_dir}


def classify(rc, out, err):
    text = out + err
    if rc is None:
        return "timeout"
    if SANITIZER.search(text) or rc < 0 or rc >= 128 or rc == 3:
        return "crash"
    if rc == 2:
        lines = [l for l in err.splitlines() if l.startswith("projector: error:")]
        if len(lines) != 1 or not LOCATION.match(lines[0]):
            return "no_location"
        return "clean_error"
    if rc in (0, 1):
        body = "\n".join(l for l in out.splitlines() if not l.lstrip().startswith(("assumed", "#")))
        return "nonsense" if NONSENSE.search(body) else "ok"
    return "crash"


def run_case(case, binary, timeout_s):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PRIMUS") and k not in ("NNODES", "GPUS_PER_NODE")}
    env.update(case["env"])
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:hard_rss_limit_mb=3072")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    t0 = time.time()
    try:
        p = subprocess.run([binary] + case["args"], capture_output=True, timeout=timeout_s, env=env,
                           cwd=case["dir"])
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(
            errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    case["seconds"] = time.time() - t0
    case["rc"] = rc
    case["outcome"] = classify(rc, out, err)
    case["error_line"] = next((l for l in err.splitlines() if l.startswith("projector: error:")),
                              "")[:300]
    m = LOCATION.match(case["error_line"])
    case["where"] = ("file:line" if m and m.group("line") else "file" if m and m.group("file")
                     else "option or environment" if m else "")
    if case["outcome"] not in ("ok", "clean_error"):
        case["output_tail"] = (out + err)[-3000:]
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/asan/projector"))
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    ap.add_argument("--out", default="", help="directory for findings (reproducers + JSON)")
    ap.add_argument("--keep", action="store_true", help="keep every case's files")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        sys.exit(f"mutation_fuzz: no projector binary at {binary}")
    work = tempfile.mkdtemp(prefix="projector-mutation-")
    seed_list = seeds()
    cases = [make_case(i, seed_list, args.seed, work) for i in range(args.cases)]
    t0 = time.time()
    results = []
    with futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(lambda c: run_case(c, binary, args.timeout), cases):
            results.append(r)
    elapsed = time.time() - t0
    counts = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    findings = [r for r in results if r["outcome"] not in ("ok", "clean_error")]
    errors = [r for r in results if r["outcome"] == "clean_error"]
    where = {}
    for r in errors:
        where[r["where"]] = where.get(r["where"], 0) + 1
    print(f"mutation fuzz: {len(results)} cases in {elapsed:.0f} s ({len(results) / elapsed:.1f} "
          f"exec/s, {args.jobs} jobs), seed {args.seed}, binary {binary}")
    for k in ("ok", "clean_error", "crash", "timeout", "no_location", "nonsense"):
        print(f"  {k:<12} {counts.get(k, 0)}")
    print("  clean errors name " + ", ".join(f"{v} {k}" for k, v in sorted(where.items())))
    for r in findings[:20]:
        print(f"  FINDING {r['outcome']}: case {r['index']} ({r['seed']}) {' '.join(r['args'])[:160]}"
              f" env={r['env']} rc={r['rc']}: {r.get('error_line') or r.get('output_tail', '')[-300:]}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for r in findings:
            shutil.copytree(r["dir"], os.path.join(args.out, os.path.basename(r["dir"])),
                            dirs_exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as fh:
            json.dump({"elapsed_s": elapsed, "counts": counts, "findings": findings,
                       "errors_without_line": [r["error_line"] for r in errors
                                               if r["where"] != "file:line"]}, fh, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
