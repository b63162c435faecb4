"""The quick suite on a lent one-GPU H100 (tests/fixtures/reports/h100_quick):
a healthy one-GPU node passes, and runs built from source in the same
session measure the CPU and MPI figures of prebuilt runs."""
import json
import pathlib
import statistics

import pytest

from hpcval import cli

FIX = pathlib.Path(__file__).resolve().parent / 'fixtures' / 'reports' / \
    'h100_quick'
CPU_MPI = ('BabelStreamCpuCheck', 'Mpi4pyPingPongCheck')


def _figures(name):
    report = json.loads((FIX / f'{name}.json').read_text())
    out = {}
    for run in report['runs']:
        for tc in run['testcases']:
            check = tc['display_name'].split()[0]
            for key, (value, *_, unit, _result) in \
                    (tc['perfvalues'] or {}).items():
                metric = key.rsplit(':', 1)[-1]
                if check in CPU_MPI and not metric.endswith('_std'):
                    out[(check, metric)] = (value, unit)
    return out


@pytest.mark.parametrize('name', ['calibrated_prebuilt', 'calibrated_source'])
def test_a_healthy_one_gpu_node_passes(name, capsys, tmp_path, monkeypatch):
    # judged by the references those runs had: the calibrated site file
    # layered over the built-in references/local.yaml (README.md)
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    (refs / 'local.yaml').write_text((FIX / 'site_local.yaml').read_text())
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    status = cli.main(['verdict', str(FIX / f'{name}.json')])
    out = capsys.readouterr().out
    assert status == 0, out
    assert '23 judged (23 passed, 0 failed), 0 logged without a reference, ' \
        '12 diagnostic' in out
    assert '0 differ from the report\'s' in out


@pytest.mark.parametrize('name', ['source1', 'source2', 'calibrated_source'])
def test_from_source_is_within_the_prebuilt_spread(name):
    prebuilt = [_figures(f'prebuilt{i}') for i in range(1, 7)] + \
        [_figures('calibrated_prebuilt')]
    source = _figures(name)
    assert len(source) == 8
    for key, (value, unit) in source.items():
        values = [p[key][0] for p in prebuilt]
        mean, std = statistics.mean(values), statistics.stdev(values)
        worse = (value - mean) if unit == 'us' else (mean - value)
        assert worse <= 3 * std, (key, value, mean, std)
