"""The job script is assembled by one ordered list of steps in the base
test (``ParsedBenchmark.JOB_SCRIPT_STEPS``), not by hooks whose order is
the class MRO: with ParsedBenchmark's bases and methods reversed, every
check's
``rfm_job.sh`` (``--dry-run``, Lmod over empty modulefiles) is
byte-identical."""
import re
import textwrap

from hpcval.benchmarks.base import ParsedBenchmark
from lmodenv import system_env
from rfmrun import check_modules, reframe

# every check class between them: AMD and CPU checks (frontier), Gaudi
# (gaudi2), and the NVIDIA ones (perlmutter, selected)
SYSTEMS = (('frontier', ()), ('gaudi2', ()),
           ('perlmutter', ('-n', 'Cuda|Nccl|ElbenchoGpu')))

STACK = 'hpcval-order-stack@1'
# ReFrame's own pid and start tick (the node-use record's "the screen's
# own"): one run's, not the script's order
_SCREEN = re.compile(r'(?<=/proc/)\d+(?=/stat)|(?<=" = )\d+(?= \])|'
                     r'(?<=screen=)\d+')

# imported first by every Python of the run: hpcval.benchmarks.base with
# ParsedBenchmark's bases reversed (written down) and its methods, hooks
# included, defined in the reverse order
REVERSED = textwrap.dedent('''\
    import ast, importlib.util, os, sys
    spec = importlib.util.find_spec('hpcval.benchmarks.base')
    tree = ast.parse(open(spec.origin).read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == 'ParsedBenchmark':
            node.bases.reverse()
            at = [i for i, n in enumerate(node.body)
                  if isinstance(n, ast.FunctionDef)]
            methods = [node.body[i] for i in reversed(at)]
            for i, method in zip(at, methods):
                node.body[i] = method
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(tree, spec.origin, 'exec'), module.__dict__)
    with open(os.environ['HPCVAL_TEST_BASES'], 'w') as fp:
        fp.write(' '.join(c.__name__
                          for c in module.ParsedBenchmark.__bases__))
''')


def _scripts(tmp_path, env):
    """{stage-relative path: text} of every job script of SYSTEMS, with a
    site stack (whose place among the prerun lines is a step's)."""
    out = {}
    for system, args in SYSTEMS:
        tmp = tmp_path / system
        tmp.mkdir(parents=True)
        proc, _ = reframe('--dry-run', '--system', system, *args, '-S',
                          f'spack_spec={STACK}', tmp_path=tmp,
                          env={**system_env(tmp / 'modulefiles'), **env})
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        stage = tmp / 'rfm' / 'stage'
        for path in stage.rglob('rfm_job.sh'):
            out[str(path.relative_to(stage))] = _SCREEN.sub(
                'PID', path.read_text().replace(str(tmp), '<tmp>'))
    return out


def _leaves():
    return {obj.__name__ for _, module in check_modules('order')
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, ParsedBenchmark)
            and obj.__module__ == module.__name__
            and not obj.__name__.startswith('_')}


def test_job_scripts_do_not_follow_the_order_of_the_bases(tmp_path):
    given = _scripts(tmp_path / 'given', {})
    site = tmp_path / 'reversed-site'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(REVERSED)
    bases = tmp_path / 'bases.txt'
    reordered = _scripts(tmp_path / 'reversed',
                         {'PYTHONPATH': str(site),
                          'HPCVAL_TEST_BASES': str(bases)})

    assert bases.read_text().split() == \
        [c.__name__ for c in ParsedBenchmark.__bases__][::-1]
    assert {p.split('/')[3].rsplit('_', 1)[0].split('%')[0]
            for p in given} >= _leaves()
    assert sorted(reordered) == sorted(given)
    assert [p for p in given if reordered[p] != given[p]] == []
