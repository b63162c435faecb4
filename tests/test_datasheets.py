"""Datasheet bounds (hpcval.datasheets): a GPU figure no reference file
judges is judged against its model's published peak, per GPU, on the
committed real captures, each test changing one figure of one report."""
import glob
import json
import pathlib
import re

import pytest

from hpcval import datasheets, references, verdict, verdict_refs
from hpcval.publish import results

ROOT = pathlib.Path(__file__).resolve().parent.parent
CAPTURED = ROOT / 'tests' / 'fixtures' / 'captured'
QUICK = ROOT / 'tests' / 'fixtures' / 'reports' / 'h100_quick'
HEALTHY = CAPTURED / 'h100_health' / 'reports' / 'healthy.json'
CALIB = CAPTURED / 'h100_calib' / 'reports'
PREBUILT = QUICK / 'prebuilt1.json'
H200X2 = CAPTURED / 'h200x2' / 'validation' / 'reports' / 'healthy01.json'
H100X4 = CAPTURED / 'h100x4' / 'reports' / 'healthy01.json'
JUDGED = ('BabelStreamCudaCheck', 'TransferBenchCudaCheck')
# the captures of a fault injected on purpose (a loaded GPU, a link
# turned off): not healthy, whatever their figures
FAULTS = ('loaded', 'nvlink_inactive', 'p2p_disabled')


def _verdict(path, refs=()):
    loaded = results.load([str(path)],
                          bounds=references.ReferenceSet.given(refs))
    return verdict.judge(loaded)


def _mutated(tmp_path, source, check, metric, value):
    """``source`` with ``metric`` of the test case of ``check`` set to
    ``value``: the one change of a test."""
    report = json.loads(source.read_text())
    changed = 0
    for run in report['runs']:
        for tc in run['testcases']:
            if tc['display_name'].split()[0] != check:
                continue
            for key, figure in (tc.get('perfvalues') or {}).items():
                if key.rsplit(':', 1)[-1] == metric:
                    figure[0] = value
                    changed += 1
    assert changed, f'{metric} of {check} not in {source}'
    path = tmp_path / source.name
    path.write_text(json.dumps(report))
    return path


def test_the_file_loads_and_cites_its_sources():
    sheets = datasheets.load()
    names = {m.name for m in sheets.models}
    # every GPU model hpcval's systems name
    for name in ('H100 SXM5', 'H100 PCIe', 'H200 SXM', 'A100 SXM4 40GB',
                 'A100 SXM4 80GB', 'V100 16/32GB', 'MI250X GCD', 'MI300X',
                 'Gaudi2 HL-225'):
        assert name in names
    for model in sheets.models:
        for peak in model.peaks.values():
            assert 0 < peak.fraction <= 1
            for key in peak.sources:
                assert 'http' in sheets.sources[key] or key == 'pcie'


@pytest.mark.parametrize('gen,rate,peak', [(3, 8, 15.75), (4, 16, 31.5),
                                           (5, 32, 63.0)])
def test_host_link_peaks_are_the_pcie_rate(gen, rate, peak):
    # GT/s x 16 lanes x 128/130 encoding / 8 bits, per direction
    assert rate * 16 * 128 / 130 / 8 == pytest.approx(peak, rel=0.005)
    links = [m.peaks['host_link'].peak for m in datasheets.load().models
             if f'Gen{gen} ' in getattr(m.peaks.get('host_link'), 'what', '')]
    # a generation no host link names any more is a test that checks none
    assert links and set(links) == {peak}


@pytest.mark.parametrize('name,tool', [
    ('H100 SXM5', 'NVIDIA H100 80GB HBM3'), ('H200 SXM', 'NVIDIA H200'),
    ('A100 SXM4 40GB', 'NVIDIA A100-SXM4-40GB'),
    ('V100 16/32GB', 'Tesla V100-SXM2-16GB'),
    ('MI300X', 'AMD Instinct MI300X'), ('Gaudi2 HL-225', 'HL-225'),
    (None, 'NVIDIA H200 NVL'), (None, 'NVIDIA B200'),
    (None, 'Arcturus GL-XL [Instinct MI100]')])
def test_models_by_the_name_their_tool_prints(name, tool):
    model = datasheets.load().model(tool)
    assert (model.name if model else None) == name


@pytest.mark.parametrize('path', [HEALTHY, PREBUILT])
def test_an_uncalibrated_h100_has_every_gpu_figure_judged(path):
    v = _verdict(path)
    g, = v.groups
    assert not [u for u in g.unjudged if u[0].split()[0] in JUDGED]
    judged = {c.metric for c in g.datasheet}
    assert {'copy', 'copy@gpu0', 'triad@gpu0', 'dot',
            'uni_gpu_to_cpu'} <= judged
    assert all(c.judged_by == verdict_refs.DATASHEET for c in g.datasheet)
    assert not g.failures
    text = verdict.render_text(v)
    assert 'datasheet (11 figures: H100 SXM5 HBM3, H100 SXM5 PCIe Gen5 ' \
        'x16)' in text
    # what is left unjudged is nccl-tests' (no datasheet figure)
    assert {u[0].split()[0] for u in g.unjudged} <= {'NcclTestsNodeCheck'}


def test_a_gpu_at_70_percent_of_its_datasheet_fails_on_day_one(tmp_path):
    # every BabelStream figure of GPU 0 at 0.70 x the H100 SXM5's 3.35
    # TB/s: under the 0.75 bound, each named on GPU 0
    path = CALIB / 'healthy01.json'
    for metric in ('copy', 'mul', 'add', 'triad', 'dot'):
        path = _mutated(tmp_path, path, 'BabelStreamCudaCheck',
                        f'{metric}@gpu0', 0.70 * 3.35e6)
    v = _verdict(path)
    assert v.status == verdict.EXIT_FAILED
    failures = v.failures()
    assert [(f.component, f.metric) for f in failures] == [
        ('GPU 0', f'{m}@gpu0') for m in ('copy', 'mul', 'add', 'triad',
                                         'dot')]
    assert failures[0].line() == (
        'node vm GPU 0: BabelStreamCudaCheck %build.model=cuda: copy@gpu0 '
        '= 2.345e+06 MB/s, -30.0% vs ref 3.35e+06, bound >= 2.5125e+06 '
        'MB/s (datasheet: H100 SXM5 HBM3 3.35 TB/s x 0.75)')


@pytest.mark.parametrize('path', sorted(
    [*CALIB.glob('baseline*.json'), *CALIB.glob('healthy*.json'),
     *QUICK.glob('*.json')], key=str), ids=lambda p: p.name)
def test_a_healthy_h100_passes_on_day_one(path):
    # no calibration: the datasheet and references/local.yaml judge every
    # figure (nccl-tests' times by its day-one ceiling)
    if path.name == 'healthy11.json':
        # ReFrame failed its ping-pong at run time against that day's
        # calibrated bound: the run's own result, which the verdict keeps
        assert _verdict(path).status == verdict.EXIT_FAILED
        return
    v = _verdict(path)
    assert (v.status, [u for g in v.groups for u in g.unjudged]) == (0, [])


def test_each_gpu_is_judged_against_its_own_model(tmp_path):
    # GPU 1 of two H200s at 0.55 x 4.8 TB/s: GPU 1 named, GPU 0 passes
    path = _mutated(tmp_path, H200X2, 'BabelStreamCudaCheck', 'triad@gpu1',
                    0.55 * 4.8e6)
    failures = _verdict(path).failures()
    assert [(f.component, f.metric) for f in failures] == \
        [('GPU 1', 'triad@gpu1')]
    assert failures[0].bound == \
        '>= 2.88e+06 MB/s (datasheet: H200 SXM HBM3e 4.8 TB/s x 0.60)'


def test_a_host_link_at_half_its_generation_fails(tmp_path):
    # 25 GB/s GPU to host: under what a Gen5 x16 link carries on a healthy
    # node, its host disturbed included (0.47 of peak, h100_calib)
    path = _mutated(tmp_path, HEALTHY, 'TransferBenchCudaCheck',
                    'uni_gpu_to_cpu', 25.0)
    f, = _verdict(path).failures()
    assert f.metric == 'uni_gpu_to_cpu'
    assert f.bound == \
        '>= 25.2 GB/s (datasheet: H100 SXM5 PCIe Gen5 x16 63 GB/s x 0.40)'


def test_a_gpu_pair_off_nvlink_fails_naming_the_link(tmp_path):
    path = _mutated(tmp_path, H100X4, 'TransferBenchCudaCheck',
                    'uni_gpu01_to_gpu02', 40.0)
    f, = [f for f in _verdict(path).failures() if f.metric]
    assert (f.component, f.metric) == \
        ('link GPU 01 -> GPU 02 (uni)', 'uni_gpu01_to_gpu02')
    assert '(datasheet: H100 SXM5 NVLink pair >= PCIe Gen5 x16' in f.bound


def test_a_reference_file_wins_over_the_datasheet(tmp_path):
    # the calibrated local.yaml of the same node judges BabelStream itself
    calibrated = CAPTURED / 'h100_health' / 'reports' / 'local.yaml'
    path = _mutated(tmp_path, HEALTHY, 'BabelStreamCudaCheck', 'copy@gpu0',
                    0.69 * 3.35e6)
    g, = _verdict(path, [str(calibrated)]).groups
    assert not [c for c in g.datasheet if c.metric.startswith('copy')]
    f, = [f for f in g.failures if f.metric == 'copy@gpu0']
    assert 'datasheet' not in f.bound


def test_a_model_not_in_the_datasheets_stays_unjudged(tmp_path):
    report = json.loads(PREBUILT.read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            prov = tc.get('hpcval_provenance')
            if isinstance(prov, dict) and prov.get('gpu'):
                prov['gpu'] = 'NVIDIA B200 x1'
            tc.pop('hpcval_health', None)
    path = tmp_path / 'b200.json'
    path.write_text(json.dumps(report))
    v = _verdict(path)
    g, = v.groups
    assert not g.datasheet
    assert {u[0].split()[0] for u in g.unjudged} >= set(JUDGED)
    assert v.status == verdict.EXIT_INCOMPLETE


def _healthy_captures():
    files = [*glob.glob(str(CAPTURED / 'h100_health' / 'reports' / '*.json')),
             *glob.glob(str(QUICK / '*.json')),
             *glob.glob(str(CAPTURED / 'h200x2' / 'validation' / 'reports' /
                            '*.json')),
             *glob.glob(str(CAPTURED / 'h100x4' / 'reports' / '*.json')),
             str(CAPTURED / 'h200x4' / 'run' / 'warmup.json'),
             *glob.glob(str(CAPTURED / 'burnin' / 'h200' / '*.json'))]
    return sorted(f for f in files if not any(x in f for x in FAULTS))


def test_every_healthy_capture_passes_its_datasheet():
    # the table of docs/references.md: no healthy run we hold fails
    loaded = results.load(_healthy_captures(),
                          bounds=references.ReferenceSet.given())
    verdict_refs.with_datasheets(loaded)
    datasheet = [c for c, _ in loaded.rebanded.values()
                 if c is not None and c.judged_by == verdict_refs.DATASHEET]
    assert len(datasheet) > 900
    # gpu-burn's float rates of the burn-in captures among them
    assert sum('FP32' in c.peak for c in datasheet) >= 4
    judged = {id(c) for c in datasheet}
    failed = [(s.case.test, s.metric, s.value) for s in loaded.samples
              if id(loaded.rebanded.get(id(s), (None,))[0]) in judged
              and verdict.judgement.outcome(s) != verdict.judgement.PASS]
    assert not failed


def test_an_explicit_absence_wins_over_the_datasheet(tmp_path):
    # an entry that says the figure has no reference is the file's word
    refs = tmp_path / 'local.yaml'
    refs.write_text((ROOT / 'references' / 'local.yaml').read_text()
                    .rstrip('\n') + '\n'
                    '  - check: BabelStreamCudaCheck\n'
                    '    metrics:\n'
                    '      copy: {value: null, unit: MB/s, source: none}\n')
    g, = _verdict(PREBUILT, [str(refs)]).groups
    judged = {c.metric for c in g.datasheet}
    assert 'copy' not in judged and 'copy@gpu0' not in judged
    assert 'mul@gpu0' in judged


@pytest.mark.parametrize('change, named', [
    (('unit: TB/s, fraction: 0.75', 'unit: TB/s, fraction: 1.75'),
     'models[0].hbm.fraction: at most 1'),
    (('sources: [scaleway-h100]}', 'sources: [nowhere]}'),
     'models[0].hbm.sources'),
    (('    peak: hbm\n', '    peak: flops\n'), 'figures[0].peak'),
])
def test_a_malformed_datasheet_file_is_refused_naming_the_key(
        tmp_path, change, named):
    text = pathlib.Path(datasheets.default_path()).read_text()
    assert change[0] in text
    path = tmp_path / 'datasheets.yaml'
    path.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(datasheets.DatasheetError, match=re.escape(named)):
        datasheets.load(str(path))


def test_a_datasheet_file_that_does_not_load_is_exit_3(tmp_path, capsys,
                                                       monkeypatch):
    from hpcval import cli
    broken = tmp_path / 'datasheets.yaml'
    broken.write_text('models: [\n')
    monkeypatch.setattr(datasheets, 'default_path', lambda: str(broken))
    assert cli.main(['verdict', str(PREBUILT)]) == verdict.EXIT_INPUT
    out = capsys.readouterr().out
    assert f'{broken}: cannot read' in out and 'inputs left out' in out


BURNIN = CAPTURED / 'burnin' / 'h200'


def test_gpu_burn_float_is_judged_by_fp32_peak_and_double_is_not(tmp_path):
    # the real H200 run: 50,941 GFLOP/s = 0.76 of 66.9 TFLOP/s passes;
    # the same figure at 0.55 of peak fails naming GPU 0
    v = _verdict(BURNIN / 'check_float.json')
    assert v.status == 0 and 'H200 SXM FP32 vector' in verdict.render_text(v)
    slow = _mutated(tmp_path, BURNIN / 'check_float.json',
                    'GpuBurnCudaCheck', 'gflops@gpu0', 0.55 * 66.9e3)
    [failure] = _verdict(slow).failures()
    assert (failure.component, failure.metric) == ('GPU 0', 'gflops@gpu0')
    assert 'datasheet: H200 SXM FP32 vector 66.9 TFLOP/s x 0.60' in \
        failure.line()
    sheets = datasheets.load()
    lineage = ('GpuBurnCudaCheck', 'GpuBurn')
    assert sheets.peak_kind(lineage, 'gflops', (('precision', 'float'),)) \
        == 'fp32'
    assert sheets.peak_kind(lineage, 'gflops',
                            (('precision', 'double'),)) is None
