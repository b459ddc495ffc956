#!/usr/bin/env python3
"""Module dependency check (docs/architecture.md), run by scripts/check_layering.sh.

Reads each `projector_module(name deps...)` of CMakeLists.txt and fails when
- a module declares a projector_<dep> it never includes ("projector/<dep>/..."): an unused edge
  that lets a later change lean on it unseen;
- a module includes a public header of a module outside its declared dependency closure;
- a source or header includes another module's header by path ("../<m>/", "<m>/..." or <m/...>
  for a module m other than its own), bypassing the include roots;
- a `target_link_libraries(projector_<m> ...)` outside projector_module links another module
  (a link edge the declared dependencies do not show);
- the declared dependencies form a cycle.
Usage: scripts/check_layering.py [REPO_ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
cmake = open(os.path.join(root, "CMakeLists.txt")).read()
deps = {}
for m in re.finditer(r"^projector_module\((\w+)([^)]*)\)", cmake, re.M):
    deps[m.group(1)] = [d[len("projector_"):] for d in m.group(2).split()
                        if d.startswith("projector_")]
modules = set(deps)


def closure(name, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(name, []):
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen


def files(name):
    for top in (os.path.join(root, "src", name), os.path.join(root, "include", name)):
        for dirpath, _, names in os.walk(top):
            for n in names:
                if n.endswith((".cpp", ".h")):
                    yield os.path.join(dirpath, n)


bad = 0
# Link edges go through projector_module only: any other target_link_libraries of a module that
# names another module is an undeclared edge.
for m in re.finditer(r"^\s*target_link_libraries\(projector_(\w+)\b([^)]*)\)", cmake, re.M):
    if m.group(1) not in modules:
        continue
    for t in re.findall(r"projector_(\w+)", m.group(2)):
        if t in modules:
            print(f"layering: CMakeLists.txt links projector_{m.group(1)} to projector_{t} outside "
                  f"projector_module (an undeclared link edge)")
            bad = 1
for name in sorted(modules):
    if name in closure(name):
        print(f"layering: module '{name}' depends on itself through its declared dependencies "
              f"(a cycle)")
        bad = 1

public = re.compile(r'^#include "projector/(\w+)/', re.M)
by_path = re.compile(r'^#include ["<](?:\.\./)*(\w+)/', re.M)
for name in sorted(modules):
    used = set()
    for path in files(name):
        text = open(path, errors="replace").read()
        rel = os.path.relpath(path, root)
        for inc in public.findall(text):
            used.add(inc)
            if inc != name and inc not in closure(name):
                print(f"layering: {rel} includes projector/{inc}/ but module '{name}' does not "
                      f"depend on '{inc}' (CMakeLists.txt projector_module)")
                bad = 1
        for line in re.findall(r'^#include .*$', text, re.M):
            if '"../' in line:
                print(f"layering: {rel}: {line} (a relative include climbs out of the module)")
                bad = 1
                continue
            m = by_path.match(line)
            if m and m.group(1) in modules and m.group(1) != name:
                print(f"layering: {rel}: {line} (another module's header by path; include "
                      f"\"projector/{m.group(1)}/...\" instead)")
                bad = 1
    for d in deps[name]:
        if d not in used:
            print(f"layering: module '{name}' declares projector_{d} but includes nothing of it "
                  f"(CMakeLists.txt projector_module)")
            bad = 1
sys.exit(bad)
