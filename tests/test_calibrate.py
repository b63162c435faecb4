"""``hpcval calibrate`` on real run reports of ``--system local``.

Two real ReFrame sessions (``--repeat 2`` and ``--repeat 1`` of the MPI
ping-pong, and of BabelStream's CPU check where HPCVAL_BABELSTREAM_MIRROR
names a copy of its source) give three runs per metric; local is then
calibrated into a copy of references/ and the check rerun against it.
"""
import math
import os
import shutil
import statistics

import msgspec
import pytest
import yaml

from hpcval.publish import calibrate as cal
from hpcval import references
from hpcval.publish import results
from hpcval.publish.comparison import better
from rfmrun import ROOT, by_name, reframe

MIRROR = os.environ.get('HPCVAL_BABELSTREAM_MIRROR')
CHECKS = ('checks/mpi4py_pingpong.py', 'checks/babelstream.py')
RUN = ('-r', '--system', 'local',
       '-n', 'Mpi4pyPingPongCheck|BabelStreamCpuCheck',
       # a quicker, noisier ping-pong; the rerun uses the same setting
       '-S', 'Mpi4pyPingPongCheck.loops=100',
       *(('-S', f'BabelStreamSource.src_mirror={MIRROR}') if MIRROR else ()))
PINGPONG = ('Mpi4pyPingPongCheck', 'default', (('placement', 'on_node'),))
TIMES = ('latency_8B', 'latency_1KiB')


@pytest.fixture(scope='module')
def unjudged_root(tmp_path_factory):
    """A root whose local.yaml does not judge the two checks: a baseline
    run must pass whatever the old bounds say (this shared VM often misses
    them), and only passed runs are calibrated."""
    root = tmp_path_factory.mktemp('unjudged')
    shutil.copytree(ROOT / 'references', root / 'references')
    path = root / 'references' / 'local.yaml'
    data = yaml.safe_load(path.read_text())
    data['entries'] = [e for e in data['entries'] if e['check'] not in
                       ('Mpi4pyPingPongCheck', 'BabelStreamCpuCheck')]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


@pytest.fixture(scope='module')
def loaded(tmp_path_factory, unjudged_root):
    paths = []
    for repeat in (2, 1):
        tmp = tmp_path_factory.mktemp(f'repeat{repeat}')
        proc, report = reframe(*RUN, '--repeat', str(repeat), tmp_path=tmp,
                               checks=CHECKS,
                               env={'HPCVAL_ROOT': str(unjudged_root)})
        assert report is not None and proc.returncode == 0, proc.stdout[-3000:]
        paths.append(str(tmp / 'report.json'))
    data = results.load(paths, on_error='reject')
    assert len({c.session for c in data.cases}) == 2
    return data


def _calibrate(samples, ref_dir, **kw):
    # these tests check the file handling with the fixed k rule and three
    # runs; test_calibrate_rule.py checks the default statistics, and
    # test_calibrate_outliers.py the outlier rule (a busy VM's ping-pong
    # can sit apart from its two other runs)
    kw = {'k': 3, 'floor': 0.05, 'min_samples': 3, 'keep_outliers': True,
          **kw}
    return cal.calibrate(samples, 'local',
                         references.load_dir(str(ref_dir)),
                         ref_dir=str(ref_dir), **kw)


def _load_text(text, tmp_path):
    probe = tmp_path / 'probe'
    probe.mkdir(exist_ok=True)
    (probe / 'local.yaml').write_text(text)
    return references.load(str(probe / 'local.yaml'))


def _runs(loaded):
    """{(check, partition, params, metric): [Sample]} of passed local runs."""
    out = {}
    for s in loaded.samples:
        if s.case.result == 'pass':
            out.setdefault((s.case.check, s.case.partition, s.case.params,
                            s.metric), []).append(s)
    return out


def test_calibrated_file_holds_means_bounds_and_provenance(
        loaded, ref_dir, tmp_path):
    before = (ref_dir / 'local.yaml').read_text()
    old = references.load(str(ref_dir / 'local.yaml'))
    result = _calibrate(loaded.samples, ref_dir)
    text, diff = result.text, result.diff
    assert (ref_dir / 'local.yaml').read_text() == before, 'written unasked'
    new = _load_text(text, tmp_path)
    assert new[:len(old)] == old, 'entries above the section must not change'

    runs = _runs(loaded)
    judged = 0
    for (check, part, params, metric), samples in runs.items():
        got = references.select(new[len(old):], [check], part, dict(params),
                                {metric: samples[0].unit})
        values = [s.value for s in samples]
        mean, std = statistics.fmean(values), statistics.stdev(values)
        tol = max(3 * std / mean, 0.05)
        if metric.endswith('_std'):     # explicitly absent in local.yaml
            assert metric not in got
            assert any(f'kept {check} placement=on_node (partition '
                       f'default) {metric} explicitly absent' in n
                       for n in result.notes)
        elif better(samples[0].unit) == 'higher' and tol >= 1:
            assert metric not in got
            assert any(f'{metric}: 3 std / mean =' in n for n in result.notes)
        else:
            value, lower, upper, _ = got[metric]
            assert value == pytest.approx(mean, rel=1e-5)
            bound = upper if better(samples[0].unit) == 'lower' else -lower
            assert tol <= bound < tol + 1e-4
            assert (lower, upper).count(None) == 1
            judged += 1
    assert judged >= len(TIMES)

    [entry] = [r for r in new[len(old):] if r.metric == 'latency_8B']
    assert (entry.check, entry.partition, entry.where, entry.rule) == (
        'Mpi4pyPingPongCheck', 'default', {'placement': 'on_node'},
        'calibrated')
    samples = runs[(*PINGPONG, 'latency_8B')]
    assert entry.spread == pytest.approx(
        statistics.stdev(s.value for s in samples), rel=1e-5)
    case = samples[0].case
    values = [s.value for s in samples]
    # a quiet machine's ping-pong varies by less than the floor allows
    how = 'bound 3 std / mean' if 3 * statistics.stdev(values) / \
        statistics.fmean(values) >= 0.05 else 'bound floor 0.05'
    for stamp in ('from 3 passed runs', f'ReFrame {case.version} on '
                  f'{case.hostname}', f'job nodes {case.nodes[0]}',
                  how, ' UTC',
                  *(c.session[:8] for c in loaded.cases)):
        assert stamp in entry.source, stamp

    assert diff.startswith('--- a/references/local.yaml\n'
                           '+++ b/references/local.yaml\n')
    removed = [line for line in diff.splitlines()
               if line.startswith('-') and not line.startswith('---')]
    assert removed == []
    assert '+  calibrated: >' in diff
    assert '+  - check: Mpi4pyPingPongCheck' in diff


def test_written_only_when_asked_and_recalibration_rewrites_the_section(
        loaded, ref_dir):
    path = ref_dir / 'local.yaml'
    first = _calibrate(loaded.samples, ref_dir, write=True)
    assert path.read_text() == first.text
    again = _calibrate(loaded.samples, ref_dir)
    assert again.text == first.text and again.diff == ''
    assert first.text.count(cal.MARKER) == 1
    assert first.text.count('  calibrated: >') == 1

    # a later calibration of one metric keeps the others it calibrated
    one = [s for s in loaded.samples if s.metric == 'latency_1KiB']
    later = _calibrate([msgspec.structs.replace(s, value=s.value * 2)
                        for s in one], ref_dir)
    changed = [line for line in later.diff.splitlines()
               if line.startswith('+') and 'value:' in line]
    assert len(changed) == 1
    assert later.text.count(cal.MARKER) == 1
    assert 'latency_8B:' in later.text.split(cal.MARKER)[1]


def test_file_changed_since_it_was_read_is_not_overwritten(loaded, ref_dir):
    by_system = references.load_dir(str(ref_dir))
    path = ref_dir / 'local.yaml'
    path.write_text(path.read_text().replace('value: 2.0', 'value: 2.5'))
    with pytest.raises(cal.CalibrationError, match='changed since it was '
                                                   'read'):
        cal.calibrate(loaded.samples, 'local', by_system,
                      ref_dir=str(ref_dir), write=True)
    assert 'value: 2.5' in path.read_text()


def test_too_few_samples_are_refused(loaded, ref_dir):
    single = [s for s in loaded.samples
              if s.case.session == loaded.cases[-1].session]
    result = _calibrate(single, ref_dir, write=True)
    assert result.diff == '' and result.text == \
        (ref_dir / 'local.yaml').read_text()
    assert any('latency_8B: 1 sample(s), fewer than 3' in n
               for n in result.notes)
    two = [s for s in loaded.samples
           if s.case.session == loaded.cases[0].session]
    assert 'value:' in _calibrate(two, ref_dir, min_samples=2).diff


def test_only_passed_runs_of_the_system_and_no_replays(loaded, ref_dir,
                                                       tmp_path):
    ping = [s for s in loaded.samples if s.metric == 'latency_8B']
    odd = [msgspec.structs.replace(s, value=1e6, case=msgspec.structs.replace(
        s.case, **change)) for s, change in zip(ping, (
            {'result': 'fail'}, {'system': 'frontier'}, {'replay': True}))]
    result = _calibrate(ping + odd, ref_dir)
    notes = '\n'.join(result.notes)
    for why in ('result fail', 'another system', 'a replay'):
        assert f'left out 1 sample(s) of {why}' in notes
    [ref] = [r for r in _load_text(result.text, tmp_path)
             if r.rule == 'calibrated']
    assert ref.value == pytest.approx(
        statistics.fmean(s.value for s in ping), rel=1e-5)
    replayed = _calibrate(ping + odd[2:], ref_dir, allow_replays=True)
    assert '(replayed outputs)' in replayed.text
    failed = _calibrate(ping + odd[:1], ref_dir,
                        accept_performance_failures=True)
    assert 'from 4 runs (1 failed their performance check)' in \
        ' '.join(failed.text.split())


def test_rerun_is_judged_against_the_calibrated_file(loaded, unjudged_root,
                                                    tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(unjudged_root / 'references', root / 'references')
    # a floor as wide as local.yaml's laptop-floor (latency up to 10x):
    # this shared 2-core VM moves by several times between runs, and what
    # is tested here is that the test meets the calibrated figures
    result = _calibrate(loaded.samples, root / 'references', floor=9.0,
                        write=True)
    tuples = {r.metric: r.as_tuple(r.unit)
              for r in references.load(str(root / 'references/local.yaml'))
              if r.rule == 'calibrated'}
    assert set(TIMES) <= set(tuples), result.notes
    proc, report = reframe(*RUN, tmp_path=tmp_path, checks=CHECKS,
                           env={'HPCVAL_ROOT': str(root)})
    [tc] = by_name(report, 'Mpi4pyPingPongCheck %placement=on_node')
    perf = {k.rsplit(':', 1)[-1]: v for k, v in tc['perfvalues'].items()}
    for metric in TIMES:
        value, ref, lower, upper, unit, verdict = perf[metric]
        want = tuples[metric]
        assert ref == pytest.approx(want[0])
        assert (lower, upper, unit) == want[1:]
        # judged by the calibrated band; whether this noisy VM stays in it
        # (it did in quiet runs) is not what is tested
        assert math.isfinite(value)
        assert verdict == ('pass' if value <= ref * (1 + upper) else 'fail')
    assert tc['result'] == ('pass' if all(
        perf[m][5] == 'pass' for m in perf if perf[m][1]) else 'fail'), \
        tc['fail_reason']


def test_bad_arguments_and_entries_not_last(loaded, ref_dir):
    with pytest.raises(cal.CalibrationError, match='min_samples'):
        _calibrate(loaded.samples, ref_dir, min_samples=1)
    path = ref_dir / 'local.yaml'
    # loads, but nothing can follow the entries
    data = yaml.safe_load(path.read_text())
    data = {**{k: v for k, v in data.items() if k != 'description'},
            'description': data['description']}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(cal.CalibrationError, match='entries must be the '
                                                   'last top-level key'):
        _calibrate(loaded.samples, ref_dir)


def test_new_system_gets_a_whole_file(loaded, tmp_path):
    ref_dir = tmp_path / 'empty'
    ref_dir.mkdir()
    result = _calibrate(loaded.samples, ref_dir)
    assert result.diff.startswith('--- /dev/null')
    refs = _load_text(result.text, tmp_path)
    assert {r.metric for r in refs} >= set(TIMES), result.notes
