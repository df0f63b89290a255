#!/usr/bin/env python3
"""Checks that no crate's top-level modules import each other in a circle.

For every crate (a directory with Cargo.toml and src/lib.rs or src/main.rs), reads each
top-level module's files for `crate::x` references (in `use` lines and paths) and builds the
graph module -> module. Prints every strongly connected component bigger than one node and
exits 1 if there is any. Usage: python3 .ci/layers.py [--graph] [ROOT]
"""
import os, re, sys

def crate_roots(root):
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("target", ".git", "fuzz", "node_modules")]
        if "Cargo.toml" in files:
            src = os.path.join(dirpath, "src")
            for lib in ("lib.rs", "main.rs"):
                if os.path.exists(os.path.join(src, lib)):
                    yield dirpath, src
                    break

USE_GROUP = re.compile(r"crate::\{([^;]*?)\}", re.S)
PATH = re.compile(r"crate::([a-z_][a-z0-9_]*)")
SUPER = re.compile(r"\b((?:super::)+)([a-z_][a-z0-9_]*)")

def module_of(src, path):
    rel = os.path.relpath(path, src).split(os.sep)
    if len(rel) == 1:
        name = rel[0][:-3]
        return None if name in ("lib", "main") else name
    return rel[0]

def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)

def graph(src):
    g = {}
    for dirpath, dirs, files in os.walk(src):
        # a crate nested inside this one's src/ (src/common, …) is a crate of its own
        dirs[:] = [d for d in dirs if not os.path.exists(os.path.join(dirpath, d, "Cargo.toml"))]
        for f in files:
            if not f.endswith(".rs"):
                continue
            p = os.path.join(dirpath, f)
            m = module_of(src, p)
            if m is None:
                continue
            g.setdefault(m, set())
            text = strip_comments(open(p, encoding="utf-8").read())
            refs = set(PATH.findall(text))
            # `super::super::x` climbing out of the top-level module names a sibling too
            mod_path = os.path.relpath(p, src)[:-3].split(os.sep)
            if mod_path[-1] == "mod":
                mod_path = mod_path[:-1]
            for sup in SUPER.finditer(text):
                k = sup.group(1).count("super::")
                if k >= len(mod_path):
                    refs.add(sup.group(2))
            for grp in USE_GROUP.findall(text):
                for item in re.split(r",", grp):
                    item = item.strip()
                    mm = re.match(r"([a-z_][a-z0-9_]*)", item)
                    if mm:
                        refs.add(mm.group(1))
            for r in refs:
                if r != m and r not in ("self",):
                    g[m].add(r)
    # keep only edges to modules of this crate
    for m in g:
        g[m] = {r for r in g[m] if r in g}
    return g

def sccs(g):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(comp)
    for v in g:
        if v not in index:
            visit(v)
    return out

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = "--graph" in sys.argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    bad = 0
    for crate, src in sorted(crate_roots(root)):
        g = graph(src)
        if show:
            print(f"# {os.path.relpath(crate, root)}")
            for m in sorted(g):
                print(f"  {m} -> {', '.join(sorted(g[m]))}")
        for comp in sccs(g):
            if len(comp) > 1:
                bad += 1
                print(f"layers: import circle in {os.path.relpath(crate, root)}: {' <-> '.join(sorted(comp))}")
                for m in sorted(comp):
                    print(f"    {m} -> {', '.join(sorted(r for r in g[m] if r in comp))}")
    if bad:
        sys.exit(1)
    print("layers: no import circle among any crate's top-level modules")

main()
