"""hpcval verdict over real run reports (tests/fixtures/reports/h200x2: a
real 2 x H200 run of nccl-tests, TransferBench and BabelStream), and over
copies of them changed in one place each (a reference that fails, a skipped
source, a failed build), as a bad maintenance would leave them."""
import copy
import json
import pathlib
import re

import pytest
import yaml

from hpcval import cli, verdict
from hpcval.publish import results

H200 = 'tests/fixtures/reports/h200x2/nccl-transferbench-babelstream.json'


def _report():
    with open(H200, encoding='utf-8') as fp:
        return json.load(fp)


def _cases(report):
    return report['runs'][0]['testcases']


def _case(report, prefix):
    return next(tc for tc in _cases(report)
                if tc['display_name'].startswith(prefix))


# report written by _write: the references folder that agrees with it
_REFERENCES = {}


def _write(tmp_path, report, name='report.json'):
    """``report`` as a file, and beside it (references/local.yaml) the
    references that hold the bounds it carries, as a site calibrated on
    that run would have them (the latest written is the folder's)."""
    path = tmp_path / name
    path.write_text(json.dumps(report))
    refs = tmp_path / 'references'
    refs.mkdir(exist_ok=True)
    (refs / 'local.yaml').write_text(_references_of(report))
    _REFERENCES[str(path)] = str(refs)
    return str(path)


def _references_of(report):
    """A references file of system local that judges each figure of
    ``report`` by the bound it carries (a figure ``m@c`` by ``m``'s)."""
    entries = {}
    for tc in _cases(report):
        where = tuple(re.findall(r'%(\w+)=(\S+)', tc['display_name']))
        for key, (_, ref, lower, upper, unit, _) in \
                (tc['perfvalues'] or {}).items():
            metric = key.rsplit(':', 1)[-1]
            if '@' in metric or (lower is None and upper is None):
                continue
            entry = entries.setdefault(
                (tc['display_name'].split()[0], where), {})
            entry[metric] = {'value': ref, 'lower': lower, 'upper': upper,
                             'unit': unit, 'rule': 'own', 'source': 'test'}
    return yaml.safe_dump({
        'system': 'local', 'description': 'the bounds of a test report',
        'rules': {'own': 'the bound the report carries'},
        'entries': [{'check': check, 'where': dict(where), 'metrics': m}
                    for (check, where), m in entries.items()]
        or [{'check': 'NoSuchCheck', 'absent': 'no figure'}]})


def _run(capsys, *args):
    """hpcval verdict ``args``, judged by the references _write wrote
    beside the first report (unless ``args`` names its own)."""
    refs = next((_REFERENCES[a] for a in args if a in _REFERENCES), None)
    if refs and '--references' not in args:
        args = (*args, '--references', refs)
    status = cli.main(['verdict', *args])
    out, err = capsys.readouterr()
    return status, out, err


def _judged(report):
    """Every figure judged against its own value, +-10% (a figure
    ``m@c`` of one component against ``m``'s, as a run judges it): a
    healthy run."""
    for tc in _cases(report):
        values = {k: tup[0] for k, tup in tc['perfvalues'].items()}
        for key, tup in tc['perfvalues'].items():
            tup[1:4] = [values[key.partition('@')[0]], -0.1, 0.1]
    return report


def _no_datasheet(tmp_path):
    """The H200 report as if its GPUs were a model no datasheet has
    (hpcval.datasheets): nothing but a reference judges its figures."""
    report = _report()
    for tc in _cases(report):
        if (tc.get('hpcval_provenance') or {}).get('gpu'):
            tc['hpcval_provenance']['gpu'] = 'NVIDIA X0 x2'
    path = tmp_path / 'unknown_gpu.json'
    path.write_text(json.dumps(report))
    return str(path)


def test_unjudged_figures_leave_the_run_incomplete(capsys, tmp_path):
    report = _no_datasheet(tmp_path)
    # without nccl-tests' times, which local.yaml's ceiling judges
    data = json.loads(pathlib.Path(report).read_text())
    for tc in _cases(data):
        for key in [k for k in tc.get('perfvalues') or {}
                    if k.endswith('_smallest')]:
            del tc['perfvalues'][key]
    pathlib.Path(report).write_text(json.dumps(data))
    status, out, _ = _run(capsys, report)
    assert status == verdict.EXIT_INCOMPLETE
    assert out.startswith('hpcval verdict: INCOMPLETE (exit 2)')
    assert 'local:default: 5 test cases (5 passed, 0 failed, 0 skipped)' in out
    assert '0 judged' in out and '38 logged without a reference' in out
    assert ('UNJUDGED BabelStreamCudaCheck %build.model=cuda: copy, copy@gpu0, '
            'copy@gpu1, mul and 11 more') in out
    assert '38 figure(s) without a reference' in out
    # nothing judged at all is never a pass
    assert _run(capsys, report, '--allow-unjudged')[0] == \
        verdict.EXIT_INCOMPLETE
    status, out, _ = _run(capsys, report, '--strict')
    assert status == verdict.EXIT_FAILED


def test_a_judged_healthy_run_passes(tmp_path, capsys):
    path = _write(tmp_path, _judged(_report()))
    status, out, _ = _run(capsys, path)
    assert status == verdict.EXIT_OK, out
    assert 'figures: 42 judged (42 passed, 0 failed), 0 logged' in out
    assert 'FAIL' not in out and 'not validated' not in out


def test_a_failed_figure_names_node_metric_value_and_bound(tmp_path, capsys):
    report = _judged(_report())
    tc = _case(report, 'NcclTestsNodeCheck %collective=all_reduce')
    tup = tc['perfvalues']['local:default:busbw_outofplace_largest']
    tup[0], tup[1] = 27.1, 349.0
    tc['result'] = 'failure'
    tc['fail_phase'] = 'performance'
    tc['fail_reason'] = 'performance error: failed to meet reference(s)'
    path = _write(tmp_path, report)
    status, out, _ = _run(capsys, path)
    assert status == verdict.EXIT_FAILED
    line = next(l for l in out.splitlines() if l.startswith('  FAIL'))
    assert line == ('  FAIL node vm: NcclTestsNodeCheck %collective=all_reduce'
                    ': busbw_outofplace_largest = 27.1 GB/s, -92.2% vs ref '
                    '349, bound >= 314.1 and '
                    '<= 383.9 GB/s (ref 349, -10.0%, +10.0%)')
    assert '(4 passed, 1 failed, 0 skipped)' in out

    status, out, _ = _run(capsys, path, '--format', 'json')
    data = json.loads(out)
    assert data['status'] == 1 and data['verdict'] == 'FAILED'
    fail, = data['partitions'][0]['failures']
    assert (fail['node'], fail['metric'], fail['value']) == \
        ('vm', 'busbw_outofplace_largest', 27.1)
    assert data['failures_by_node'] == {'vm': [fail['line']]}


@pytest.mark.parametrize('value, dev', ((1e300, '+2.91e+299%'),
                                        (343.27e3 + 1, '+99900%')))
def test_an_absurd_figure_fails_against_a_lower_bound(tmp_path, capsys,
                                                      value, dev):
    """A report's figure no benchmark produces (hpcval.judgement.
    IMPLAUSIBLE), judged by a lower bound only: FAIL naming the value,
    the reference and why."""
    report = _judged(_report())
    tc = _case(report, 'NcclTestsNodeCheck %collective=all_reduce')
    tup = tc['perfvalues']['local:default:busbw_outofplace_largest']
    tup[0], tup[2:4] = value, [-0.1, None]
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED, out
    line = next(l for l in out.splitlines() if l.startswith('  FAIL'))
    assert line.startswith(
        '  FAIL node vm: NcclTestsNodeCheck %collective=all_reduce: '
        f'busbw_outofplace_largest = {value:g} GB/s, {dev} vs ref 343.27, ')
    assert line.endswith('bound >= 308.943 GB/s (ref 343.27, -10.0%): '
                         'implausible: not a measurement (not finite, or '
                         'more than 1000 times its reference)')


@pytest.mark.parametrize('value', ('inf', 'nan'))
def test_a_figure_not_finite_is_unusable_input(tmp_path, capsys, value):
    report = _judged(_report())
    tc = _case(report, 'NcclTestsNodeCheck %collective=all_reduce')
    tup = tc['perfvalues']['local:default:busbw_outofplace_largest']
    tup[0], tup[2:4] = float(value), [-0.1, None]
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_INPUT, out
    assert f"metric 'busbw_outofplace_largest' value is {value}, not a " \
        f"finite number" in out


def test_components_the_check_recorded_are_named(tmp_path, capsys):
    report = _judged(_report())
    tc = _case(report, 'BabelStreamCudaCheck')
    tc['perfvalues']['local:default:copy@gpu1'] = [
        1187906.794, 3518700.0, -0.1, None, 'MB/s', 'fail']
    tc['hpcval_components'] = {'copy@gpu1': 'GPU 1'}
    tc['result'] = 'failure'
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    # the references judge: copy@gpu1 by copy's reference, not by the
    # bound the report carries for it, which is named beside
    assert ('FAIL node vm GPU 1: BabelStreamCudaCheck %build.model=cuda: '
            'copy@gpu1 = 1.18791e+06 MB/s, -66.4% vs ref 3.53119e+06, '
            'bound >= 3.17808e+06 and <= 3.88431e+06 MB/s') in out
    assert ('BOUND BabelStreamCudaCheck %build.model=cuda: copy@gpu1: '
            'report bound >= 3.16683e+06 MB/s (ref 3.5187e+06, -10.0%); '
            'references >= 3.17808e+06 and <= 3.88431e+06 MB/s (ref '
            '3.53119e+06, -10.0%, +10.0%) (') in out
    assert '1 differ from the report\'s' in out


def test_a_skipped_source_is_named_with_its_reason(tmp_path, capsys):
    report = _judged(_report())
    src = _case(report, 'BabelStreamSource')
    src['result'] = 'skipped'
    src['hpcval_skip_reason'] = ('https://github.com/UoB-HPC/BabelStream.git '
                                 'is not reachable')
    _case(report, 'BabelStreamBuild')['result'] = 'skipped'
    test = _case(report, 'BabelStreamCudaCheck')
    test['result'] = 'skipped'
    test['perfvalues'] = {}
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_INCOMPLETE
    assert ('SKIP BabelStreamCudaCheck %build.model=cuda: needs '
            'BabelStreamBuild %model=cuda ~local:default+cuda: needs '
            'BabelStreamSource ~local: https://github.com/UoB-HPC/'
            'BabelStream.git is not reachable') in out
    assert '1 test case(s) skipped, not validated' in out
    assert _run(capsys, _write(tmp_path, report), '--strict')[0] == \
        verdict.EXIT_FAILED


def _failed_build(**fields):
    """The H200 report with its nccl-tests build failed at compile
    (``fields`` set on the build's case) and the tests that needed it
    skipped, as ReFrame records them."""
    report = _judged(_report())
    _case(report, 'NcclTestsBuild').update(result='failure',
                                           fail_phase='compile', **fields)
    for tc in _cases(report):
        if tc['display_name'].startswith('NcclTestsNodeCheck'):
            tc.update(result='skipped', perfvalues={})
    return report


def test_a_failed_build_fails_the_run(tmp_path, capsys):
    report = _failed_build(
        fail_reason='build system error: make: *** [all] Error 2')
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    assert ('FAIL node not recorded: NcclTestsBuild ~local:default+cuda: '
            'compile: build system error: make: *** [all] Error 2') in out
    assert 'SKIP NcclTestsNodeCheck %collective=all_reduce: needs ' \
        'NcclTestsBuild ~local:default+cuda: build system error' in out


def test_an_unreadable_input_is_unknown_and_named(tmp_path, capsys):
    bad = tmp_path / 'cut.json'
    bad.write_text(open(H200).read()[:500])
    status, out, err = _run(capsys, str(bad))
    assert status == verdict.EXIT_INPUT
    assert out.startswith('hpcval verdict: UNKNOWN (exit 3)')
    assert 'nothing was validated' in out
    assert f'{bad}: not valid JSON' in out
    assert 'Traceback' not in out + err
    status, out, err = _run(capsys, str(bad), '--on-error', 'reject')
    assert status == verdict.EXIT_INPUT and 'not valid JSON' in err


def test_the_same_session_twice_counts_once(tmp_path, capsys):
    path = _write(tmp_path, _judged(_report()))
    other = _write(tmp_path, _judged(_report()), 'again.json')
    status, out, _ = _run(capsys, path, other)
    assert '5 test cases' in out and '42 judged' in out


def test_functions_are_importable_for_scripts():
    loaded = results.load([H200])
    v = verdict.judge(loaded, allow_unjudged=True)
    assert v.status == verdict.EXIT_INCOMPLETE      # nothing judged
    assert verdict.as_dict(v)['partitions'][0]['logged'] == 42
    assert verdict.render_text(v).startswith('hpcval verdict: INCOMPLETE')


def test_failures_are_grouped_by_node_under_distribute(tmp_path, capsys):
    """--distribute=all names each copy of a test %.nid=['<node>'] and runs
    it on that node: the verdict lists the bad nodes."""
    report = _judged(_report())
    copies = []
    for node in ('n1', 'n2', 'n3'):
        tc = copy.deepcopy(_case(report, 'BabelStreamCudaCheck'))
        tc['display_name'] = tc['display_name'].replace(
            'BabelStreamCudaCheck', f"BabelStreamCudaCheck %.nid=['{node}']",
            1)
        tc['job_nodelist'] = [node]
        copies.append(tc)
    tup = copies[1]['perfvalues']['local:default:copy']
    tup[0] = tup[1] * 0.5
    copies[1]['result'] = 'failure'
    _cases(report).extend(copies)
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    # n2 at half its peers fails both its reference and its peers
    assert 'failures by node (1 node(s)):\n  n2: 2 failure(s)\n' in out
    assert 'n1:' not in out and 'n3:' not in out


def test_a_low_figure_on_a_busy_node_says_so(tmp_path, capsys):
    """hpcval_node_load (hpcval.benchmarks.nodeuse) of a case whose figure
    failed: the failure line ends with what kept the node busy."""
    import json
    import pathlib

    from hpcval import cli, records
    from hpcval.benchmarks import nodeuse
    fix = pathlib.Path(__file__).resolve().parent / 'fixtures'
    src = fix / 'captured' / 'h100_health' / 'reports' / 'gpu0_loaded.json'
    report = json.loads(src.read_text())
    load = nodeuse.read(
        (fix / 'captured' / 'nodeload' / 'shared_host_3yes.txt').read_text())
    why = load.why
    for run in report['runs']:
        for tc in run['testcases']:
            tc['hpcval_node_load'] = records.builtins(load)
    path = tmp_path / 'busy.json'
    path.write_text(json.dumps(report))
    # the references that run had (the capture's README)
    assert cli.main(['verdict', str(path), '--references',
                     str(src.parent / 'local.yaml')]) == 1
    out = capsys.readouterr().out
    assert f'the node was busy at job start: {why}' in out
    assert all('busy' in line for line in out.splitlines()
               if line.startswith('  FAIL') and ' = ' in line)
