"""A host <-> device figure beside the ceiling of its GPU's link (the
hl_qual rule, width / 8 x GT/s), on the H100 node's real run: a link that
trained narrow is named as the cause of a low figure."""
import copy
import json
from pathlib import Path

import pytest

from hpcval import cli, records
from hpcval.health import judge, link, probe

FIX = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
NARROW = ("GPU 0's link trained at Gen4 x8 (ceiling 16.0 GB/s), below the "
          "Gen5 x16 it can train (64.0 GB/s)")


def _healthy_report():
    return json.loads((FIX / 'reports' / 'healthy.json').read_text())


def _transferbench_record(report):
    (tc,) = [tc for run in report['runs'] for tc in run['testcases']
             if tc['name'].startswith('TransferBenchCudaCheck')]
    return tc


def _narrowed(record):
    """The record with GPU 0's link trained at Gen4 x8 (the mutation)."""
    rec = copy.deepcopy(record)
    for phase in ('before', 'after'):
        for gpu in rec[phase]['gpus']:
            gpu['pcie_gen'], gpu['pcie_width'] = 4, 8
    for s in rec.get('samples', {}).values():
        s['pcie_gen_max'], s['pcie_width_min'] = 4, 8
    return rec


def _health(tc):
    return records.decode('health', tc['hpcval_health'])


@pytest.mark.parametrize('metric, n', [
    ('h2d_bandwidth', 1), ('host_gpu_bandwidth', 1), ('uni_gpu_to_cpu', 1),
    ('bidir_cpu_to_gpu', 2), ('host_to_hbm', 1), ('hbm_host_bidir', 2),
    ('pci_download', 1), ('pci_bidirectional', 2),
    ('copy', None), ('gpu_gpu_bandwidth', None), ('uni_gpu_to_gpu', None),
])
def test_host_device_figures(metric, n):
    assert link.directions(metric) == n


def test_the_hl_qual_rule():
    # the hl_qual manual's Gen3 x16 path: 16 GB/s
    assert link.ceiling(3, 16) == 16.0
    assert (link.ceiling(5, 16), link.ceiling(4, 8)) == (64.0, 16.0)


def test_a_full_link_puts_the_figure_beside_its_ceiling():
    tc = _transferbench_record(_healthy_report())
    value = tc['perfvalues']['local:default:uni_gpu_to_cpu'][0]
    assert value == 47.08
    assert link.context(_health(tc), '', 'uni_gpu_to_cpu', value,
                        'GB/s') == ("74% of the Gen5 x16 link's ceiling "
                                    "64.0 GB/s (width / 8 x GT/s)")
    assert link.context(_health(tc), '', 'copy', value, 'GB/s') == ''


def test_a_narrow_link_is_the_cause():
    rec = records.decode('health', _narrowed(
        _transferbench_record(_healthy_report())['hpcval_health']))
    assert link.context(rec, 'GPU 0', 'uni_gpu_to_cpu', 11.2, 'GB/s') == \
        NARROW
    assert judge.cause(rec, '', ('uni_gpu_to_cpu', 11.2, 'GB/s')) == NARROW
    # a figure above the trained link's ceiling: it was not trained so
    # all the run
    assert 'Gen4 x8 at some point of the run (ceiling 16.0' in \
        link.context(rec, '', 'uni_gpu_to_cpu', 47.08, 'GB/s')


def test_an_idle_link_trained_down_is_not_narrow():
    """The snapshots of an idle GPU show Gen1; the samples under load
    Gen5: the link is judged at the highest generation seen."""
    rec = records.builtins(probe.read(str(FIX / 'stage' / 'healthy')))
    for phase in ('before', 'after'):
        for gpu in rec[phase]['gpus']:
            gpu['pcie_gen'] = 1
    assert link.links(records.decode('health', rec)) == {0: (5, 16, 5, 16)}


def test_a_record_without_a_link_says_nothing():
    assert link.context(None, '', 'uni_gpu_to_cpu', 1.0, 'GB/s') == ''
    rec = records.decode('health', {'node': 'vm', 'tool': 'nvidia-smi',
                                    'before': {'rc': 0,
                                               'gpus': [{'index': 0}]}})
    assert link.context(rec, '', 'uni_gpu_to_cpu', 1.0, 'GB/s') == ''


# -- through hpcval verdict ------------------------------------------------

def _judged(report):
    """The report with the TransferBench figure judged as if a reference
    of 60 GB/s (bound >= 57) had been in place at run time, as the site's
    references hold it (``site``): the verdict judges by the references."""
    tc = _transferbench_record(report)
    tc['perfvalues']['local:default:uni_gpu_to_cpu'] = [
        47.08, 60.0, -0.05, None, 'GB/s', 'fail']
    return tc


# the reference _judged's report carries, as the site's file holds it
UNI_GPU_TO_CPU = '''
  - check: TransferBenchCudaCheck
    where: {preset: p2p}
    metrics:
      uni_gpu_to_cpu:
        value: 60.0
        lower: -0.05
        upper: null
        unit: GB/s
        rule: laptop-floor
        source: the bound tests/test_health_link.py gives its report
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    text = (FIX / 'reports' / 'local.yaml').read_text()
    assert '\ninventory:' in text      # entries come before it
    (refs / 'local.yaml').write_text(
        text.replace('\ninventory:', UNI_GPU_TO_CPU + 'inventory:', 1))
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    return refs


@pytest.mark.parametrize('narrow', [False, True])
def test_the_verdict_names_the_link(tmp_path, site, capsys, narrow):
    report = _healthy_report()
    tc = _judged(report)
    if narrow:
        tc['hpcval_health'] = _narrowed(tc['hpcval_health'])
        tc['perfvalues']['local:default:uni_gpu_to_cpu'][0] = 11.2
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report))
    status = cli.main(['verdict', '--allow-unjudged', str(path)])
    out = capsys.readouterr().out
    assert status == 1, out
    (line,) = [l for l in out.splitlines() if 'uni_gpu_to_cpu =' in l]
    if narrow:
        assert line.endswith(f': {NARROW}'), line
        assert 'FAIL node vm GPU 0: PCIe Gen4 x8, expected Gen5 x16' in out
    else:
        assert line.endswith(": 74% of the Gen5 x16 link's ceiling 64.0 "
                             "GB/s (width / 8 x GT/s)"), line
