"""Node inventory and GPU health (hpcval.health), on the real outputs of
the lent H100 node (tests/fixtures/captured/h100_health/README.md), each
mutated one defect at a time: every defect is named (node, GPU, what) and
fails the verdict; the healthy captures pass it."""
import json
import shutil
from pathlib import Path

import pytest

from hpcval import cli, records, references, verdict
from hpcval.health import judge, kernel_log, nvidia, probe
from hpcval.references import ReferenceFileError, load
from rfmrun import host_free_path

FIX = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
SMI = FIX / 'nvidia-smi'
H100 = {'partition': 'default', 'gpus': 1, 'vendor': 'nvidia',
        'model': 'H100 80GB HBM3', 'memory_gib': 80,
        'pcie': {'gen': 5, 'width': 16}}
DRIVER_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate "
                 "with the NVIDIA driver. Make sure that the latest NVIDIA "
                 "driver is installed and running.")
# NVIDIA, "Xid Errors" (https://docs.nvidia.com/deploy/xid-errors/): the
# kernel's line is "NVRM: Xid (PCI:<bus>): <code>, ..."; 79 is "GPU has
# fallen off the bus"
XID_79 = ('[  812.113940] NVRM: Xid (PCI:0000:00:06): 79, pid=5504, '
          'name=cuda-stream, GPU has fallen off the bus.')


def _text(name):
    return (SMI / name).read_text()


# -- the parsers, on the captures ---------------------------------------

def test_query_of_a_healthy_h100():
    (gpu,) = nvidia.gpus(_text('query_idle.csv'))
    assert gpu['model'] == 'NVIDIA H100 80GB HBM3'
    assert gpu['uuid'] == 'GPU-5cec1e9f-080f-51a8-14e6-8ec0aa0c921e'
    assert gpu['serial'] == '1752624014320'        # text, not a number
    assert gpu['bus_id'] == '00000000:00:06.0'
    assert (gpu['pcie_gen'], gpu['pcie_width']) == (5, 16)
    assert (gpu['pcie_gen_max'], gpu['pcie_width_max']) == (5, 16)
    assert gpu['memory_total_mib'] == 81559
    assert gpu['power_limit_w'] == 700.0
    assert gpu['throttle'] == []                    # idle is not a slow-down
    assert gpu['throttle_us']['hw_thermal_slowdown'] == 0
    assert gpu['ecc_uncorrected'] == 0
    assert gpu['remap_pending'] is False and gpu['remap_failure'] is False
    assert gpu['retired_pending'] is None           # [N/A] on HBM3


def test_sampler_output_without_units_reads_alike():
    (a,) = nvidia.gpus(_text('query_idle.csv'))
    samples = nvidia.gpus(_text('samples_loaded.csv'))     # csv,nounits
    assert len(samples) == 8
    assert samples[0]['memory_total_mib'] == a['memory_total_mib'] == 81559
    assert samples[-1]['util_pct'] == 100


def test_output_without_its_header_is_refused():
    # columns are read by name: the probe always asks with the header
    with pytest.raises(nvidia.ToolError, match='^0, NVIDIA H100'):
        nvidia.gpus(_text('query_idle_nounits.csv'))


def test_processes_on_the_gpu():
    assert nvidia.apps(_text('apps_idle.csv')) == []
    assert nvidia.apps(_text('apps_loaded.csv')) == [
        {'uuid': 'GPU-5cec1e9f-080f-51a8-14e6-8ec0aa0c921e', 'pid': 854,
         'name': 'python3', 'memory_mib': 8710}]


@pytest.mark.parametrize('text', [DRIVER_FAILED + '\n\n',
                                  'Field "bogus.field" is not a valid field '
                                  'to query.\n\n'])
def test_a_failing_tool_is_its_own_message(text):
    with pytest.raises(nvidia.ToolError, match=text.split('.')[0]):
        nvidia.gpus(text)


def test_a_cut_short_sampler_line_is_skipped():
    text = _text('samples_loaded.csv')
    assert len(nvidia.gpus(text[:-40], lenient=True)) == 7
    with pytest.raises(nvidia.ToolError, match='a row of'):
        nvidia.gpus(text[:-40])


def test_kernel_log_lines():
    events = kernel_log.events(
        _text('dmesg_tail.txt') + XID_79 + '\n'
        '[  813.000001] pcieport 0000:00:01.1: AER: Uncorrected (Fatal) '
        'error received: 0000:01:00.0\n'
        '[  813.000002] pcieport 0000:00:01.1: AER: Corrected error '
        'received: 0000:01:00.0\n')
    # the healthy node's own log has no GPU or PCIe error in it
    assert [(e['kind'], e['code'], e['fatal']) for e in events] == [
        ('xid', 79, True), ('aer', 'Fatal', True),
        ('aer', 'Corrected', False)]
    assert kernel_log.same_device('00000000:00:06.0', events[0]['bus_id'])


# -- the probe's record and its judgement ---------------------------------

def _stage(tmp_path, src='healthy', **edits):
    """A copy of a real stage's probe files, ``edits`` {file: fn(text)}."""
    dst = tmp_path / src
    shutil.copytree(FIX / 'stage' / src, dst)
    for name, fn in edits.items():
        path = dst / f'hpcval_health_{name}'
        path.write_text(fn(path.read_text() if path.exists() else ''))
    return probe.read(str(dst))


def _field(name, new, files=('before.txt', 'after.txt')):
    """Edits setting nvidia-smi field ``name`` to ``new`` in every row."""
    def edit(text):
        lines = text.splitlines()
        cols = [c.strip() for c in lines[0].split(',')]
        at = [i for i, c in enumerate(cols)
              if c.split(' [')[0] == name][0]
        rows = []
        for line in lines[1:]:
            cells = line.split(', ')
            cells[at] = new
            rows.append(', '.join(cells))
        return '\n'.join([lines[0], *rows]) + '\n'
    return {f.replace('.', '_', 0): edit for f in files}


def _edits(**kw):
    return {k.replace('__', '.'): v for k, v in kw.items()}


def test_healthy_record_fails_nothing(tmp_path):
    rec = _stage(tmp_path)
    assert rec.node == 'vm' and rec.tool == 'nvidia-smi'
    assert rec.samples['0'].n >= 5
    assert judge.failures(rec, H100) == []
    assert judge.cause(rec, 'GPU 0') == ''


def test_the_loaded_run_names_the_other_process(tmp_path):
    rec = _stage(tmp_path, 'gpu0_loaded_transferbench')
    assert judge.failures(rec, H100) == []
    assert judge.cause(rec, 'GPU 0') == (
        'another process, python3 (pid 5504), held 8710 MiB on GPU 0 at '
        '100% utilization before the benchmark started')


def _eight_gpus(text):
    head, row = text.splitlines()[:2]
    # each its own bus id and UUID: a GPU listed twice is no record
    rows = [row.replace('00000000:00:06.0', f'00000000:00:{6 + i:02X}.0')
            .replace('6645ff051a93', f'6645ff051a9{i}')
            .replace('0, NVIDIA', f'{i}, NVIDIA', 1) for i in range(8)]
    return '\n'.join([head, *rows]) + '\n'


def _without_gpu(n):
    def edit(text):
        lines = _eight_gpus(text).splitlines()
        return '\n'.join(l for l in lines if not l.startswith(f'{n}, ')) \
            + '\n'
    return edit


def _sampled(mask):
    """The last half of the samples (4 of 8) with ``mask`` active at 91 C."""
    def edit(text):
        lines = text.splitlines()
        cols = [c.strip().split(' [')[0] for c in lines[0].split(',')]
        reason = cols.index('clocks_event_reasons.active')
        temp = cols.index('temperature.gpu')
        rows = lines[1:]
        for i in range(len(rows) // 2, len(rows)):
            cells = rows[i].split(', ')
            cells[reason], cells[temp] = mask, '91'
            rows[i] = ', '.join(cells)
        return '\n'.join([lines[0], *rows]) + '\n'
    return edit


DEFECTS = {
    'missing GPU': (
        {'before.txt': _without_gpu(3), 'after.txt': _without_gpu(3)},
        dict(H100, gpus=8), ('', '7 of 8 GPUs (expected 8 x H100 80GB '
                                 'HBM3)')),
    'narrow link': (
        {**{k: v for k, v in _field('pcie.link.gen.current', '4').items()},
         'samples.txt': lambda t: t.replace(', 5, 16, ', ', 4, 8, ')},
        H100, None),
    'thermal throttle': (
        {'samples.txt': _sampled('0x0000000000000040')}, H100,
        ('GPU 0', 'HW thermal slowdown active 50% of the run (seen 4 s to '
                  '7 s after its first sample), 91 C')),
    'power brake': (
        {'samples.txt': _sampled('0x0000000000000080')}, H100,
        ('GPU 0', 'HW power brake active 50% of the run (seen 4 s to 7 s '
                  'after its first sample), 91 C')),
    'uncorrectable ECC': (
        _field('ecc.errors.uncorrected.volatile.total', '2'), H100,
        ('GPU 0', '2 uncorrectable ECC error(s) since the driver loaded')),
    'pending row remap': (
        _field('remapped_rows.pending', 'Yes', ('after.txt',)), H100,
        ('GPU 0', 'row remapping pending (the GPU needs a reset)')),
    'Xid': (
        {'kmsg.txt': lambda t: t + XID_79 + '\n'}, H100,
        ('GPU 0', f'Xid 79 (GPU has fallen off the bus) in the kernel log: '
                  f'{XID_79}')),
    'driver failed': (
        {'before.txt': lambda t: DRIVER_FAILED + '\n\n',
         'before.txt.rc': lambda t: '9\n',
         'after.txt': lambda t: DRIVER_FAILED + '\n\n',
         'after.txt.rc': lambda t: '9\n'},
        H100, ('', f'nvidia-smi failed (exit 9): {DRIVER_FAILED}')),
}


def _narrow(text):
    lines = text.splitlines()
    return '\n'.join([lines[0], *(l.replace(', 5, 5, 16, 16,', ', 4, 5, 8, '
                                            '16,') for l in lines[1:])]) \
        + '\n'


DEFECTS['narrow link'] = (
    {'before.txt': _narrow, 'after.txt': _narrow,
     'samples.txt': lambda t: t.replace(', 5, 16, ', ', 4, 8, ')},
    H100, ('GPU 0', 'PCIe Gen4 x8, expected Gen5 x16'))


@pytest.mark.parametrize('defect', sorted(DEFECTS))
def test_each_defect_is_named(tmp_path, defect):
    edits, expected, line = DEFECTS[defect]
    rec = _stage(tmp_path, **edits)
    assert line in judge.failures(rec, expected)


def test_narrow_link_without_a_pinned_link(tmp_path):
    edits, _, _ = DEFECTS['narrow link']
    rec = _stage(tmp_path, **edits)
    unpinned = {k: v for k, v in H100.items() if k != 'pcie'}
    assert ('GPU 0', 'PCIe x8, the link can train x16') in \
        judge.failures(rec, unpinned)


def test_power_cap_is_a_cause_not_a_failure(tmp_path):
    rec = _stage(tmp_path, **{'samples.txt': _sampled('0x0000000000000004')})
    assert judge.failures(rec, H100) == []
    assert judge.cause(rec, 'GPU 0') == (
        'during the run GPU 0 was power-capped 50% of the time, 91 C')


def test_without_inventory_a_failing_tool_still_fails(tmp_path):
    edits, _, line = DEFECTS['driver failed']
    assert line in judge.failures(_stage(tmp_path, **edits), None)


# -- through hpcval verdict ------------------------------------------------

@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site folder holding the node's calibrated references/local.yaml
    with its inventory (as the device run wrote it)."""
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    shutil.copy(FIX / 'reports' / 'local.yaml', refs / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    return refs


def _report_with(tmp_path, record):
    report = json.loads((FIX / 'reports' / 'healthy.json').read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            if tc.get('hpcval_health'):
                tc['hpcval_health'] = records.builtins(record) \
                    if isinstance(record, records.Health) else record
                # the H100 run's per-GPU figures name its one GPU: beside
                # a record of more GPUs the others would be unmeasured
                # (hpcval.verdict names them)
                tc['hpcval_components'] = {}
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report))
    return str(path)


def _verdict(capsys, *args):
    status = cli.main(['verdict', *args])
    return status, capsys.readouterr().out


def test_healthy_quick_suite_passes(site, capsys):
    status, out = _verdict(capsys, '--allow-unjudged',
                           str(FIX / 'reports' / 'healthy.json'))
    assert status == 0, out
    assert 'FAIL' not in out


def test_loaded_gpu_failure_names_the_process(site, capsys):
    status, out = _verdict(capsys, str(FIX / 'reports' / 'gpu0_loaded.json'))
    assert status == 1
    assert ('FAIL node vm GPU 0: BabelStreamCudaCheck %build.model=cuda: '
            'copy@gpu0 = 1.08203e+06 MB/s, -60.5% vs ref 2.73586e+06, '
            'bound >= 2.59907e+06 MB/s (ref '
            '2.73586e+06, -5.0%): another process, python3 (pid 5504), held '
            '8710 MiB on GPU 0 at 100% utilization before the benchmark '
            'started') in out


VERDICT_LINES = {
    'missing GPU': None,
    'narrow link': 'FAIL node vm GPU 0: PCIe Gen4 x8, expected Gen5 x16',
    'thermal throttle': 'FAIL node vm GPU 0: HW thermal slowdown active '
                        '50% of the run (seen 4 s to 7 s after its first '
                        'sample), 91 C',
    'power brake': 'FAIL node vm GPU 0: HW power brake active 50% of the '
                   'run (seen 4 s to 7 s after its first sample), 91 C',
    'uncorrectable ECC': 'FAIL node vm GPU 0: 2 uncorrectable ECC error(s) '
                         'since the driver loaded',
    'pending row remap': 'FAIL node vm GPU 0: row remapping pending (the '
                         'GPU needs a reset)',
    'Xid': f'FAIL node vm GPU 0: Xid 79 (GPU has fallen off the bus) in the '
           f'kernel log: {XID_79}',
    'driver failed': f'FAIL node vm: nvidia-smi failed (exit 9): '
                     f'{DRIVER_FAILED}',
}


@pytest.mark.parametrize('defect', sorted(DEFECTS))
@pytest.mark.parametrize('strict', [False, True])
def test_each_defect_fails_the_verdict(tmp_path, site, capsys, defect,
                                       strict):
    edits, _, _ = DEFECTS[defect]
    if defect == 'missing GPU':
        # the node's inventory says 8: one is missing
        text = (site / 'local.yaml').read_text().replace('gpus: 1',
                                                         'gpus: 8')
        (site / 'local.yaml').write_text(text)
    rec = _stage(tmp_path, **edits)
    args = ['--strict'] if strict else ['--allow-unjudged']
    status, out = _verdict(capsys, *args, _report_with(tmp_path, rec))
    assert status == 1, out
    line = VERDICT_LINES[defect] or \
        'FAIL node vm: 7 of 8 GPUs (expected 8 x H100 80GB HBM3)'
    assert out.count(line) == 1, out     # once per node, not per test case


@pytest.mark.parametrize('record, why', [
    ({'node': 'vm', 'tool': 'nvidia-smi', 'before': ['not', 'a', 'dict']},
     'Expected `object`, got `array` - at `$.before`'),
    ({'node': 'vm', 'tool': 'nvidia-smi', 'before': {'rc': 0, 'gpus': [1]}},
     'Expected `object`, got `int` - at `$.before.gpus[0]`; value 1'),
    ({'node': 'vm', 'tool': 'nvidia-smi',
      'samples': {'0': {'n': 1, 'throttle': 'x'}}},
     'Expected `object`, got `str` - at `$.samples[...].throttle`'),
    ({'node': 'vm'}, 'Object missing required field `tool`'),
    ({'node': 'vm', 'tool': 'nvidia-smi', 'colour': 'green'},
     'Object contains unknown field `colour`'),
    ({'node': 'vm', 'tool': 'nvidia-smi', 'before': {'gpus': []}},
     'Object missing required field `rc` - at `$.before`'),
])
def test_a_malformed_record_is_unusable_input(tmp_path, site, capsys,
                                              record, why):
    """A health record of another shape (missing, unknown or wrongly
    typed field): one line naming the report and the test case, exit 3,
    and its node never healthy."""
    path = _report_with(tmp_path, record)
    status, out = _verdict(capsys, '--allow-unjudged', path)
    assert status == verdict.EXIT_INPUT, out
    assert f'{path}: runs[0].testcases[9] (BabelStreamCudaCheck ' \
        f'%build.model=cuda): unreadable health record ({why})' in out
    assert 'HEALTHY' not in out


# -- the inventory in the reference files ----------------------------------

def test_the_six_systems_expect_their_gpus():
    inv = references.ReferenceSet.layered(
        [str(Path(__file__).parents[1] / 'references')]).inventory
    got = {s: [(e['partition'], e['gpus'], e.get('model')) for e in v
               if e['gpus']] for s, v in inv.items() if v}
    assert got == {
        'frontier': [('batch', 8, 'MI250X')],
        'summit': [('batch', 6, 'V100')],
        'perlmutter': [('gpu', 4, 'A100-SXM4')],
        'kestrel': [('gpu-h100', 4, 'H100')],
        'mi300x': [('default', 8, 'MI300X')],
        'gaudi2': [('default', 8, 'HL-225')]}
    assert all('https://' in e['source'] for v in inv.values() for e in v)


@pytest.mark.parametrize('block, message', [
    ('inventory:\n  - gpus: 8\n    vendor: nvidia\n    model: H100\n'
     '    source: x\n    gpu: 1\n', r'inventory\[0\]: unknown key\(s\) gpu'),
    ('inventory:\n  - gpus: -1\n    source: x\n',
     r'inventory\[0\].gpus: must be an integer >= 0'),
    ('inventory:\n  - gpus: 4\n    vendor: intel\n    model: X\n'
     '    source: x\n', r'inventory\[0\].vendor: must be one of'),
    ('inventory:\n  - gpus: 4\n    vendor: nvidia\n    model: X\n'
     '    pcie: {gen: 5}\n    source: x\n', r'inventory\[0\].pcie'),
])
def test_a_broken_inventory_names_file_and_key(tmp_path, block, message):
    path = tmp_path / 'local.yaml'
    path.write_text('system: local\ndescription: d\nentries:\n'
                    '  - check: X\n    absent: none\n' + block)
    with pytest.raises(ReferenceFileError, match=f'local.yaml: {message}'):
        load(str(path))


# -- a real ReFrame run on `local` whose GPU driver fails -------------------

FAKE_SMI = f"""#!/bin/sh
# nvidia-smi of a node whose driver did not load: its real message and exit
echo "{DRIVER_FAILED}"
echo
exit 9
"""


def test_local_run_with_a_failing_driver_never_passes(tmp_path, capsys):
    from rfmrun import reframe
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(FAKE_SMI)
    (bindir / 'nvidia-smi').chmod(0o755)
    import os
    proc, report = reframe(
        '-n', 'Mpi4pyPingPongCheck%placement=on_node', '-r', '--system',
        'local', tmp_path=tmp_path, checks=('checks/mpi4py_pingpong.py',),
        env={'PATH': f'{bindir}{os.pathsep}{os.environ["PATH"]}'})
    assert report is not None, proc.stdout + proc.stderr
    for args in ([], ['--strict'], ['--allow-unjudged']):
        status, out = _verdict(capsys, *args, str(tmp_path / 'report.json'))
        assert status == 1, out
        assert (f'FAIL node {report["session_info"]["hostname"]}: '
                f'nvidia-smi failed (exit 9): {DRIVER_FAILED}') in out


# -- the probe script itself, with an nvidia-smi that replays the captures --

REPLAY_SMI = """#!/bin/sh
# replays the H100's captured outputs (tests/fixtures/captured/h100_health)
case "$*" in
*--query-compute-apps*) cat '{smi}/apps_loaded.csv' ;;
*-lms*) while :; do cat '{smi}/samples_loaded.csv'; sleep 0.2; done ;;
*--query-gpu*) cat '{smi}/query_idle.csv' ;;
-q) cat '{smi}/q.txt' ;;
*) exit 2 ;;
esac
"""


def test_probe_script_before_sampler_after(tmp_path):
    import os
    import subprocess
    import time
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(REPLAY_SMI.format(smi=SMI))
    (bindir / 'nvidia-smi').chmod(0o755)
    stage = tmp_path / 'stage'
    stage.mkdir()
    probe.write(str(stage))
    env = dict(os.environ, PATH=host_free_path(
        f'{bindir}{os.pathsep}{os.environ["PATH"]}'))
    before, trap = probe.commands(sample=True)
    # the job script's lines, as ReFrame writes them
    script = f'{before}\n{trap}\nsleep 1\n'
    subprocess.run(['bash', '-c', script], cwd=stage, env=env, check=True,
                   timeout=60)
    pid = int((stage / 'hpcval_health_sampler.pid').read_text())
    time.sleep(0.3)
    try:        # gone, or a zombie left for an init that does not reap
        state = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]
    except OSError:
        state = 'gone'
    assert state in ('gone', 'Z'), f'the sampler outlived the job: {state}'
    rec = probe.read(str(stage))
    assert rec.tool == 'nvidia-smi'
    assert [g.uuid for g in rec.before.gpus] == \
        ['GPU-5cec1e9f-080f-51a8-14e6-8ec0aa0c921e']
    assert rec.before.apps[0].pid == 854
    assert rec.samples['0'].n >= 1
    assert judge.failures(rec, H100) == []
    assert 'python3 (pid 854)' in judge.cause(rec, 'GPU 0')


def test_local_counts_gpus_on_the_bus_when_nvidia_smi_fails(tmp_path,
                                                           monkeypatch):
    import os
    from systems import local
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(FAKE_SMI)
    (bindir / 'nvidia-smi').chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}{os.pathsep}{os.environ["PATH"]}')
    monkeypatch.setattr(local, '_pci_display_devices',
                        lambda vendor: 4 if vendor == '0x10de' else 0)
    gpus = local.nvidia_gpus()
    assert gpus == [('NVIDIA GPU (nvidia-smi failed)', '')] * 4
    _, devices, _, _ = local._gpu_partition_extras()
    assert devices == [{'type': 'gpu', 'num_devices': 4}]


def test_an_earlier_exit_trap_still_runs():
    """elbencho removes its scratch folder from an EXIT trap: the probe's
    trap replaces it with one that runs both."""
    import subprocess
    prerun = ['ELB_DIR=$(mktemp -d)', 'trap \'rm -rf "$ELB_DIR"\' EXIT']
    lines = probe.commands(False, prerun)
    assert lines[1] == ("trap 'bash ./hpcval_health_probe.sh after; "
                        "rm -rf \"$ELB_DIR\"' EXIT")
    script = '\n'.join([*prerun, lines[1].replace(
        'bash ./hpcval_health_probe.sh after', 'echo probed'),
        'echo "$ELB_DIR"'])
    out = subprocess.run(['bash', '-c', script], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[1] == 'probed'
    assert not Path(out[0]).exists()
