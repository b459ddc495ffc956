#!/usr/bin/env python3
"""Lists every argument name a Megatron-LM checkout and a Primus checkout define, for the
[known] section of data/frameworks/keys/megatron.txt (keys that are legal but irrelevant to a
projection, so they do not warn as typos).

    scripts/megatron_keys.py MEGATRON_LM_DIR PRIMUS_DIR > /tmp/known.txt

Sources: Megatron's argparse options and `dest=` names (megatron/training/arguments.py), the
fields of the dataclasses it turns into arguments (ArgumentGroupFactory: TransformerConfig with
its parent ModelParallelConfig, TrainingConfig, CheckpointConfig, ...), the top-level keys of
Primus' Megatron module and model presets, the arguments Primus adds (add_argument in
primus/backends/megatron) and the ones it reads with getattr(args, "...").
"""
import ast
import os
import re
import sys

import yaml


def option_names(text):
    names = set()
    for call in re.finditer(r"add_argument\((.*?)\)\s*(?:\n|$)", text, re.S):
        body = call.group(1)
        dest = re.search(r"dest\s*=\s*['\"](\w+)['\"]", body)
        if dest:
            names.add(dest.group(1))
        for opt in re.findall(r"['\"]--([\w-]+)['\"]", body):
            names.add(opt.replace("-", "_"))
    return names


def dataclass_fields(root, wanted):
    classes = {}
    for dirpath, _, files in os.walk(os.path.join(root, "megatron")):
        for f in files:
            if not f.endswith(".py"):
                continue
            try:
                tree = ast.parse(open(os.path.join(dirpath, f), encoding="utf-8").read())
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    classes.setdefault(node.name, node)
    names = set()
    todo = list(wanted)
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in classes:
            continue
        seen.add(name)
        node = classes[name]
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names.add(stmt.target.id)
                for opt in re.findall(r"--([\w-]+)", ast.unparse(stmt)):
                    names.add(opt.replace("-", "_"))
        for base in node.bases:
            todo.append(ast.unparse(base).rsplit(".", 1)[-1])
    return names


def yaml_keys(root):
    names = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".yaml"):
                try:
                    doc = yaml.safe_load(open(os.path.join(dirpath, f)))
                except yaml.YAMLError:
                    continue
                if isinstance(doc, dict):
                    names.update(k for k in doc if isinstance(k, str))
    return names


def main():
    megatron, primus = sys.argv[1], sys.argv[2]
    args_py = open(os.path.join(megatron, "megatron/training/arguments.py")).read()
    names = option_names(args_py)
    factories = set(re.findall(r"ArgumentGroupFactory\((\w+)", args_py))
    names |= dataclass_fields(megatron, factories)
    cfg = os.path.join(primus, "primus/configs")
    names |= yaml_keys(os.path.join(cfg, "modules/megatron"))
    names |= yaml_keys(os.path.join(cfg, "models/megatron"))
    names |= yaml_keys(os.path.join(cfg, "modules/module_base.yaml").rsplit("/", 1)[0])
    backend = os.path.join(primus, "primus/backends/megatron")
    for dirpath, _, files in os.walk(backend):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(dirpath, f), encoding="utf-8").read()
                names |= option_names(text)
                names.update(re.findall(r"getattr\(\s*[\w.]+\s*,\s*['\"](\w+)['\"]", text))
    for n in sorted(k for k in names if re.fullmatch(r"[A-Za-z_]\w*", k)):
        print(n)


if __name__ == "__main__":
    main()
