"""The import figures of tests/bench_imports.py (issue 33, item 7) on a
small tree of known shape, and the house's own rule: no circle, and no
upward arrow from the ground floor."""
import bench_imports


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / 'utils' / 'hpcval' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_floors_upward_arrows_and_circles_follow_the_stated_rule(tmp_path):
    tree = _tree(tmp_path, {
        '__init__.py': '',
        'ground.py': 'def late():\n    import hpcval.top\n',
        'middle.py': 'import hpcval.ground\n',
        'top.py': 'import hpcval.middle\n',
        'sub/__init__.py': '',
        'sub/a.py': 'from .b import x\n',
        'sub/b.py': 'import hpcval.sub.a\nx = 1\n',
    })
    got = bench_imports.figures(tree)
    assert got['modules'] == 7
    assert got['module-level arrows'] == 4
    assert got['function-level arrows'] == 1
    assert got['floors'] == 3
    # a circle has at least one arrow against the floors
    assert got['upward'] == [('hpcval.ground', 'hpcval.top'),
                             ('hpcval.sub.b', 'hpcval.sub.a')]
    assert got['upward from the ground floor'] == 2
    # ground -> top closes one, through a function-level import
    assert got['circles'] == 2
    assert got['package arrows'] == 0


def test_the_house_has_no_circle_and_nothing_upward_from_the_ground():
    got = bench_imports.figures(bench_imports.pathlib.Path(
        bench_imports.__file__).parents[1])
    assert got['circles'] == 0
    assert got['upward from the ground floor'] == 0


def _house():
    return bench_imports.pathlib.Path(bench_imports.__file__).parents[1]


def test_the_house_has_eight_floors_at_most_and_nothing_upward():
    """Issue 47: floors <= 8, no upward arrow, by bench_imports' rule."""
    got = bench_imports.figures(_house())
    assert got['floors'] <= 8 and got['upward'] == [], got


def test_no_reader_imports_benchmark_code():
    """Only the benchmarks import hpcval.benchmarks: every reader reads
    what the run recorded (issue 47)."""
    top, inner = bench_imports.arrows(bench_imports.modules(_house()))
    assert sorted((a, b) for a, b in top | inner
                  if b.startswith('hpcval.benchmarks')
                  and not a.startswith('hpcval.benchmarks')) == []


# the names that read check files (ReFrame's check search path, a check
# file's classes); the run side owns them
_CHECK_READERS = {'check_files', 'parsed_check_file', 'check_search_path',
                  'suite_check_files', 'known_checks', 'checks_dirs'}
# run side (the modules that define or load checks); readers read what
# the run recorded (hpcval_suite, hpcval_lineage)
_MAY_READ_CHECKS = {'hpcval.paths', 'hpcval.reference_service',
                    'hpcval.preflight'}


def _sources():
    for name, path in bench_imports.modules(_house()).items():
        yield name, bench_imports.ast.parse(path.read_text())


def test_no_reader_reads_check_files():
    ast = bench_imports.ast
    found = sorted(
        (name, used) for name, tree in _sources()
        if not name.startswith('hpcval.benchmarks')
        and name not in _MAY_READ_CHECKS
        for node in ast.walk(tree)
        for used in ([node.attr] if isinstance(node, ast.Attribute) else
                     [a.name for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])
        if used in _CHECK_READERS)
    assert found == []


def test_no_module_splits_failure_text():
    """What failed is a record, never recovered by cutting up or
    searching a failure message (ReFrame's fail_reason, a case's reason)."""
    ast = bench_imports.ast
    found = sorted(
        (name, node.lineno) for name, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ('split', 'rsplit', 'partition',
                               'rpartition', 'search', 'match',
                               'fullmatch', 'findall', 'finditer')
        and node.args       # a separator: words rejoined say nothing
        and any('reason' in (getattr(n, 'id', None) or
                             getattr(n, 'attr', None) or '')
                for part in (node.func.value, *node.args)
                for n in ast.walk(part)))
    assert found == []
