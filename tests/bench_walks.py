"""The two walks of issue 33, counted by a data-flow trace.

    .venv/bin/python tests/bench_walks.py [--walk 1|2] [--deep]

A walk is the ordered set of repository source files (utils/hpcval/**,
config/, systems/, checks/) through which one value travels.  The value is
a unique marker number; ``sys.setprofile`` (and ``threading.setprofile``)
looks, on every call and return event of a function defined in such a
file, whether the marker is in the frame's locals (or, on return, in the
returned value): the value itself, in a list/tuple/set/dict (keys and
values) up to two levels deep, in an object's (not a module's or
class's) ``__dict__`` or ``__slots__`` one level deep, or as text in a
str; ``--deep`` looks four levels deep, into objects at every level, to
show what the shallow look misses.  A number carries the
marker if it equals it (relative 1e-9), if it is the marker times a power
of ten (a unit prefix), or if it is a number the final output prints for
it (the bound, the rounded cell, relative 1e-5).  Files are listed in the
order of their first touch, each with the first function seen carrying
it; the last event names the function that writes the output.

Walk 1, reference -> verdict line: the captured H200 run healthy01.json
judged by its own references (local.yaml) with avg_busbw's reference set
to the marker 1234.56789, so that the figure fails; ``hpcval verdict
--references F REPORT`` runs in-process.

Walk 2, stdout -> table cell: the recorded BabelStream OpenMP output of
the x86 VM with its Triad figure set to the marker 45678.912 MB/s,
replayed through BabelStreamCpuCheck by ReFrame (its own process, traced
by a ``sitecustomize`` on PYTHONPATH for that run only, which writes its
record to a file), then ``hpcval report`` in-process to its table cell;
the walk is the union of both phases in order.

What it does not see: a file the value passes through without being in a
frame's locals at a call or return (a pure lookup, a value deeper than the
depths above, a value held by a C function or a module global only).
Not a pytest test: it measures, it asserts nothing.
"""
import argparse
import contextlib
import inspect
import io
import json
import math
import os
import pathlib
import re
import sys
import tempfile
import threading
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ('utils/hpcval/', 'config/', 'systems/', 'checks/')
REF_MARKER, STDOUT_MARKER = 1234.56789, 45678.912
H200 = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / 'validation'
VM = ROOT / 'tests' / 'fixtures' / 'captured' / 'vm'
NUMBER = re.compile(r'\d+(?:\.\d+)?')


class Tracer:
    """Profile function recording where the marker numbers appear."""

    def __init__(self, exact, printed=(), deep=False):
        # deep: four levels, objects at every level (a sensitivity check)
        self.depth, self.deep = (4 if deep else 2), deep
        self.exact = [float(x) for x in exact]
        self.printed = [float(x) for x in printed]
        self.texts = [repr(x) for x in self.exact] + list(map(str, printed))
        self.files = {}         # file -> first function seen carrying it
        self.last = None
        self.executed = set()   # files with any function called
        self._rel = {}

    def _number(self, x):
        if not math.isfinite(x) or x == 0:
            return False
        for m in self.exact:
            ratio = math.log10(abs(x / m))
            if abs(ratio - round(ratio)) < 1e-9:
                return True
        return any(abs(x - p) <= 1e-5 * abs(p) for p in self.printed)

    def carries(self, value, depth=None):
        depth = self.depth if depth is None else depth
        if isinstance(value, bool):
            return False
        if isinstance(value, (float, int)):
            return self._number(float(value))
        if isinstance(value, str):
            return any(t in value for t in self.texts)
        if depth == 0:
            return False
        if isinstance(value, dict):
            return any(self.carries(k, depth - 1) or self.carries(v, depth - 1)
                       for k, v in list(value.items()))
        if isinstance(value, (list, tuple, set, frozenset)):
            return any(self.carries(v, depth - 1) for v in list(value))
        if (self.deep or depth == self.depth) and \
                not isinstance(value, (type, types.ModuleType)):
            attrs = getattr(value, '__dict__', None)
            if not isinstance(attrs, dict):
                attrs = {s: getattr(value, s, None) for s in
                         getattr(type(value), '__slots__', ())}
            below = depth - 1 if self.deep else 0
            return any(self.carries(v, below) for v in list(attrs.values()))
        return False

    def __call__(self, frame, event, arg):
        if event not in ('call', 'return'):
            return
        code = frame.f_code
        rel = self._rel.get(code)
        if rel is None:
            name = os.path.realpath(code.co_filename)
            rel = os.path.relpath(name, ROOT)
            self._rel[code] = rel = rel if rel.startswith(SOURCES) else ''
        if not rel:
            return
        if code.co_flags & inspect.CO_NEWLOCALS:   # not a module or class body
            self.executed.add(rel)
        try:
            values = list(frame.f_locals.items())
            if event == 'return':
                values.append(('<return>', arg))
            found = next((k for k, v in values if self.carries(v)), None)
            if found is not None:
                where = f'{code.co_qualname}: {found}'
                self.files.setdefault(rel, where)
                self.last = (rel, where)
        except Exception:       # a half-built object's attributes
            pass

    @contextlib.contextmanager
    def on(self):
        sys.setprofile(self)
        threading.setprofile(self)
        try:
            yield self
        finally:
            sys.setprofile(None)
            threading.setprofile(None)

    def record(self):
        return {'files': self.files, 'last': self.last,
                'executed': sorted(self.executed)}


def cli(*argv):
    """(status, stdout) of ``hpcval ARGV`` run in this process."""
    from hpcval import cli as hpcval_cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = hpcval_cli.main([str(a) for a in argv])
    return status, out.getvalue()


def walk1(tmp, deep=False):
    refs = tmp / 'local.yaml'
    text = (H200 / 'local.yaml').read_text()
    assert 'value: 111.132' in text
    refs.write_text(text.replace('value: 111.132', f'value: {REF_MARKER}', 1))
    args = ('verdict', H200 / 'reports' / 'healthy01.json',
            '--references', refs)
    status, out = cli(*args)
    line = next(ln for ln in out.splitlines()
                if ln.startswith('  FAIL') and 'avg_busbw' in ln)
    printed = [n for n in NUMBER.findall(line.split('avg_busbw', 1)[1])
               if 0.5 < float(n) / REF_MARKER < 2]
    with Tracer([REF_MARKER], printed, deep).on() as tracer:
        cli(*args)
    return tracer.record(), line, status


SHIM = '''import atexit, json, os, sys, threading
os.environ.pop('PYTHONPATH')    # the jobs' own processes are not traced
sys.path.insert(0, {tests!r})
import bench_walks
_t = bench_walks.Tracer({exact!r}, deep={deep!r})
sys.setprofile(_t)
threading.setprofile(_t)
atexit.register(lambda: open({out!r}, 'w').write(json.dumps(_t.record())))
'''


def walk2(tmp, deep=False):
    sys.path.insert(0, str(ROOT / 'tests'))
    import replays
    text = (VM / 'babelstream_v5.0_omp_n20_s33554432.txt').read_text()
    triad = 'Triad       33796.362'
    assert triad in text
    text = text.replace(triad, f'Triad       {STDOUT_MARKER}')
    shim, rec = tmp / 'shim', tmp / 'reframe-walk.json'
    shim.mkdir()
    (shim / 'sitecustomize.py').write_text(SHIM.format(
        tests=str(ROOT / 'tests'), exact=[STDOUT_MARKER], out=str(rec),
        deep=deep))
    env = {'PYTHONPATH': str(shim),
           'RFM_CONFIG_FILES': str(replays.REPLAY_CONFIG)}
    recordings = replays.write_recordings(
        tmp / 'recordings', {'BabelStreamCpuCheck': {'stdout': text}})
    proc, report = replays.reframe(
        '-r', '--system', 'local', '-S', f'replay_dir={recordings}',
        '-n', 'BabelStreamCpuCheck', '-S', 'BabelStreamCpuCheck.num_times=20',
        tmp_path=tmp, checks=['checks/babelstream.py'], timeout=300, env=env)
    if report is None or not rec.exists():
        raise SystemExit(f'the replay wrote no report or record:\n'
                         f'{proc.stdout[-2000:]}{proc.stderr[-2000:]}')
    first = json.loads(rec.read_text())
    status, out = cli('report', tmp / 'report.json')
    row = next(ln for ln in out.splitlines() if re.search(r'\btriad\b', ln))
    cells = [n for n in NUMBER.findall(row) if float(n) and _decade(
        math.log10(float(n) / STDOUT_MARKER))]
    with Tracer([STDOUT_MARKER], cells, deep).on() as tracer:
        cli('report', tmp / 'report.json')
    files = dict(first['files'])
    for f, fn in tracer.files.items():
        files.setdefault(f, fn)
    return {'files': files, 'last': tracer.last,
            'executed': sorted({*first['executed'], *tracer.executed}),
            'reframe_files': list(first['files'])}, row, status


def _decade(log_ratio):
    """A rounded figure of the marker in some unit (within 2.3 %)."""
    return abs(log_ratio - round(log_ratio)) < 0.01


def show(title, record, line):
    print(f'{title}: {len(record["files"])} files')
    for n, (f, fn) in enumerate(record['files'].items(), 1):
        print(f'  {n:2d}. {f} ({fn})')
    print(f'  last: {record["last"][0]} ({record["last"][1]})')
    print(f'  (files with a function called, value or not: '
          f'{len(record["executed"])})')
    if 'reframe_files' in record:
        print(f'  of which in the ReFrame run: {len(record["reframe_files"])}')
    print(f'  output: {line.strip()}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--walk', choices=('1', '2'), action='append')
    parser.add_argument('--deep', action='store_true',
                        help='look four levels deep, objects at every level')
    args = parser.parse_args()
    walks = args.walk or ['1', '2']
    with tempfile.TemporaryDirectory(prefix='hpcval-walks-') as tmp:
        tmp = pathlib.Path(tmp)
        for n, walk, title in (('1', walk1, 'reference -> verdict line'),
                               ('2', walk2, 'stdout -> table cell')):
            if n in walks:
                (tmp / n).mkdir()
                record, line, _ = walk(tmp / n, args.deep)
                show(f'walk {n} ({title})', record, line)


if __name__ == '__main__':
    main()
