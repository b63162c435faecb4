"""``hpcval report`` on real run reports: the session's ``reframe -r
--system local`` and minicluster ping-pong (tests/conftest.py), reports of
older ReFrame releases (tests/fixtures/reports), and broken copies of them.
"""
import csv
import hashlib
import html.parser
import io
import json
import math
import pathlib
import re
import shutil
import sqlite3
import subprocess

import pytest

from hpcval import cli, units

from hpcval.publish import (comparison, formats, latex, measures, page,
                            results)
from rfmrun import ROOT, cases

OLD_REPORTS = sorted((ROOT / 'tests' / 'fixtures' / 'reports').glob('*.json'))
GBENCH_JSON = (ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' /
               'comm_scope' / 'check_comm_scope0120_cuda.json')


def perfvalues(reports):
    """{(column, test, metric): (value, verdict, unit)} of data-4.2
    reports; ReFrame says pass where it had no reference (0), hpcval says
    so."""
    tcs = [(tc, report['session_info']['hostname']) for report in reports
           for tc in cases(report) if not tc['fixture']]
    parts = {}
    for tc, host in tcs:
        parts.setdefault(_column(tc, host), set()).add(tc['partition'])
    return {(_column(tc, host, parts), tc['display_name'],
             key.rsplit(':', 1)[-1]):
            (vals[0], vals[5] if vals[1] else comparison.NO_REFERENCE,
             vals[4])
            for tc, host in tcs
            for key, vals in (tc['perfvalues'] or {}).items()}


def failed_cases(reports):
    """{(column, test)} of the test cases that failed: where this host
    missed a reference, the table shows the case's other figures as failed
    with no sample (n=0)."""
    tcs = [(tc, report['session_info']['hostname']) for report in reports
           for tc in cases(report) if not tc['fixture']]
    parts = {}
    for tc, host in tcs:
        parts.setdefault(_column(tc, host), set()).add(tc['partition'])
    return {(_column(tc, host, parts), tc['display_name'])
            for tc, host in tcs if tc['result'] == 'fail'}


def _column(tc, host, parts=None):
    """The column the docs promise: local@host, system:partition where a
    system shows several partitions, "(replay)" for replays."""
    name = f'local@{host}' if tc['system'] == 'local' and \
        'replay' not in tc['tags'] else tc['system']
    key = name + (' (replay)' if 'replay' in tc['tags'] else '')
    if parts and len(parts[key]) > 1:
        name += f':{tc["partition"]}'
    return name + (' (replay)' if 'replay' in tc['tags'] else '')


def local_column(run):
    return f'local@{run.report["session_info"]["hostname"]}'


def hpcval(*args, capsys=None):
    code = cli.main(['report', *map(str, args)])
    return code


# the seeds' replays as committed (test_publication keeps them what the
# checks make now): the session's replays would tie this module, and so
# test_plots and test_replay, to the measuring cluster's worker
COMMITTED_REPLAYS = sorted((ROOT / 'docs' / 'comparison' / 'reports')
                           .glob('*-replay.json'))


@pytest.fixture(scope='module')
def real_reports(local_run, minicluster_pingpong):
    """The local and minicluster runs, and the seeds' replays."""
    assert len(COMMITTED_REPLAYS) == 2, COMMITTED_REPLAYS
    return [local_run.path, minicluster_pingpong.path, *COMMITTED_REPLAYS]


@pytest.fixture(scope='module')
def every_format(real_reports, tmp_path_factory):
    out = tmp_path_factory.mktemp('report') / 'out'
    assert hpcval(*real_reports, '--format', 'md,csv,html,tex',
                  '--out', out) == 0
    return out


def test_every_format_from_real_reports(real_reports, every_format,
                                        local_run):
    out = every_format
    md = (out / 'comparison.md').read_text()
    # each benchmark's table holds the systems that ran it
    assert (f'### mpi4py_pingpong\n\nMeasured by Mpi4pyPingPongCheck '
            f'\\({local_column(local_run)}, minicluster\\).') in md
    assert f'| test | metric | {local_column(local_run)} | minicluster |' \
        in md
    assert ('| test | metric | kestrel \\(replay\\) | mi300x \\(replay\\) |'
            ) in md
    assert '### transferbench' in md

    rows = [r for r in csv.DictReader(io.StringIO((out / 'comparison.csv')
                                                  .read_text()))
            if r['statistic'] == 'mean']
    measured = perfvalues([json.loads(p.read_text()) for p in real_reports])
    # rows are keyed on what was measured, not on the test's name
    label = {c.test: lab for c, lab in measures.labels(
        results.load(real_reports).cases).items()}
    by_key = {(r['system'], r['test'], r['metric']): r for r in rows}
    expected = {(system, label[test], metric)
                for system, test, metric in measured}
    # a live run that missed its references (a busy host) fails its case:
    # its column then shows the row's other metrics as failed, unmeasured
    failed = {(system, label[test]) for system, test in failed_cases(
        [json.loads(p.read_text()) for p in real_reports])}
    unmeasured = {key for key in set(by_key) - expected
                  if key[:2] in failed and by_key[key]['n'] == '0'
                  and by_key[key]['judgement'] == 'fail'}
    assert set(by_key) - unmeasured == expected, (
        sorted(set(by_key) - unmeasured - expected),
        sorted(expected - set(by_key)))
    for (system, test, metric), (value, result, unit) in measured.items():
        row = by_key[(system, label[test], metric)]
        # the CSV gives each metric in one unit, scaled to its figures
        assert float(row['value']) == pytest.approx(
            units.convert(value, unit, row['unit']), rel=1e-12)
        assert row['n'] == '1'
        # hpcval's verdict of one sample is ReFrame's own; a replay
        # reproduces its document's figure or differs from it
        if system.endswith('(replay)') and result in ('pass', 'fail'):
            result = {'pass': comparison.REPRODUCES,
                      'fail': comparison.DIFFERS}[result]
        assert row['judgement'] == result, row

    page = (out / 'comparison.html').read_text()
    checker = _HtmlCheck()
    checker.feed(page)
    assert checker.external == [], 'the page must be self-contained'
    assert checker.tables >= 6 and 'mi300x (replay)' in page

    tex = (out / 'comparison.tex').read_text()
    assert tex.count(r'\begin{longtable}') == tex.count(r'\end{longtable}') \
        >= 2
    assert '%placement' not in tex.replace(r'\%placement', '')


class _HtmlCheck(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.external, self.tables = [], 0

    def handle_starttag(self, tag, attrs):
        self.tables += tag == 'table'
        for name, value in attrs:
            if name in ('src', 'href') and \
                    not value.startswith(('data:', '#')):
                self.external.append(value)


def test_results_database_gives_the_same_samples(local_run):
    db = local_run.path.with_name('results.db')
    from_db = results.load(db=str(db))
    from_file = results.load([local_run.path])
    key = lambda s: (s.case.test, s.metric, s.value)  # noqa: E731
    assert from_db.problems == [] and from_file.problems == []
    assert sorted(map(key, from_db.samples)) == \
        sorted(map(key, from_file.samples)) != []


@pytest.mark.parametrize('path', OLD_REPORTS, ids=lambda p: p.name)
def test_reports_of_older_reframe_releases(path):
    loaded = results.load([path])
    assert loaded.problems == []
    got = {s.metric: s for s in loaded.samples}
    assert set(got) == {'latency_8B', 'bandwidth_64KiB'}
    assert got['latency_8B'].reference == 5.0
    assert got['latency_8B'].upper == 1.0
    assert got['bandwidth_64KiB'].reference in (0, None)
    case = got['latency_8B'].case
    assert (case.system, case.partition, case.result) == ('local', 'default',
                                                          'pass')
    table = comparison.build(loaded.samples)
    cell = table.cells[(table.rows[1], 'local@vm')]
    assert table.rows[1].metric == 'latency_8B'
    assert cell.verdict == ('pass' if cell.mean <= 10.0 else 'fail')


def _broken_inputs(report_path, tmp):
    text = report_path.read_text()
    good = json.loads(text)
    inputs = {'truncated.json': (text[:len(text) // 2], 'not valid JSON'),
              'gbench.json': (GBENCH_JSON.read_text(),
                              'not a ReFrame run report'),
              'future.json': (json.dumps({**good, 'session_info': {
                  **good['session_info'], 'data_version': '9.0'}}),
                  "data_version '9.0'")}

    nosys = json.loads(text)
    victim = next(tc for tc in cases(nosys) if tc['perfvalues'])
    del victim['system']
    inputs['nosystem.json'] = (json.dumps(nosys), "missing field 'system'")

    nan = json.loads(text)
    victim = next(tc for tc in cases(nan) if tc['perfvalues'])
    key = next(iter(victim['perfvalues']))
    victim['perfvalues'][key][0] = float('nan')
    inputs['nan.json'] = (json.dumps(nan), 'nan, not a finite number')

    paths = {}
    for name, (content, reason) in inputs.items():
        (tmp / name).write_text(content)
        paths[tmp / name] = reason

    notdb = tmp / 'other.db'
    with sqlite3.connect(notdb) as conn:
        conn.execute('CREATE TABLE t(x)')
    return paths, notdb


def _digest(paths):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_bad_inputs_are_named_and_skipped(local_run, tmp_path, capsys):
    paths, notdb = _broken_inputs(local_run.path, tmp_path)
    before = _digest([*paths, notdb, local_run.path])
    assert hpcval(local_run.path, *paths, '--db', notdb) == 0
    out, err = capsys.readouterr()
    for path, reason in paths.items():
        line = next(l for l in err.splitlines() if str(path) in l)
        assert reason in line, line
    assert f'{notdb}: not a ReFrame results database' in err
    assert f'| metric | {local_column(local_run)} |' in out
    # the intact cases of nosystem.json and nan.json (copies of the same
    # session) count once
    loaded = results.load([local_run.path, *paths])
    intact = len(results.load([local_run.path]).cases)
    assert len(loaded.cases) == intact
    assert loaded.duplicates == 2 * intact - 2
    assert _digest([*paths, notdb, local_run.path]) == before


def test_reject_stops_at_the_first_bad_input(local_run, tmp_path, capsys):
    paths, _ = _broken_inputs(local_run.path, tmp_path)
    out_dir = tmp_path / 'out'
    assert hpcval(local_run.path, tmp_path / 'nan.json', '--on-error',
                  'reject', '--out', out_dir) == 3
    err = capsys.readouterr().err
    assert f'rejected {tmp_path / "nan.json"}: ' in err and 'nan' in err
    assert not out_dir.exists()


def test_outputs_are_never_overwritten_silently(local_run, tmp_path, capsys):
    out = tmp_path / 'out'
    assert hpcval(local_run.path, '--format', 'csv', '--out', out) == 0
    (out / 'comparison.csv').write_text('edited by hand\n')
    assert hpcval(local_run.path, '--format', 'csv', '--out', out) == 3
    assert 'exists (use --force' in capsys.readouterr().err
    assert (out / 'comparison.csv').read_text() == 'edited by hand\n'
    assert hpcval(local_run.path, '--format', 'csv', '--out', out,
                  '--force') == 0
    assert (out / 'comparison.csv').read_text().startswith('table,system,')


def test_nothing_selected_is_an_error(local_run, capsys):
    # a --system no input holds is an input error (docs/verdict.md, the
    # exit-status contract), naming the systems the inputs hold
    assert hpcval(local_run.path, '--system', 'frontier') == 3
    assert 'no such system among the inputs (known: local)' in \
        capsys.readouterr().err


def test_cells_aggregate_runs_and_name_reference_changes(local_run):
    loaded = results.load([local_run.path] + OLD_REPORTS)
    table = comparison.build(loaded.samples)
    [row] = [r for r in table.rows if r.test == 'OldReframePingPong'
             and r.metric == 'latency_8B']
    # both old reports were made on the same host: one column
    cell = table.cells[(row, 'local@vm')]
    values = [s.value for s in loaded.samples
              if s.case.test == 'OldReframePingPong'
              and s.metric == 'latency_8B']
    assert cell.n == 2 and cell.mean == pytest.approx(sum(values) / 2)
    assert math.isclose(cell.std, abs(values[0] - values[1]) / math.sqrt(2))
    assert row.better == 'lower'
    assert formats.measured(cell).endswith('(n=2)')


def test_time_selection_parses_iso_and_relative():
    from hpcval.publish.report import timestamp
    assert timestamp('2026-11-01') < timestamp('2026-11-01T08:00') \
        < timestamp('now-1d') < timestamp('now')
    with pytest.raises(Exception, match='neither an ISO date'):
        timestamp('yesterday')


H200 = sorted((ROOT / 'tests' / 'fixtures' / 'reports' / 'h200x2')
              .glob('*.json'))


def test_labels_keep_two_local_hosts_apart(local_run, capsys):
    """The H200 node's host name is also 'vm': LABEL=REPORT names it."""
    assert hpcval(local_run.path, *[f'h200x2={p}' for p in H200]) == 0
    out = capsys.readouterr().out
    assert f'| h200x2 | {local_column(local_run)} |' in out
    loaded = results.load([('h200x2', p) for p in H200])
    table = comparison.build(loaded.samples)
    assert table.columns == ['h200x2']
    [row] = [r for r in table.rows if r.metric == 'bandwidth_4MiB'
             and r.test.startswith('osu_bw, on_node')]
    assert table.cells[(row, 'h200x2')].values == [286724.25]
    from hpcval.publish.report import report_argument
    assert report_argument('a=b.json') == ('a', 'b.json')
    assert report_argument(str(H200[0])) == str(H200[0])
    assert report_argument('x y=b.json') == 'x y=b.json'


def test_a_unit_hpcval_does_not_know_has_no_direction(local_run, tmp_path,
                                                       capsys):
    report = json.loads(local_run.path.read_text())
    victim = next(tc for tc in cases(report) if tc['perfvalues'])
    key = next(iter(victim['perfvalues']))
    victim['perfvalues'][key][4] = 'furlongs/fortnight'
    path = tmp_path / 'odd-unit.json'
    path.write_text(json.dumps(report))
    assert hpcval(path, '--format', 'csv') == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    [row] = [r for r in rows if r['unit'] == 'furlongs/fortnight'
             and r['statistic'] == 'mean']
    assert row['better'] == 'unknown'
    assert hpcval(path) == 0
    assert '\\[furlongs/fortnight\\] ?' in capsys.readouterr().out


_WEIRD = [None, 1, 'x', [], {}, float('nan'), True, -1.5, [1, 2]]


def _paths(obj, path=()):
    yield path
    items = obj.items() if isinstance(obj, dict) else \
        enumerate(obj) if isinstance(obj, list) else ()
    for key, val in items:
        yield from _paths(val, path + (key,))


@pytest.mark.parametrize('name', ['reframe-4.6.3-data3.1.json',
                                  'reframe-4.7.4-data4.0.json',
                                  'h200x2/osu-mpi4py-gpu-buffers.json'])
def test_any_field_of_any_type_is_a_named_problem(name, tmp_path):
    """Every field of real reports set, one at a time, to a value of the
    wrong type: a table or a named problem, never a traceback."""
    import copy
    import random
    good = json.loads((OLD_REPORTS[0].parent / name).read_text())
    rng = random.Random(name)
    where = [p for p in _paths(good) if p]
    path = tmp_path / 'mutant.json'
    for _ in range(400):
        mutant, field = copy.deepcopy(good), rng.choice(where)
        target = mutant
        for key in field[:-1]:
            target = target[key]
        target[field[-1]] = rng.choice(_WEIRD)
        path.write_text(json.dumps(mutant))
        loaded = results.load([path])
        table = comparison.build(loaded.samples)
        for render in (formats.to_markdown, formats.to_csv, page.render,
                       lambda t: latex.document([t])):
            render(table)
        assert all(str(path) in str(p) for p in loaded.problems)


# Names are data: a system named as a Markdown image, a test name that
# would move a terminal's cursor, a metric that is matplotlib mathtext.
EVIL_SYSTEM = '![x](http://host/b.png)'
EVIL_TEST = 'Evil\r\x1b[2K\x1b[1A`code` [a](b) <img src=x>|y\u202e'
EVIL_METRIC = '$\\fakecmd$'


def _hostile_report(tmp_path, system=EVIL_SYSTEM, test=EVIL_TEST,
                    name='hostile'):
    """A real report whose system, test names (``test`` before each; None
    keeps them) and first metric of each case are hostile."""
    report = json.loads((ROOT / 'tests' / 'fixtures' / 'reports' / 'plots' /
                         'local-babelstream-mpi4py-1.json').read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            tc['system'] = system
            if test:
                tc['display_name'] = test.replace(' ', '_') + ' ' + \
                    tc['display_name']
            tc['perfvalues'] = {
                (f'{system}:default:{EVIL_METRIC}'
                 if i == 0 else key): vals
                for i, (key, vals) in enumerate(
                    (tc.get('perfvalues') or {}).items())}
    path = tmp_path / f'{name}.json'
    path.write_text(json.dumps(report))
    return path


def _inert(text):
    assert not any(ch in text for ch in '\r\x1b\u202e'), repr(text[:300])


def test_markdown_on_stdout_is_inert(tmp_path, capsys):
    path = _hostile_report(tmp_path)
    assert hpcval(path, '--format', 'md') == 0
    md = capsys.readouterr().out
    _inert(md)
    # no image, link, code span or HTML tag survives: each is escaped
    assert '![' not in md and '](' not in md and '<img' not in md
    assert '\\!\\[x\\]\\(http://host/b.png\\)' in md
    assert '\\`code\\`' in md and '&lt;img' in md
    assert '\\$\\\\fakecmd\\$' in md
    assert '\\x1b\\[2K' in md          # shown, escaped, not obeyed
    for line in md.splitlines():
        if line.startswith('| Evil'):
            # the name's '|' does not add a cell
            assert line.count('|') - line.count('\\|') == 4


def test_csv_on_stdout_escapes_control_characters(tmp_path, capsys):
    path = _hostile_report(tmp_path)
    assert hpcval(path, '--format', 'csv') == 0
    text = capsys.readouterr().out
    _inert(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r['system'] for r in rows} == {EVIL_SYSTEM}
    assert any(r['test'].startswith('Evil\\r\\x1b[2K') for r in rows)
    assert EVIL_METRIC in {r['metric'] for r in rows}


def test_a_mathtext_metric_name_loses_no_table(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    # two systems: a figure of one system is not drawn
    paths = [_hostile_report(tmp_path, system, None, f'r{i}')
             for i, system in enumerate((EVIL_SYSTEM, 'other'))]
    out = tmp_path / 'out'
    assert hpcval(*paths, '--format', 'md,csv,tex', '--plots',
                  '--out', out) == 0
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    for fmt in ('md', 'csv', 'tex'):
        assert (out / f'comparison.{fmt}').stat().st_size > 0
    svgs = list((out / 'plots').glob('*.svg'))
    assert svgs, err
    # drawn as written, not parsed as a (failing) formula
    assert any(EVIL_METRIC in s.read_text() for s in svgs)


def test_latex_escapes_every_name(tmp_path, capsys):
    path = _hostile_report(tmp_path)
    assert hpcval(path, '--format', 'tex') == 0
    tex = capsys.readouterr().out
    _inert(tex)
    assert tex.isascii()
    assert '!{[}x{]}(http://host/b.png)' in tex
    assert r'\$\textbackslash{}fakecmd\$' in tex
    if shutil.which('pdflatex'):
        (tmp_path / 'c.tex').write_text(tex)
        proc = subprocess.run(['pdflatex', '-interaction=nonstopmode',
                               '-halt-on-error', 'c.tex'], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]


FIXTURES = ROOT / 'tests' / 'fixtures' / 'reports'
#: the README's publishing command on the committed reports, unlabelled:
#: 2x H200 and 1x H100 runs, both ``--system local`` on a host named vm
UNLABELLED = [*sorted((FIXTURES / 'h200x2').glob('*.json')),
              *sorted((FIXTURES / 'h100_quick').glob('*.json')),
              *COMMITTED_REPLAYS]


def test_runs_of_different_hardware_are_never_averaged(capsys):
    """One column per hardware configuration: the one-GPU zeros of the
    H100 and the H200's two-GPU busbw are not one mean."""
    assert hpcval(*UNLABELLED, '--format', 'csv') == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    columns = {r['system'] for r in rows}
    assert 'local@vm' not in columns
    assert {'local@vm (H100 x1)', 'local@vm (H200 x2)',
            'local@vm (GPUs not recorded)'} <= columns
    busbw = {r['system']: r for r in rows if r['statistic'] == 'mean'
             and r['test'] == 'all_reduce, single process'
             and r['metric'] == 'busbw_inplace_largest'}
    h100, h200 = busbw['local@vm (H100 x1)'], busbw['local@vm (H200 x2)']
    assert (float(h200['value']), h200['n'], h200['gpus']) == \
        (pytest.approx(345.7, abs=0.05), '1', '2')
    assert (float(h100['value']), h100['n'], h100['gpus']) == (0, '10', '1')
    assert h100['gpu_model'] == 'NVIDIA H100 80GB HBM3'
    assert h200['gpu_model'] == 'NVIDIA H200'
    assert hpcval(*UNLABELLED) == 0
    md = capsys.readouterr().out
    assert 'local@vm: runs on different hardware (GPUs not recorded, ' \
           'H100 x1, H200 x2' in md.replace('\\', '')


def _case(gpu, nodes=('n1',), label=''):
    from hpcval.publish.results import Case
    prov = {'gpu': gpu} if gpu else {}
    return Case('r.json', 's', 'C', 'C', (), 'b', 'sys', 'p', 'e', 'pass',
                0.0, 'h', nodes, '4', False, None, None, label=label,
                extras={'provenance': prov} if gpu else {})


def test_hardware_splits_only_what_differs():
    """One recorded configuration (with runs that recorded none) stays
    one column; a node count, GPU count or model of its own splits it,
    the model shortened where the short names stay apart."""
    one, two = _case('NVIDIA H100 80GB HBM3 x4'), _case(None)
    assert set(comparison.columns([one, two]).values()) == {'sys'}
    wide = _case('NVIDIA H100 80GB HBM3 x4', nodes=('n1', 'n2'))
    pcie = _case('NVIDIA H100 PCIe x4')
    assert comparison.columns([one, wide, two]) == {
        one: 'sys (H100 x4)', wide: 'sys (H100 x4, 2 nodes)',
        two: 'sys (GPUs not recorded)'}
    assert comparison.columns([one, pcie])[pcie] == \
        'sys (NVIDIA H100 PCIe x4)'
    assert comparison.hardware_of(_case('A x1,B x1')) == \
        comparison.Hardware('A + B', 2, 1)


def test_the_tables_a_reviewer_reads(capsys):
    """The runs' own bounds in an appendix, not among the tables; no
    number for a figure 0 by definition (one GPU's bus bandwidth); one
    unit per metric down a benchmark's rows."""
    assert hpcval(*UNLABELLED) == 0
    md = capsys.readouterr().out.replace('\\', '')
    body, appendix = md.split("## Appendix: the runs' own bounds")
    assert 'BOUND' not in body and appendix.count('\n- BOUND ') >= 10
    assert not re.search(r'(?<![\d.,])0 ± 0(?![\d.])', md)
    assert 'none by definition (n=10; 1 GPU x 1 node)' in body
    shown = {}
    for bench, text in re.findall(r'### (\w+)\n(.*?)(?=\n### |\Z)', body,
                                  re.S):
        for metric, unit in re.findall(r'^\|[^|]*\| (\S+) \[([^]]+)\]',
                                       text, re.M):
            shown.setdefault((bench, metric), set()).add(unit)
    assert shown[('elbencho', 'read_elapsed')] == {'s'}
    assert all(len(u) == 1 for u in shown.values()), shown


def test_nodes_that_differ_are_named_in_the_label():
    from hpcval.publish.results import Case
    mixed = Case('r.json', 's', 'C', 'C', (), 'b', 'sys', 'p', 'e', 'pass',
                 0.0, 'h', ('n1', 'n2'), '4', False, None, None,
                 extras={'provenance': {'nodes': {
                     'n1': {'gpu': 'NVIDIA H100 x4'},
                     'n2': {'gpu': 'NVIDIA H100 x2'}}}})
    hw = comparison.hardware_of(mixed)
    assert hw.label() == 'NVIDIA H100 x2 | NVIDIA H100 x4, 2 nodes'
    assert comparison.columns([mixed, _case('NVIDIA H100 x4')])[mixed] == \
        'sys (NVIDIA H100 x2 | NVIDIA H100 x4, 2 nodes)'
