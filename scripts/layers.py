#!/usr/bin/env python3
"""layers.py — `make layers`: checks that the subsystem folders of src/ call
each other only as scripts/layers.txt declares.

It reads the symbols of the built objects (nm), not the #include lines: a
reference counts whether it comes through a header, an extern declared by
hand, a weak symbol or a function pointer's initialiser. Each object is
placed in the folder of its source file (build/obj/NAME.o comes from
src/FOLDER/NAME.c; src/main.c is the folder "main"); the objects generated
into build/ are named in scripts/layers.txt too.

It fails, naming every offending reference as

    src/base/util.c -> src/server/server.c: srv_run

when a file calls (or reads the data of, or has a weak definition replaced
by) a file in a folder that its own folder may not call: one above it in the order, or beside it where the line
does not declare it. It also fails when the layers file does not describe the
tree: a folder of src/ it does not list, a listed folder that may call one
listed after it (the order must have no cycle), or an object it cannot place.

Usage: layers.py [--src DIR] [--obj DIR] [--layers FILE]  (FILE: scripts/layers.txt)
Exit: 0 clean, 1 a reference breaks the layers, 2 the check itself cannot
run (no objects, no nm, a malformed layers file)."""

import argparse
import os
import re
import subprocess
import sys


def die(msg):
    print(f"make layers: {msg}", file=sys.stderr)
    sys.exit(2)


def read_layers(path):
    """The folders in order, what each may call, and the generated objects'
    folders."""
    order, may, generated = [], {}, {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        die(f"{path}: {e.strerror}")
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"generated\s+(\S+)\s*:\s*(\S+)", line)
        if m:
            generated[m.group(1)] = m.group(2)
            continue
        m = re.fullmatch(r"([a-z][a-z0-9_-]*)\s*:\s*(.*)", line)
        if not m:
            die(f"{path}:{n}: expected 'FOLDER: FOLDERS IT MAY CALL', got {raw.strip()!r}")
        name, calls = m.group(1), m.group(2).split()
        if name in may:
            die(f"{path}:{n}: {name} is listed twice")
        for c in calls:
            if c not in may:
                die(f"{path}:{n}: {name} may call {c}, which is not listed before it "
                    "(a folder may call only folders listed above it)")
        order.append(name)
        may[name] = set(calls)
    for obj, folder in generated.items():
        if folder not in may:
            die(f"{path}: generated {obj} is placed in {folder}, which is not listed")
    return order, may, generated


def source_files(src):
    """NAME -> (folder, path) for every .c file under src."""
    files = {}
    for entry in sorted(os.listdir(src)):
        full = os.path.join(src, entry)
        if entry.endswith(".c") and os.path.isfile(full):
            files[entry[:-2]] = (entry[:-2], full)
        elif os.path.isdir(full):
            for f in sorted(os.listdir(full)):
                if f.endswith(".c"):
                    if f[:-2] in files:
                        die(f"{f} is in two folders ({files[f[:-2]][1]} and {full}): "
                            "object files are named by file name alone")
                    files[f[:-2]] = (entry, os.path.join(full, f))
    return files


def symbols(objs):
    """{object path: (defined, referenced, weakly defined)} of its global
    symbols, from one nm over all of them."""
    try:
        out = subprocess.run(["nm", "-g", "-A"] + objs, capture_output=True, text=True,
                             check=True).stdout
    except FileNotFoundError:
        die("nm not found (binutils)")
    except subprocess.CalledProcessError as e:
        die(f"nm: {e.stderr.strip()}")
    syms = {o: (set(), set(), set()) for o in objs}
    for line in out.splitlines():
        path, _, rest = line.rpartition(":")
        if path not in syms:
            continue
        defined, referenced, weak = syms[path]
        parts = rest.split()
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            referenced.add(parts[1])
        elif len(parts) == 3:
            kind, name = parts[1], parts[2]
            if kind in ("w", "v", "U"):
                referenced.add(name)
            elif kind in ("W", "V"):
                weak.add(name)
            else:
                defined.add(name)
    return syms


def main():
    ap = argparse.ArgumentParser(description="check src/'s layers against the built objects")
    ap.add_argument("--src", default="src")
    ap.add_argument("--obj", default="build/obj")
    ap.add_argument("--layers", default=None)
    a = ap.parse_args()
    layers = a.layers or os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.txt"))
    order, may, generated = read_layers(layers)

    sources = source_files(a.src)
    for f in sorted(os.listdir(a.src)):
        if os.path.isdir(os.path.join(a.src, f)) and f not in may:
            die(f"src/{f}/ is not listed in {layers}: say where it sits and what it may call")

    try:
        objs = sorted(o for o in os.listdir(a.obj) if o.endswith(".o"))
    except OSError as e:
        die(f"{a.obj}: {e.strerror} (build first: make)")
    if not objs:
        die(f"{a.obj} holds no objects (build first: make)")

    place, label, defs, refs, weak, paths = {}, {}, {}, {}, {}, {}
    for o in objs:
        name = o[:-2]
        if name in sources:
            folder, path = sources[name]
            label[name] = path
        elif name in generated:
            folder = generated[name]
            label[name] = f"build/{name}.c"
        else:
            continue  # a stale object of a file that is gone: not linked
        if folder not in may:
            die(f"{label[name]} is in folder {folder}, which {layers} does not list")
        place[name] = folder
        paths[name] = os.path.join(a.obj, o)
    syms = symbols(list(paths.values()))
    for name, path in paths.items():
        defs[name], refs[name], weak[name] = syms[path]

    owner = {}
    for name, ds in defs.items():
        for s in ds:
            owner.setdefault(s, name)
    # A weak definition that another object's strong one replaces is a call
    # from the weak one's file into the other's, which no #include shows.
    for name, ws in weak.items():
        for s in ws:
            if s in owner:
                refs[name].add(s)
            else:
                owner.setdefault(s, name)

    bad = []
    for name in sorted(refs):
        me = place[name]
        for s in sorted(refs[name]):
            other = owner.get(s)
            if other is None or other == name:
                continue
            there = place[other]
            if there == me or there in may[me]:
                continue
            how = "up the order" if order.index(there) > order.index(me) else "across, not declared"
            bad.append((label[name], label[other], s, how))
    if bad:
        print(f"make layers: {len(bad)} reference(s) break the layers of {layers}:", file=sys.stderr)
        for a_, b_, s, how in bad:
            print(f"  {a_} -> {b_}: {s}  ({how})", file=sys.stderr)
        return 1
    print(f"make layers: {len(place)} objects in {len(order)} layers, no reference breaks them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
