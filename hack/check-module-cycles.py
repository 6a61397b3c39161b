#!/usr/bin/env python3
"""No two modules of a crate import each other, directly or through others.

Usage: check-module-cycles.py SRC_DIR [SRC_DIR ...]

Builds each crate's module graph from its `crate::`, `super::` and `self::` paths (comments
and test modules left out; a module's use of its own parent or children does not count) and
prints every cycle (a strongly connected component of more than one module). Exits 1 if any
crate has one.
"""
import os
import re
import sys


def modules(root):
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith('.rs'):
                continue
            path = os.path.join(dirpath, f)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            if parts[-1] in ('mod', 'lib', 'main'):
                parts = parts[:-1]
            if any(p == 'tests' or p.startswith('tests') for p in parts):
                continue
            found['::'.join(parts)] = path
    return found


def resolve(mods, current, path):
    segs = path.split('::')
    if segs[0] == 'crate':
        base, segs = [], segs[1:]
    elif segs[0] == 'super':
        base = current.split('::')[:-1] if current else []
        segs = segs[1:]
        while segs and segs[0] == 'super':
            base, segs = base[:-1], segs[1:]
    elif segs[0] == 'self':
        base, segs = (current.split('::') if current else []), segs[1:]
    else:
        return None
    for i in range(len(segs), -1, -1):
        candidate = '::'.join(base + segs[:i])
        if candidate in mods:
            return candidate
    return None


def graph(mods):
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        with open(path, encoding='utf-8') as f:
            src = f.read()
        src = re.sub(r'//.*', '', src)
        src = re.split(r'#\[cfg\(test\)\]\s*mod tests \{', src)[0]
        for match in re.finditer(r'\b((?:crate|super|self)(?:::\w+)+)', src):
            target = resolve(mods, m, match.group(1))
            if target is None or target == m:
                continue
            if m.startswith(target + '::') or target.startswith(m + '::'):
                continue
            edges[m].add(target)
    return edges


def cycles(edges):
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def check(root):
    mods = modules(root)
    edges = graph(mods)
    found = cycles(edges)
    for component in found:
        print(f'{root}: import cycle among {", ".join(component)}')
        for a in component:
            for b in sorted(edges[a] & set(component)):
                print(f'    {a} -> {b}')
    print(f'{root}: {len(mods)} modules, {len(found)} cycles')
    return len(found)


if __name__ == '__main__':
    sys.setrecursionlimit(10000)
    failed = sum(check(root) for root in sys.argv[1:])
    sys.exit(1 if failed else 0)
