"""hpcval verdict judges by the references, the report's bounds only a
cross-check (issue 26): real captured runs judged by the references they
ran with give the verdict they gave; a reference tighter or looser than
the report's bound judges and is named; a bound in no reference judges
nothing; unusable references exit 3 naming the file."""
import json
import pathlib

import pytest

from hpcval import cli, references, verdict, verdict_refs
from hpcval.publish import results

FIX = pathlib.Path(__file__).resolve().parent / 'fixtures'
H200 = FIX / 'captured' / 'h200x2' / 'validation'
MINI = FIX / 'reports' / 'minicluster-screen'


def _run(capsys, *args):
    status = cli.main(['verdict', *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def _both(report, given=(), **options):
    """The verdict of ``report`` by the bounds it carries, and by the
    references (``given`` files, else the installed ones)."""
    return (verdict.judge(results.load([str(report)]), **options),
            verdict.judge(results.load(
                [str(report)], bounds=references.ReferenceSet.given(given)),
                **options))


@pytest.mark.parametrize('report, refs, status', [
    (H200 / 'reports' / 'gpu1_loaded.json', H200 / 'local.yaml', None),
    (H200 / 'reports' / 'p2p_disabled.json', H200 / 'local.yaml', None),
    # its six GPU-pair figures, in no entry, judged by the H200's
    # datasheet (hpcval.datasheets): no longer incomplete
    (H200 / 'reports' / 'healthy01.json', H200 / 'local.yaml',
     verdict.EXIT_OK),
    (MINI / 'healthy-4-nodes.json', None, None),
])
def test_the_references_a_run_had_give_its_verdict(report, refs, status):
    """Every figure matched to its entry (class or base class, partition,
    where, unit, per-GPU figures by their metric's) agrees with the bound
    ReFrame applied: not one cross-check, and the same verdict."""
    # a screen's peer bound is no band its report records: the same for
    # both (the minicluster's references give x4)
    as_recorded, judged = _both(report, [str(refs)] if refs else (),
                                peer_factor=4 if report.parent == MINI
                                else None)
    assert [c.line() for g in judged.groups for c in g.crosschecks] == []
    assert judged.status == \
        (as_recorded.status if status is None else status)
    assert [f.line() for f in judged.failures()] == \
        [f.line() for f in as_recorded.failures()]
    assert sum(g.judged_passed + g.judged_failed for g in judged.groups) > 0


def _changed(tmp_path, refs, old, new):
    text = refs.read_text()
    assert old in text
    path = tmp_path / refs.name
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_tighter_reference_fails_the_figure_and_says_so(tmp_path, capsys):
    """The healthy run's report carries the bound avg_busbw >= 97.86 GB/s;
    references that ask 150 judge it failed, whatever the report says."""
    refs = H200 / 'local.yaml'
    status, out, _ = _run(capsys, H200 / 'reports' / 'healthy01.json',
                          '--references', refs)
    assert status == verdict.EXIT_OK and 'FAIL' not in out
    tight = _changed(tmp_path, refs, 'value: 111.132', 'value: 166.6')
    status, out, _ = _run(capsys, H200 / 'reports' / 'healthy01.json',
                          '--references', tight)
    assert status == verdict.EXIT_FAILED, out
    fail = next(line for line in out.splitlines()
                if line.startswith('  FAIL'))
    assert 'avg_busbw' in fail and 'ref 166.6' in fail
    # ReFrame passed the case, by the report's bound: the references fail it
    assert '6 test cases (5 passed, 1 failed, 0 skipped)' in out
    bound = next(line for line in out.splitlines()
                 if line.startswith('  BOUND') and 'avg_busbw' in line)
    assert 'report bound >= 97.8628 GB/s (ref 111.132, -11.9%)' in bound
    assert f'references >= 146.708 GB/s (ref 166.6, -11.9%) ({tight} ' \
        f'entries[' in bound and bound.endswith('the references judged it')
    data = json.loads(_run(capsys, H200 / 'reports' / 'healthy01.json',
                           '--references', tight, '--format', 'json')[1])
    cross, = data['partitions'][0]['crosschecks']
    assert cross['judged_by'] == 'references'
    assert cross['metric'] == 'avg_busbw' and cross['line'] == bound[8:]


def test_a_bound_in_no_reference_judges_nothing(tmp_path, capsys):
    """A report of a system without references, whose bounds all pass:
    never PASSED; each figure is named, unjudged, and the verdict says
    which bound was not used and why."""
    report = json.loads((H200 / 'reports' / 'healthy01.json').read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            tc['system'] = 'elsewhere'
            # a GPU model no datasheet has (hpcval.datasheets)
            if (tc.get('hpcval_provenance') or {}).get('gpu'):
                tc['hpcval_provenance']['gpu'] = 'NVIDIA X0 x2'
            tc['perfvalues'] = {k.replace('local:', 'elsewhere:', 1): v
                                for k, v in tc['perfvalues'].items()}
    path = tmp_path / 'elsewhere.json'
    path.write_text(json.dumps(report))
    status, out, _ = _run(capsys, path)
    assert status == verdict.EXIT_INCOMPLETE, out
    assert ' 0 judged' in out and 'bounds: the references (none)' in out
    assert ('references none (no entry for it) (no reference file for '
            'elsewhere): not judged (a bound in no reference file is not '
            'trusted)') in out
    assert _run(capsys, path, '--strict')[0] == verdict.EXIT_FAILED
    # given the references it ran with (under its system's name), judged
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'elsewhere.yaml').write_text(
        (H200 / 'local.yaml').read_text().replace('system: local',
                                                  'system: elsewhere', 1))
    status, out, _ = _run(capsys, path, '--references', refs)
    assert "0 differ from the report's" in out and 'BOUND' not in out


def test_an_explicitly_absent_reference_is_diagnostic(tmp_path, capsys):
    """An entry that says no figure is judged wins over the report's
    bound: logged on purpose, named, not a pass of that figure."""
    refs = H200 / 'local.yaml'
    text = refs.read_text()
    assert 'entries:\n' in text
    path = tmp_path / 'local.yaml'
    path.write_text(text.rstrip('\n') + '\n'
                    '  - check: NcclTestsNodeCheck\n'
                    '    metrics:\n'
                    '      avg_busbw: {value: null, unit: GB/s, rule: '
                    'calibrated, source: measured elsewhere}\n')
    status, out, _ = _run(capsys, H200 / 'reports' / 'healthy01.json',
                          '--references', path)
    # logged on purpose: the rest judged, the GPU-pair figures by the
    # H200's datasheet (hpcval.datasheets)
    assert status == verdict.EXIT_OK
    assert 'avg_busbw: report bound >= 97.8628 GB/s (ref 111.132, -11.9%); ' \
        'references none (explicitly absent)' in out
    data = json.loads(_run(capsys, H200 / 'reports' / 'healthy01.json',
                           '--references', path, '--format', 'json')[1])
    part = data['partitions'][0]
    assert part['diagnostic'] == 2 + 2 and part['judged_passed'] == 44 - 2
    assert {c['judged_by'] for c in part['crosschecks']} == {'none'}


@pytest.mark.parametrize('content, named', [
    ('system: local\nentries: [\n', 'local.yaml'),
    ('system: other\ndescription: x\nentries: []\n', 'system'),
])
def test_unusable_references_exit_3_naming_the_file(tmp_path, capsys,
                                                    content, named):
    path = tmp_path / 'local.yaml'
    path.write_text(content)
    status, out, err = _run(capsys, H200 / 'reports' / 'healthy01.json',
                            '--references', path)
    assert status == verdict.EXIT_INPUT == 3 and out == ''
    assert str(path) in err and named in err
    assert 'Traceback' not in err and len(err.splitlines()) == 1
    status, _, err = _run(capsys, H200 / 'reports' / 'healthy01.json',
                          '--references', tmp_path / 'none.yaml')
    assert status == verdict.EXIT_INPUT and 'none.yaml' in err


def test_a_fifo_given_as_references_is_not_read(tmp_path, capsys):
    """A FIFO would block the verdict for ever; it is named and refused,
    given itself or as a file of a given folder."""
    import os
    fifo = tmp_path / 'local.yaml'
    os.mkfifo(fifo)
    for given in (fifo, tmp_path):
        status, out, err = _run(capsys, H200 / 'reports' /
                                'healthy01.json', '--references', given)
        assert status == verdict.EXIT_INPUT and out == ''
        assert f'{fifo}: not a reference file or folder' in err


def test_lineage_is_what_the_run_recorded():
    import types
    case = types.SimpleNamespace(check='OsuCudaCheck', extras={
        'lineage': ['OsuCudaCheck', 'OsuBenchmark']})
    assert verdict_refs.lineage(case) == ('OsuCudaCheck', 'OsuBenchmark')
    # a report without the record, or with another shape: the class alone
    for extras in ({}, {'lineage': 'OsuBenchmark'}, {'lineage': [1]}):
        case.extras = extras
        assert verdict_refs.lineage(case) == ('OsuCudaCheck',)


def test_a_site_others_can_write_judges_nothing(tmp_path, capsys,
                                                monkeypatch):
    """The site layer is trusted as code is (docs/security.md): a site
    references/ writable by others is refused in one line, exit 3."""
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    (refs / 'local.yaml').write_text((H200 / 'local.yaml').read_text())
    refs.chmod(0o777)
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    status, out, err = _run(capsys, H200 / 'reports' / 'healthy01.json')
    assert status == verdict.EXIT_INPUT and out == ''
    assert f'{refs} is writable by group or others (mode 0777)' in err
    assert len(err.splitlines()) == 1
    refs.chmod(0o755)
    status, out, _ = _run(capsys, H200 / 'reports' / 'healthy01.json')
    assert status == verdict.EXIT_OK
    assert f"bounds: the references ({refs / 'local.yaml'}; no false-alarm " \
        f"rate stated), datasheet (6 figures: H200 SXM NVLink pair >= PCIe " \
        f"Gen5 x16); 0 differ" in out
