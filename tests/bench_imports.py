"""The import house of utils/hpcval, by a stated rule (issue 33, item 7).

python3 tests/bench_imports.py [TREE]   (TREE: a checkout; default: this one)

Read from the source with `ast`, nothing imported:
- arrows: distinct (importer, imported) pairs of hpcval modules; an import
  at module level (or in a module-level if/try) is "module-level", any
  other is "function-level";
- floors: a module's floor is 0 if it imports no hpcval module at module
  level, else 1 + the highest floor it imports (longest-path layering);
  "floors" is the number of floors;
- upward arrows: arrows, of either kind, whose target is not on a lower
  floor than the importer (only a function-level import or a circle can
  make one);
- circles: strongly connected groups of more than one module over all
  arrows;
- packages: arrows between the subpackages (`hpcval` itself, `health`,
  `publish`, ...), each pair once.
These are not farm-studio's figures, whose rule is not published.
"""
import ast
import pathlib
import sys


def modules(tree):
    root = pathlib.Path(tree) / 'utils'
    found = {}
    for path in sorted((root / 'hpcval').rglob('*.py')):
        parts = path.relative_to(root).with_suffix('').parts
        name = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)
        found[name] = path
    return found


def _targets(mods, name, node):
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = node.module or ''
    if node.level:
        package = name.split('.')
        if mods[name].name != '__init__.py':
            package = package[:-1]
        package = package[:len(package) - node.level + 1]
        base = '.'.join(package + ([base] if base else []))
    return {base} | {f'{base}.{a.name}' for a in node.names}


def _top_level(tree):
    nodes = list(tree.body)
    for stmt in tree.body:
        if isinstance(stmt, (ast.If, ast.Try)):
            nodes += stmt.body + getattr(stmt, 'orelse', []) + \
                [s for h in getattr(stmt, 'handlers', []) for s in h.body]
    return {id(n) for n in nodes}


def arrows(mods):
    """Sets of module-level and function-level (importer, imported)."""
    top, inner = set(), set()
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        outer = _top_level(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(mods, name, node) & mods.keys() - {name}:
                (top if id(node) in outer else inner).add((name, target))
    return top, inner - top


def circles(names, edges):
    graph = {n: [b for a, b in edges if a == n] for n in names}
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in names:
        if v not in index:
            visit(v)
    return found


def floors(names, top):
    """Longest-path floor of each module over module-level arrows; an
    arrow back into the path being followed is not followed, so a
    module-level circle still gets floors (and at least one of its
    arrows counts as upward)."""
    floor = {}

    def visit(v, seen):
        if v in floor:
            return floor[v]
        below = [visit(b, seen | {v}) for a, b in top
                 if a == v and b not in seen | {v}]
        floor[v] = 1 + max(below) if below else 0
        return floor[v]

    for v in names:
        visit(v, frozenset())
    return floor


def _package(name):
    parts = name.split('.')
    return '.'.join(parts[:2]) if len(parts) > 2 else parts[0]


def figures(tree):
    mods = modules(tree)
    top, inner = arrows(mods)
    every = top | inner
    floor = floors(mods, top)
    upward = sorted((a, b) for a, b in every if floor[b] >= floor[a])
    packages = {(_package(a), _package(b)) for a, b in every
                if _package(a) != _package(b)}
    return {
        'modules': len(mods),
        'lines': sum(len(p.read_text().splitlines()) for p in mods.values()),
        'module-level arrows': len(top),
        'function-level arrows': len(inner),
        'floors': max(floor.values()) + 1,
        'ground floor': sum(1 for f in floor.values() if f == 0),
        'upward arrows': len(upward),
        'upward from the ground floor':
            sum(1 for a, _ in upward if floor[a] == 0),
        'circles': len(circles(sorted(mods), every)),
        'package arrows': len(packages),
        'upward': upward,
    }


def main(argv):
    tree = argv[1] if len(argv) > 1 else pathlib.Path(__file__).parents[1]
    result = figures(tree)
    for key, value in result.items():
        if key != 'upward':
            print(f'{key}: {value}')
    for a, b in result['upward']:
        print(f'  upward: {a} -> {b}')


if __name__ == '__main__':
    main(sys.argv)
