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
