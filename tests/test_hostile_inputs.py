"""Hostile and clumsy inputs on the data side: reference files, HPCVAL_*
variables, ``hpcval report`` and ``hpcval calibrate``.

One class per attack.  Each goes through a real ``hpcval`` command or a
real ``reframe`` run (subprocesses, as a user would type them) and
asserts the exit status, the message naming file, key, option or
variable, that no traceback reaches the user, and that inputs are
unchanged and nothing is written outside the output folder.
"""
import csv
import hashlib
import io
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile

import pytest
import yaml

from rfmrun import ROOT, VENV_BIN, cases, committed_pingpongs, reframe

HPCVAL = str(VENV_BIN / 'hpcval')
OLD_REPORT = ROOT / 'tests' / 'fixtures' / 'reports' / \
    'reframe-4.7.4-data4.0.json'


def hpcval(*args, env=None, timeout=120, cwd=None):
    proc = subprocess.run([HPCVAL, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})
    assert 'Traceback' not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc


def digest(*roots):
    """{path: sha256 or link target} of every file and link under roots."""
    found = {}
    for root in map(pathlib.Path, roots):
        for path in [root, *root.rglob('*')] if root.is_dir() else [root]:
            if path.is_symlink():
                found[str(path)] = 'link ' + os.readlink(path)
            elif path.is_file():
                found[str(path)] = hashlib.sha256(
                    path.read_bytes()).hexdigest()
            elif path.is_dir():
                found[str(path)] = 'dir'
    return found


def no_traceback(proc):
    assert 'Traceback' not in proc.stdout + proc.stderr, \
        (proc.stdout + proc.stderr)[-3000:]


@pytest.fixture
def root(tmp_path):
    """A references/ copy to break, as HPCVAL_ROOT."""
    top = tmp_path / 'root'
    shutil.copytree(ROOT / 'references', top / 'references')
    return top


def local_yaml(root):
    return root / 'references' / 'local.yaml'


@pytest.fixture(scope='module')
def pingpong(tmp_path_factory):
    """One real session of three ping-pong runs: its report and results
    database (the docs' ``report plus --db`` case).  Calibrating them takes
    ``--min-samples 3`` (the default asks for 5 runs)."""
    tmp = tmp_path_factory.mktemp('pingpong')
    proc, report = reframe('-r', '--system', 'local', '--repeat', '3',
                           '-S', 'loops=100', tmp_path=tmp,
                           checks=('checks/mpi4py_pingpong.py',))
    assert report is not None, proc.stdout[-3000:]
    return tmp / 'report.json', tmp / 'results.db'


@pytest.fixture
def calm(tmp_path):
    """What calibrate writes is tested on a committed capture: a live run
    on a busy host may leave no bound to write."""
    return committed_pingpongs(tmp_path)


class TestDuplicateYamlKeys:
    """A key given twice silently kept the last value: a second
    ``entries:`` wiped a system's references."""

    def test_references_names_file_line_and_key(self, root):
        path = local_yaml(root)
        path.write_text(path.read_text() + 'entries: []\n')
        before = digest(root)
        proc = hpcval('references', '--dir', root / 'references',
                      '--schema-only')
        assert proc.returncode == 1
        assert f'{path}: not valid YAML: duplicate key \'entries\' (first ' \
               f'given on line' in proc.stderr
        assert digest(root) == before

    def test_nested_duplicate_metric_key(self, root):
        path = local_yaml(root)
        text = path.read_text().replace(
            '      latency_8B_std:', '      latency_1KiB:\n        value: 9\n'
            '        upper: 1\n        unit: us\n        rule: laptop-floor\n'
            '        source: s\n      latency_8B_std:', 1)
        path.write_text(text)
        proc = hpcval('references', '--dir', root / 'references',
                      '--schema-only')
        assert proc.returncode == 1
        assert "duplicate key 'latency_1KiB'" in proc.stderr

    def test_reframe_stops_with_one_line(self, root, tmp_path):
        path = local_yaml(root)
        path.write_text(path.read_text() + 'entries: []\n')
        proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                          env={'HPCVAL_ROOT': str(root)})
        no_traceback(proc)
        assert proc.returncode == 1
        assert f'failed to load configuration: {path}: not valid YAML: ' \
               f'duplicate key' in proc.stdout + proc.stderr


class TestStrayEmptyEntries:
    """A file reduced to ``entries: []`` judged nothing, silently."""

    def test_refused(self, root):
        path = local_yaml(root)
        data = yaml.safe_load(path.read_text())
        data['entries'] = []
        path.write_text(yaml.safe_dump(data))
        proc = hpcval('references', '--dir', root / 'references',
                      '--schema-only')
        assert proc.returncode == 1
        assert f'{path}: entries: is empty' in proc.stderr


TYPOS = {
    'check class': (('check: LikwidBenchCheck', 'check: LikwidBenchChek'),
                    'no test of this system is a LikwidBenchChek'),
    'partition': (("  - check: LikwidBenchCheck\n",
                   "  - check: LikwidBenchCheck\n    partition: defualt\n"),
                  "no LikwidBenchCheck test runs on partition 'defualt' "
                  "(it runs on: default)"),
    'where key': (('where: {placement: on_node}',
                   'where: {placemnt: on_node}'),
                  "no Mpi4pyPingPongCheck test has an attribute 'placemnt'"),
    'where value': (('where: {placement: on_node}',
                     'where: {placement: onnode}'),
                    'no Mpi4pyPingPongCheck test has these values '
                    '(placement is on_node)'),
    # YAML's None is the text 'None': it used to match any test lacking
    # the attribute, i.e. every test
    'where None': (('where: {placement: on_node}', 'where: {x: None}'),
                   "no Mpi4pyPingPongCheck test has an attribute 'x'"),
}


class TestEntryMatchingNoTest:
    """A misspelt check, partition or where turned a judged figure into a
    logged one without a word."""

    @pytest.mark.parametrize('typo', TYPOS, ids=str)
    def test_references_names_file_and_entry(self, root, typo):
        (old, new), message = TYPOS[typo]
        path = local_yaml(root)
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
        proc = hpcval('references', '--dir', root / 'references',
                      '--system', 'local', env={'HPCVAL_ROOT': str(root)})
        assert proc.returncode == 1, proc.stderr
        assert f'{path}: entries[' in proc.stderr
        assert message in proc.stderr

    def test_where_null_is_refused_at_load(self, root):
        path = local_yaml(root)
        path.write_text(path.read_text().replace(
            'where: {placement: on_node}', 'where: {placement: null}', 1))
        proc = hpcval('references', '--dir', root / 'references',
                      '--schema-only')
        assert proc.returncode == 1
        assert 'entries[0].where.placement: must be a string, number or ' \
               'boolean, got None' in proc.stderr

    def test_shipped_files_match_their_tests(self):
        proc = hpcval('references', timeout=300)
        assert proc.returncode == 0, proc.stderr

    def test_run_fails_the_check_the_entry_was_meant_for(self, root,
                                                         tmp_path):
        path = local_yaml(root)
        path.write_text(path.read_text().replace(
            'where: {placement: on_node}', 'where: {placement: onnode}', 1))
        proc, report = reframe('--dry-run', '--system', 'local',
                               '-n', 'Mpi4pyPingPongCheck|LikwidBenchCheck',
                               tmp_path=tmp_path,
                               checks=('checks/mpi4py_pingpong.py',
                                       'checks/likwid_bench.py'),
                               env={'HPCVAL_ROOT': str(root)})
        no_traceback(proc)
        assert proc.returncode == 1
        assert f'{path}: entries[0] (Mpi4pyPingPongCheck, partition *, ' \
               f'placement=onnode)' in proc.stdout
        failed = {tc['display_name'].split(' ')[0] for tc in cases(report)
                  if tc['result'] == 'fail'}
        assert failed == {'Mpi4pyPingPongCheck'}   # likwid's entries match

    def test_misspelt_metric_fails_the_run(self, root, tmp_path):
        path = local_yaml(root)
        path.write_text(path.read_text().replace('      latency_8B:',
                                                 '      latency_8b:', 1))
        proc, report = reframe('-r', '--system', 'local', '-S', 'loops=100',
                               tmp_path=tmp_path,
                               checks=('checks/mpi4py_pingpong.py',),
                               env={'HPCVAL_ROOT': str(root)})
        no_traceback(proc)
        assert proc.returncode == 1
        [tc] = [tc for tc in cases(report) if not tc['fixture']]
        assert tc['fail_phase'] == 'performance'
        assert f"{path}: entries[0].metrics.latency_8b: the test reports " \
               f"no metric 'latency_8b' (did you mean 'latency_8B'? it " \
               f"reports bandwidth_4MiB, latency_1KiB" in tc['fail_reason']


BAD_FILES = {
    'bad YAML': ('system: local\nentries: [\n', 'not valid YAML'),
    'nan value': (lambda t: t.replace('value: 2.0', 'value: .nan', 1),
                  'entries[0].metrics.latency_8B.value: must be a finite '
                  'number'),
    'huge integer': (lambda t: t.replace('value: 2.0', 'value: 1' + '0' * 400,
                                         1),
                     'entries[0].metrics.latency_8B.value: must be a finite '
                     'number'),
    'deep nesting': ('a: ' + '[' * 5000 + ']' * 5000 + '\n',
                     'not valid YAML'),
    'not UTF-8': (b'system: local\ndescription: \xff\xfe\n', 'cannot read'),
    'unknown key': (lambda t: t.replace('upper: 9.0', 'uper: 9.0', 1),
                    'entries[0].metrics.latency_8B: unknown key(s) uper'),
}

BAD_VARIABLES = {
    'HPCVAL_ACCOUNT': ('abc;touch x', "HPCVAL_ACCOUNT='abc;touch x': an "
                                      "account is letters"),
    'HPCVAL_NCCL_NET_PLUGIN_DIR': ('relative/dir', 'HPCVAL_NCCL_NET_PLUGIN_'
                                                   "DIR='relative/dir'"),
    'HPCVAL_MINICLUSTER_LAUNCH_GPUS': ('two', "HPCVAL_MINICLUSTER_LAUNCH_"
                                              "GPUS='two'"),
}


class TestNoTracebackAtConfigLoad:
    """A malformed reference file or a bad HPCVAL_* variable gave a 40-line
    traceback under ``reframe``, the message on its last line."""

    @pytest.mark.parametrize('breakage', BAD_FILES, ids=str)
    def test_bad_reference_file(self, root, tmp_path, breakage):
        content, message = BAD_FILES[breakage]
        path = local_yaml(root)
        if callable(content):
            content = content(path.read_text())
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                          env={'HPCVAL_ROOT': str(root)})
        no_traceback(proc)
        assert proc.returncode == 1
        [line] = [x for x in (proc.stdout + proc.stderr).splitlines()
                  if 'failed to load configuration' in x]
        assert f'{path}: ' in line and message in line, line
        cli = hpcval('references', '--dir', root / 'references',
                     '--schema-only')
        assert cli.returncode == 1 and message in cli.stderr

    @pytest.mark.parametrize('variable', BAD_VARIABLES, ids=str)
    def test_bad_variable(self, tmp_path, variable):
        value, message = BAD_VARIABLES[variable]
        proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                          env={variable: value})
        no_traceback(proc)
        assert proc.returncode == 1
        assert message in proc.stdout + proc.stderr

    def test_missing_reference_folder(self, tmp_path):
        (tmp_path / 'root').mkdir()
        proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                          env={'HPCVAL_ROOT': str(tmp_path / 'root')})
        no_traceback(proc)
        assert proc.returncode == 1
        assert 'cannot list the reference folder' in proc.stdout + proc.stderr


def _report_copy(path, tmp_path, name='r.json', edit=None):
    data = json.loads(pathlib.Path(path).read_text())
    if edit:
        edit(data)
    out = tmp_path / name
    out.write_text(json.dumps(data))
    return out


def _first_perf(data):
    tc = next(tc for tc in cases(data) if tc.get('perfvalues'))
    return tc, next(iter(tc['perfvalues']))


class TestCalibrateWritesNothingUnasked:
    """Without --write calibrate wrote a probe file named after the system
    into a temp folder (with ../ in the name: outside it)."""

    def test_tree_and_tmpdir_unchanged(self, calm, root, tmp_path):
        report = calm
        tmpdir = tmp_path / 'tmpdir'
        tmpdir.mkdir()
        before = digest(root, report)
        proc = hpcval('calibrate', '--system', 'local', report,
                      '--ref-dir', root / 'references',
                      '--accept-performance-failures', '--min-samples', '3',
                      env={'TMPDIR': str(tmpdir)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith('--- a/references/local.yaml')
        assert 'not written; rerun with --write' in proc.stderr
        assert digest(root, report) == before
        assert not list(tmpdir.iterdir())


class TestCalibrateSystemName:
    """The system name became a file name unchecked."""

    @pytest.mark.parametrize('name', ['../../etc/x', 'local\n', 'loc al',
                                      '-local', 'nosuch', 'local/../local'])
    def test_refused_even_with_write(self, pingpong, root, tmp_path, name):
        report, _ = pingpong
        before = digest(tmp_path)
        proc = hpcval('calibrate', f'--system={name}', report, '--ref-dir',
                      root / 'references', '--write',
                      '--accept-performance-failures')
        assert proc.returncode == 3
        assert f'--system {name!r}: not a known system (one of ' in \
            proc.stderr
        assert digest(tmp_path) == before


class TestCalibrateOutputSafety:
    """Writes went through symbolic links and were not atomic; a read-only
    checkout or a missing --ref-dir gave a traceback."""

    def test_symlinked_file_is_refused(self, pingpong, root, tmp_path):
        report, _ = pingpong
        outside = tmp_path / 'outside.yaml'
        shutil.copy(local_yaml(root), outside)
        local_yaml(root).unlink()
        local_yaml(root).symlink_to(outside)
        before = digest(tmp_path)
        proc = hpcval('calibrate', '--system', 'local', report, '--ref-dir',
                      root / 'references', '--write',
                      '--accept-performance-failures')
        assert proc.returncode == 3
        assert f'{local_yaml(root)} is a symbolic link' in proc.stderr
        assert digest(tmp_path) == before

    def test_write_is_atomic_and_only_the_file(self, calm, root):
        report = calm
        others = {p: d for p, d in digest(root).items()
                  if not p.endswith('local.yaml')}
        mode = local_yaml(root).stat().st_mode
        proc = hpcval('calibrate', '--system', 'local', report, '--ref-dir',
                      root / 'references', '--write',
                      '--accept-performance-failures', '--min-samples', '3')
        assert proc.returncode == 0, proc.stderr
        assert f'wrote {local_yaml(root)}' in proc.stderr
        after = digest(root)
        assert {p: d for p, d in after.items()
                if not p.endswith('local.yaml')} == others  # no temp left
        assert local_yaml(root).stat().st_mode == mode
        assert hpcval('references', '--dir', root / 'references',
                      '--schema-only').returncode == 0

    def test_read_only_checkout(self, calm, root):
        report = calm
        # a folder anyone may read (pytest's are root's alone)
        shared = pathlib.Path(tempfile.mkdtemp(prefix='hpcval-ro-'))
        try:
            refs = shared / 'references'
            shutil.copytree(root / 'references', refs)
            shutil.copy(report, shared / 'report.json')
            cmd = [HPCVAL, 'calibrate', '--system', 'local',
                   str(shared / 'report.json'), '--ref-dir', str(refs),
                   '--write', '--accept-performance-failures',
                   '--min-samples', '3']
            if os.geteuid() == 0:
                # root writes anywhere: drop to nobody, who may only read
                if not shutil.which('setpriv'):
                    pytest.skip('root without setpriv cannot lose write '
                                'access')
                cmd = ['setpriv', '--reuid=65534', '--regid=65534',
                       '--clear-groups', *cmd]
            for path in (shared, *shared.rglob('*')):
                path.chmod(0o555 if path.is_dir() else 0o444)
            before = digest(shared)
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=120)
            no_traceback(proc)
            assert proc.returncode == 3, proc.stderr
            assert f'cannot write {refs / "local.yaml"}: Permission ' \
                   f'denied; nothing written' in proc.stderr
            assert digest(shared) == before
        finally:
            for path in (shared, *shared.rglob('*')):
                path.chmod(0o755)
            shutil.rmtree(shared)

    def test_missing_ref_dir(self, pingpong, tmp_path):
        report, _ = pingpong
        proc = hpcval('calibrate', '--system', 'local', report, '--ref-dir',
                      tmp_path / 'nowhere')
        assert proc.returncode == 3
        assert f'{tmp_path / "nowhere"}: cannot list the reference folder' \
            in proc.stderr


class TestCalibrateBadNumbers:
    """NaN options and values beyond any float gave tracebacks."""

    @pytest.mark.parametrize('option', ['--k', '--floor'])
    @pytest.mark.parametrize('value', ['nan', 'inf', '-inf', 'x'])
    def test_options(self, pingpong, root, option, value):
        report, _ = pingpong
        proc = hpcval('calibrate', '--system', 'local', report, '--ref-dir',
                      root / 'references', f'{option}={value}')
        assert proc.returncode == 3
        assert f'argument {option}: {value!r} is not a finite number' in \
            proc.stderr

    def test_nan_and_huge_values(self, pingpong, root, tmp_path):
        report, _ = pingpong

        def set_all(value):
            def edit(data):
                for tc in cases(data):
                    for vals in (tc.get('perfvalues') or {}).values():
                        vals[0] = value
            return edit

        nan = _report_copy(report, tmp_path, 'nan.json', set_all(float('nan')))
        huge = _report_copy(report, tmp_path, 'huge.json', set_all(1e308))
        big_int = _big_int_report(report, tmp_path)
        before = digest(root)
        for path in (nan, huge, big_int):
            proc = hpcval('calibrate', '--system', 'local', path,
                          '--ref-dir', root / 'references', '--write')
            assert proc.returncode == 0, proc.stderr
            assert 'not a finite number' in proc.stderr
        assert digest(root) == before


def _big_int_report(report, tmp_path):
    """``report`` with its first figure an integer of 401 digits."""
    data = json.loads(pathlib.Path(report).read_text())
    tc, key = _first_perf(data)
    tc['perfvalues'][key][0] = 123456.789
    path = tmp_path / 'bigint.json'
    path.write_text(json.dumps(data).replace('123456.789', '1' + '0' * 400))
    return path


class TestDuplicateRuns:
    """The same session given twice counted twice: n and std were wrong
    and calibrate took one run for several."""

    def test_report_twice_and_report_plus_db(self, pingpong, tmp_path):
        report, db = pingpong
        copy = tmp_path / 'copy.json'
        shutil.copy(report, copy)
        once = hpcval('report', report, '--format', 'csv')
        assert once.returncode == 0, once.stderr
        for args in ((report, copy), (report, '--db', db)):
            proc = hpcval('report', *args, '--format', 'csv')
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == once.stdout
            assert 'hpcval: dropped 3 duplicate test case(s): the same ' \
                   'session, test case and run' in proc.stderr

    def test_calibrate_counts_runs_once(self, pingpong, root, tmp_path):
        report, db = pingpong
        proc = hpcval('calibrate', '--system', 'local', report, report,
                      '--db', db, '--ref-dir', root / 'references',
                      '--accept-performance-failures', '--min-samples', '4')
        assert proc.returncode == 0, proc.stderr
        assert 'dropped 6 duplicate test case(s)' in proc.stderr
        assert '3 sample(s), fewer than 4' in proc.stderr
        assert proc.stdout == ''


class TestReportOutputSymlinks:
    """--force wrote through a symbolic link onto an input report; without
    it, a dangling link wrote outside --out."""

    def test_link_to_input_refused_with_force(self, tmp_path):
        out = tmp_path / 'out'
        out.mkdir()
        report = _report_copy(OLD_REPORT, tmp_path)
        (out / 'comparison.md').symlink_to(report)
        before = digest(tmp_path)
        proc = hpcval('report', report, '--out', out, '--force')
        assert proc.returncode == 3
        assert f'{out / "comparison.md"} is a symbolic link: not written' \
            in proc.stderr
        assert digest(tmp_path) == before

    def test_dangling_link_refused(self, tmp_path):
        out = tmp_path / 'out'
        out.mkdir()
        target = tmp_path / 'elsewhere' / 'x.csv'
        target.parent.mkdir()
        (out / 'comparison.csv').symlink_to(target)
        for force in ((), ('--force',)):
            proc = hpcval('report', OLD_REPORT, '--format', 'csv', '--out',
                          out, *force)
            assert proc.returncode == 3
            assert 'is a symbolic link: not written' in proc.stderr
            assert not target.exists()

    def test_linked_plots_folder_refused(self, tmp_path):
        out = tmp_path / 'out'
        out.mkdir()
        elsewhere = tmp_path / 'elsewhere'
        elsewhere.mkdir()
        (out / 'plots').symlink_to(elsewhere)
        proc = hpcval('report', OLD_REPORT, '--out', out, '--plots')
        assert proc.returncode == 3
        assert f'{out / "plots"} is a symbolic link' in proc.stderr
        assert not list(elsewhere.iterdir())

    def test_out_is_an_existing_file(self, tmp_path):
        out = tmp_path / 'out'
        out.write_text('keep')
        proc = hpcval('report', OLD_REPORT, '--out', out)
        assert proc.returncode == 3
        assert f'{out} exists and is not a folder' in proc.stderr
        assert out.read_text() == 'keep'

    def test_existing_output_kept_without_force(self, tmp_path):
        out = tmp_path / 'out'
        out.mkdir()
        (out / 'comparison.md').write_text('keep')
        proc = hpcval('report', OLD_REPORT, '--out', out)
        assert proc.returncode == 3
        assert 'exists (use --force to overwrite)' in proc.stderr
        assert (out / 'comparison.md').read_text() == 'keep'


HOSTILE_NAME = '=HYPERLINK("http://x")|<script>alert(1)</script>'


def _hostile_report(tmp_path):
    def edit(data):
        data['session_info']['hostname'] = '@SUM(A1)'
        for tc in cases(data):
            tc['display_name'] = HOSTILE_NAME + ' %p=+1'
            tc['system'] = '-2+3'
    return _report_copy(OLD_REPORT, tmp_path, edit=edit)


class TestCsvFormulas:
    """CSV cells starting with = + - @ were written as is: formulas."""

    def test_text_cells_neutralised(self, tmp_path):
        report = _hostile_report(tmp_path)
        proc = hpcval('report', report, '--format', 'csv')
        assert proc.returncode == 0, proc.stderr
        rows = list(csv.DictReader(io.StringIO(proc.stdout)))
        assert rows
        for row in rows:
            for key in ('benchmark', 'test', 'metric', 'unit', 'better',
                        'system', 'judgement'):
                assert row[key][:1] not in ('=', '+', '-', '@', '\t',
                                            '\r'), (key, row[key])
            # the row is what was measured (the parameter), the check
            # class is named in its own column
            assert row['test'] == "'+1"
            assert row['checks'].startswith("'=HYPERLINK")
            float(row['value'])     # numbers stay numbers


class TestMarkdownEscaping:
    """Markdown output kept raw <script> and | in names."""

    def test_cells_escaped(self, tmp_path):
        report = _hostile_report(tmp_path)
        proc = hpcval('report', report, '--format', 'md')
        assert proc.returncode == 0, proc.stderr
        assert '<script>' not in proc.stdout
        assert '&lt;script&gt;' in proc.stdout
        lines = proc.stdout.splitlines()
        [head] = [x for x in lines if x.startswith('| test | metric |')]
        rows = [x for x in lines if x.startswith('| +1 |')]
        assert rows

        def cells(line):    # an escaped pipe is no cell break
            return line.replace('\\|', '').count('|')
        assert all(cells(row) == cells(head) for row in rows), rows


class TestReportHostileFiles:
    """Huge values, deep nesting, /dev/zero, a FIFO (it hung), a blob in
    the database and a --db path with '#' gave tracebacks or read the
    wrong file."""

    def test_fifo_is_refused_not_waited_on(self, tmp_path):
        fifo = tmp_path / 'fifo.json'
        os.mkfifo(fifo)
        proc = hpcval('report', fifo, OLD_REPORT, timeout=30)
        assert proc.returncode == 0
        assert f'{fifo}: not a regular file' in proc.stderr

    def test_dev_zero_and_a_folder(self, tmp_path):
        proc = hpcval('report', '/dev/zero', tmp_path, OLD_REPORT,
                      timeout=30)
        assert proc.returncode == 0
        assert '/dev/zero: not a regular file' in proc.stderr
        assert f'{tmp_path}: not a regular file' in proc.stderr

    def test_deep_nesting_and_huge_numbers(self, tmp_path):
        deep = tmp_path / 'deep.json'
        deep.write_text('[' * 100000 + ']' * 100000)
        long_int = tmp_path / 'longint.json'
        long_int.write_text('{"x": 1' + '0' * 5000 + '}')
        big = _big_int_report(OLD_REPORT, tmp_path)

        def infinite(data):
            tc, key = _first_perf(data)
            tc['perfvalues'][key][0] = float('inf')

        def no_clock(data):
            data['session_info']['time_start_unix'] = 1e300

        inf = _report_copy(OLD_REPORT, tmp_path, 'inf.json', infinite)
        when = _report_copy(OLD_REPORT, tmp_path, 'when.json', no_clock)
        proc = hpcval('report', deep, long_int, big, inf, when,
                      timeout=60)
        no_traceback(proc)
        assert proc.returncode == 2     # nothing usable left
        assert f'{deep}: not valid JSON: nested too deeply' in proc.stderr
        assert f'{long_int}: not valid JSON' in proc.stderr
        assert f'{big}: ' in proc.stderr and '... (401 characters), not ' \
            'a finite number' in proc.stderr
        assert f'{inf}: ' in proc.stderr
        assert "'time_start_unix' is 1e+300, not a unix time" in proc.stderr

    def test_blob_in_database(self, pingpong, tmp_path):
        _, db = pingpong
        bad = tmp_path / 'bad.db'
        shutil.copy(db, bad)
        with sqlite3.connect(bad) as conn:
            uuid = conn.execute('SELECT uuid FROM sessions').fetchone()[0]
            conn.execute('UPDATE sessions SET json_blob = ? WHERE uuid = ?',
                         (b'\xff\x00' * 10, uuid))
            conn.execute("INSERT INTO sessions (uuid, json_blob) VALUES "
                         "('null', NULL), ('deep', ?), ('number', 42)",
                         ('[' * 100000,))
        proc = hpcval('report', '--db', bad, OLD_REPORT)
        assert proc.returncode == 0
        assert f'{bad}#{uuid}: not valid JSON' in proc.stderr
        assert f'{bad}#null: holds NoneType, not JSON text' in proc.stderr
        assert f'{bad}#deep: not valid JSON: nested too deeply' in \
            proc.stderr
        assert f'{bad}#number: not a ReFrame run report' in proc.stderr

    def test_db_path_with_hash(self, pingpong, tmp_path):
        _, db = pingpong
        folder = tmp_path / 'a#b?c'
        folder.mkdir()
        shutil.copy(db, folder / 'results.db')
        # what an unquoted URI would open instead
        (tmp_path / 'a').write_text('not this one')
        proc = hpcval('report', '--db', folder / 'results.db',
                      '--format', 'csv')
        assert proc.returncode == 0, proc.stderr
        assert 'Mpi4pyPingPongCheck' in proc.stdout


H200 = ROOT / 'tests' / 'fixtures' / 'reports' / 'h200x2' / \
    'nccl-transferbench-babelstream.json'


def _screen_report(tmp_path, nodes):
    """The H200 report's BabelStream case as a two-node screen whose
    partition node list, as recorded, is ``nodes``."""
    data = json.loads(H200.read_text())
    tc = next(t for t in data['runs'][0]['testcases']
              if t['display_name'].startswith('BabelStreamCudaCheck'))
    copies = []
    for node in ('n1', 'n2'):
        c = json.loads(json.dumps(tc))
        c['display_name'] += f" %.nid=['{node}']"
        c['job_nodelist'] = [node]
        c['hpcval_partition_nodes'] = {'nodes': nodes}
        copies.append(c)
    data['runs'][0]['testcases'] = copies
    path = tmp_path / 'screen.json'
    path.write_text(json.dumps(data))
    return path


class TestVerdictBoundedInputs:
    """Small inputs that asked for unbounded time or memory (issue 26)."""

    def test_a_huge_node_list_is_not_expanded(self, tmp_path):
        proc = hpcval('verdict', _screen_report(tmp_path, 'n[1-300000000]'),
                      timeout=60)
        assert proc.returncode == 2, proc.stdout     # coverage unknown
        assert 'node screen: 2 nodes tested, the partition\'s node list ' \
            'was not recorded' in proc.stdout

    def test_a_node_list_of_a_real_size_is_expanded(self, tmp_path):
        proc = hpcval('verdict', _screen_report(tmp_path, 'n[1-3]'))
        assert 'node screen: 2 of 3 nodes tested; not tested: n3' in \
            proc.stdout

    @pytest.mark.parametrize('since', ['now-' + '9' * 400 + 'd',
                                       'now-99999d'])
    def test_since_out_of_range_is_one_line(self, since):
        proc = hpcval('verdict', H200, '--since', since)
        assert proc.returncode == 3
        assert proc.stderr.strip().splitlines()[-1].endswith(
            'is before 1970: no run is that old')
        assert len(proc.stderr.splitlines()[-1]) < 200

    def test_yaml_alias_bomb_is_not_expanded_in_the_message(self, tmp_path):
        lines = ['system: bomb', 'description:',
                 '  - &a ["lol","lol","lol","lol","lol","lol","lol","lol",'
                 '"lol"]']
        for prev, name in zip('abcdefgh', 'bcdefghi'):
            lines.append(f'  - &{name} [' + ','.join([f'*{prev}'] * 9) + ']')
        lines.append('entries: []')
        folder = tmp_path / 'refs'
        folder.mkdir()
        (folder / 'bomb.yaml').write_text('\n'.join(lines) + '\n')
        # 9**9 strings if expanded: far beyond this limit
        proc = subprocess.run(
            ['bash', '-c', f'ulimit -v 1500000; exec {HPCVAL} references '
                           f'--dir {folder} --schema-only'],
            capture_output=True, text=True, timeout=60)
        no_traceback(proc)
        assert proc.returncode == 1
        # refused before it is built (hpcval.bounded)
        assert 'bomb.yaml: refused: more than 1000000 values with every ' \
            'alias expanded' in proc.stderr
        assert len(proc.stderr) < 1000


class TestStickySiteFolder:
    """A site folder of mode 1777 (sticky, like /tmp): anyone may add a
    module to it, so it is refused as any folder others can write."""

    def test_refused_in_one_line(self, tmp_path):
        site = tmp_path / 'site'
        assert hpcval('site', 'init', site).returncode == 0
        site.chmod(0o1777)
        proc = hpcval('paths', env={'HPCVAL_SITE': str(site)})
        out = (proc.stdout + proc.stderr).strip()
        assert proc.returncode != 0 and len(out.splitlines()) == 1, out
        assert f'HPCVAL_SITE={site}: not used: {site} is writable by ' \
            f'group or others (mode 1777)' in out, out

    def test_a_sticky_folder_above_is_still_trusted(self, tmp_path):
        from hpcval import trust
        shared = tmp_path / 'shared'
        shared.mkdir()
        shared.chmod(0o1777)
        (shared / 'site').mkdir(mode=0o755)
        trust.check_path(shared / 'site')
        trust.own_folder(shared / 'mine')
        with pytest.raises(trust.UntrustedPath, match='mode 1777'):
            trust.check_path(shared)
