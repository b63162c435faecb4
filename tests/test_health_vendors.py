"""AMD (amd-smi, rocm-smi) and Intel Gaudi (hl-smi) health records, from
real public outputs of those tools (tests/fixtures/health/*/SOURCE.md),
each mutated one defect at a time: every defect is named (node, GPU,
what) and fails the verdict; the healthy outputs pass it."""
import json
import shutil
from pathlib import Path

import pytest

from hpcval import cli
from hpcval.health import amd, habana, judge, probe
from test_health import _report_with  # the H100 report with a record

FIX = Path(__file__).parent / 'fixtures' / 'health'
H100 = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
STATIC = (FIX / 'amd' / 'amd-smi_static_mi210.json').read_text()
METRIC = (FIX / 'amd' / 'amd-smi_metric_power.json').read_text()
ROCM = (FIX / 'amd' / 'rocm-smi_showallinfo_mi210.json').read_text()
HLSMI = (FIX / 'habana' / 'hl-smi_2x_hl225.txt').read_text()
# the tools' messages without the amdgpu module, from their source
# (tests/fixtures/health/amd/SOURCE.md)
AMD_SMI_NO_DRIVER = 'ERROR: Driver not loaded (amdgpu not found in modules)'
ROCM_SMI_NO_DRIVER = ('ERROR: Driver not initialized (amdgpu not found in '
                      'modules)')
XID_AMD = ('[ 5821.319504] amdgpu 0000:4d:00.0: amdgpu: GPU reset begin!')

MI210 = {'partition': 'default', 'gpus': 1, 'vendor': 'amd',
         'model': 'MI210', 'memory_gib': 64, 'pcie': {'gen': 4, 'width': 16}}
HL225 = {'partition': 'default', 'gpus': 2, 'vendor': 'habana',
         'model': 'HL-225', 'memory_gib': 96}


# -- the parsers, on the real outputs ---------------------------------------

def test_amd_smi_static_and_metric_of_an_mi210():
    (gpu,) = amd.gpus(STATIC + METRIC)
    assert gpu['model'] == 'AMD Instinct MI210'
    assert gpu['memory_total_mib'] == 65520
    assert (gpu['pcie_gen_max'], gpu['pcie_width_max']) == (4, 16)
    assert gpu['vbios'] == 'Mi200 pcie'  # its only VBIOS field
    assert gpu['power_w'] == 10 and gpu['power_limit_w'] == 300
    assert gpu['throttle'] == []                # UNTHROTTLED
    assert 'bus_id' not in gpu                  # this amd-smi printed no bdf


def test_rocm_smi_of_an_mi210():
    (gpu,) = amd.gpus(ROCM, 'rocm-smi')
    assert gpu['bus_id'] == '0000:63:00.0'
    assert gpu['vbios'] == '113-D67301-063'
    assert gpu['serial'] == '00000000000000'    # text, not a number
    assert gpu['driver'] == '5.18.13'
    assert (gpu['temp_c'], gpu['temp_mem_c']) == (35.0, 46.0)
    # rocm-smi names the card by its VBIOS image, not "MI210"
    assert gpu['model'] == 'GENERIC RM IMAGE'


def test_rocm_smi_link_of_its_pcie_clock():
    """rocm-smi prints the link as a clock ("pcie clock level: 1
    (16.0GT/s, x16 619Mhz)", its text in ROCm/rocm_smi_lib issue #77); the
    JSON splits clocks into "... clock level:" and "... clock speed:" as
    the real fclk/mclk/sclk keys show: added here as a mutation."""
    card = json.loads(ROCM)
    card['card0']['pcie clock level:'] = '1'
    card['card0']['pcie clock speed:'] = '(8.0GT/s, x8 619Mhz)'
    (gpu,) = amd.gpus(json.dumps(card), 'rocm-smi')
    assert (gpu['pcie_gen'], gpu['pcie_width']) == (3, 8)


def test_hl_smi_table_of_two_hl225():
    gpus = habana.gpus(HLSMI)
    assert [(g['index'], g['model'], g['bus_id']) for g in gpus] == [
        (0, 'HL-225', '0000:4d:00.0'), (1, 'HL-225', '0000:b4:00.0')]
    assert gpus[0]['memory_total_mib'] == 98304
    assert (gpus[0]['temp_c'], gpus[0]['power_w'],
            gpus[0]['power_limit_w']) == (31, 95, 600)
    assert gpus[0]['ecc_uncorrected'] == 0
    assert gpus[0]['driver'] == '1.17.1-78932ae'
    assert gpus[0]['vbios'] == '51.5.0'         # the firmware of hl-smi's head
    assert habana.apps(HLSMI) == []             # rows of N/A: no process


def test_hl_smi_sampler_file_of_many_tables():
    assert len(habana.gpus(HLSMI * 3, lenient=True)) == 6


@pytest.mark.parametrize('tool, text', [
    ('amd-smi', AMD_SMI_NO_DRIVER + '\n'),
    ('rocm-smi', ROCM_SMI_NO_DRIVER + '\n'),
    ('hl-smi', 'bash: hl-smi: command not found\n'),
])
def test_a_failing_tool_is_its_own_message(tool, text):
    with pytest.raises(ValueError, match=text.split(':')[0]):
        probe.parse_gpus(tool, text)


def test_amd_pcie_speed_to_generation():
    assert [amd.gen_of(v) for v in (2.5, 8, 16, 32, 16000, 0, None)] == \
        [1, 3, 4, 5, 4, None, None]


# -- the probe's record and its judgement ---------------------------------

def _stage(tmp_path, tool, before, after=None, rc=0, samples=None,
           kmsg=''):
    """A stage directory as the probe leaves it, holding ``tool``'s
    outputs; read back by probe.read."""
    d = tmp_path / 'stage'
    d.mkdir(exist_ok=True)
    (d / 'hpcval_health_node.txt').write_text(
        f'host=n12\ntool={tool}\nstart=1795618665\nkmsg=3.9\n'
        f'kernel=6.8.0-45-generic\nkmsg_rc=0\nend=1795618672\n')
    for phase, text in (('before', before), ('after', after or before)):
        (d / f'hpcval_health_{phase}.txt').write_text(text)
        (d / f'hpcval_health_{phase}.txt.rc').write_text(f'{rc}\n')
    if samples is not None:
        (d / 'hpcval_health_samples.txt').write_text(samples)
    (d / 'hpcval_health_kmsg.txt').write_text(kmsg)
    return probe.read(str(d))


def _metric(**blocks):
    """The real metric document with amd-smi ``metric`` blocks added (key
    names of amdsmi_cli/amdsmi_commands.py): the mutation of a test."""
    doc = json.loads(METRIC)
    doc[0].update(blocks)
    return json.dumps(doc, indent=4) + '\n'


def _pcie(width, gts):
    return {'width': width, 'speed': {'value': gts, 'unit': 'GT/s'}}


def _hl_without(index):
    lines = HLSMI.splitlines(keepends=True)
    at = [i for i, l in enumerate(lines) if l.startswith(f'|   {index}  HL')]
    return ''.join(lines[:at[0]] + lines[at[0] + 3:])


def _hl_ecc(n):
    return HLSMI.replace('0000:b4:00.0     N/A |                   0  |',
                         f'0000:b4:00.0     N/A |                   {n}  |')


DEFECTS = {
    'amd healthy': ('amd-smi', dict(before=STATIC + METRIC), MI210, None),
    'amd missing GPU': (
        'amd-smi', dict(before=STATIC + METRIC), dict(MI210, gpus=8),
        ('', '1 of 8 GPUs (expected 8 x MI210)')),
    'amd narrow link': (
        'amd-smi', dict(before=STATIC + _metric(pcie=_pcie(8, 16))), MI210,
        ('GPU 0', 'PCIe Gen4 x8, expected Gen4 x16')),
    'amd narrow link, no pin': (
        'amd-smi', dict(before=STATIC + _metric(pcie=_pcie(8, 16))),
        {k: v for k, v in MI210.items() if k != 'pcie'},
        ('GPU 0', 'PCIe x8, the link can train x16')),
    'amd uncorrectable ECC': (
        'amd-smi', dict(before=STATIC + _metric(ecc={
            'total_correctable_count': 0, 'total_uncorrectable_count': 3,
            'total_deferred_count': 0})), MI210,
        ('GPU 0', '3 uncorrectable ECC error(s) since the driver loaded')),
    'amd thermal violation': (
        'amd-smi', dict(before=STATIC + METRIC, samples=(_metric(
            temperature={'edge': 'N/A', 'hotspot': {'value': 96, 'unit': 'C'},
                         'mem': {'value': 88, 'unit': 'C'}},
            throttle={'hbm_thermal_violation_status': 'ACTIVE'}))), MI210,
        ('GPU 0', 'HBM thermal violation active 100% of the run, 96 C')),
    'amd-smi fails': (
        'amd-smi', dict(before=AMD_SMI_NO_DRIVER + '\n', rc=255), MI210,
        ('', f'amd-smi failed (exit 255): {AMD_SMI_NO_DRIVER}')),
    'amdgpu error': (
        'amd-smi', dict(before=STATIC + METRIC, kmsg=XID_AMD + '\n'), MI210,
        ('', f'amdgpu error in the kernel log: {XID_AMD}')),
    'rocm-smi fails with exit 0': (
        'rocm-smi', dict(before=ROCM_SMI_NO_DRIVER + '\n', rc=0),
        dict(MI210, model='GENERIC RM IMAGE'),
        ('', f'rocm-smi: unreadable output: {ROCM_SMI_NO_DRIVER}')),
    'rocm-smi healthy': ('rocm-smi', dict(before=ROCM),
                         dict(MI210, model='GENERIC RM IMAGE', pcie=None),
                         None),
    'hl healthy': ('hl-smi', dict(before=HLSMI, samples=HLSMI * 3), HL225,
                   None),
    'hl missing AIP': ('hl-smi', dict(before=_hl_without(1)), HL225,
                       ('', '1 of 2 GPUs (expected 2 x HL-225)')),
    'hl AIP lost during the run': (
        'hl-smi', dict(before=HLSMI, after=_hl_without(0)), HL225,
        ('', 'after the benchmark: 1 of 2 GPUs (expected 2 x HL-225)')),
    'hl uncorrectable ECC': ('hl-smi', dict(before=_hl_ecc(1)), HL225,
                             ('GPU 1', '1 uncorrectable ECC error(s) since '
                                       'the driver loaded')),
    'hl smaller memory': (
        'hl-smi', dict(before=HLSMI.replace('768MiB / 98304MiB |     0%'
                                            '           N/A |\n|----',
                                            '768MiB / 32768MiB |     0%'
                                            '           N/A |\n|----', 1)),
        HL225, ('GPU 0', '32.0 GiB of memory, expected 96 GiB')),
}


@pytest.mark.parametrize('defect', sorted(DEFECTS))
def test_each_defect_is_named(tmp_path, defect):
    tool, stage, expected, line = DEFECTS[defect]
    expected = {k: v for k, v in expected.items() if v is not None}
    rec = _stage(tmp_path, tool, **stage)
    found = judge.failures(rec, expected)
    if line is None:
        assert found == [], found
    else:
        assert line in found, found


def test_amd_power_cap_is_a_cause_not_a_failure(tmp_path):
    hot = _metric(power={'socket_power': {'value': 298, 'unit': 'W'},
                         'throttle_status': 'THROTTLED'},
                  temperature={'hotspot': {'value': 87, 'unit': 'C'}})
    rec = _stage(tmp_path, 'amd-smi', STATIC + METRIC,
                 samples=METRIC + hot + hot + METRIC)
    assert judge.failures(rec, MI210) == []
    assert judge.cause(rec, 'GPU 0') == (
        'during the run GPU 0 was throttled (amd-smi THROTTLE_STATUS) 50% '
        'of the time, 87 C')


def test_hl_smi_process_on_a_gpu_is_named(tmp_path):
    busy = HLSMI.replace(
        '|   1        N/A   N/A    N/A                                      '
        'N/A        |',
        '|   1      5504     C   python3                              '
        '  8710MiB    |')
    rec = _stage(tmp_path, 'hl-smi', busy)
    assert judge.cause(rec, 'GPU 1') == (
        'another process, python3 (pid 5504), held 8710 MiB on GPU 1 '
        'before the benchmark started')


# -- through hpcval verdict --------------------------------------------------

@pytest.fixture
def site(tmp_path, monkeypatch):
    """The H100 node's calibrated site references, its inventory turned
    into the vendor's under test."""
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    shutil.copy(H100 / 'reports' / 'local.yaml', refs / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))

    def inventory(vendor, model, gpus, memory_gib):
        text = (refs / 'local.yaml').read_text()
        head, _, _ = text.partition('\ninventory:')
        (refs / 'local.yaml').write_text(
            f'{head}\ninventory:\n  - partition: default\n    gpus: {gpus}\n'
            f'    vendor: {vendor}\n    model: {model}\n'
            f'    memory_gib: {memory_gib}\n    source: test\n')
    return inventory


# the verdict names the node as the run report does (the H100 run: "vm")
@pytest.mark.parametrize('defect, exit_line', [
    ('hl healthy', None),
    ('hl missing AIP', 'FAIL node vm: 1 of 2 GPUs (expected 2 x HL-225)'),
    ('amd healthy', None),
    ('amd-smi fails', f'FAIL node vm: amd-smi failed (exit 255): '
                      f'{AMD_SMI_NO_DRIVER}'),
    ('amd uncorrectable ECC', 'FAIL node vm GPU 0: 3 uncorrectable ECC '
                              'error(s) since the driver loaded'),
])
def test_the_verdict(tmp_path, site, capsys, defect, exit_line):
    tool, stage, expected, _ = DEFECTS[defect]
    site(expected['vendor'], expected['model'], expected['gpus'],
         expected['memory_gib'])
    rec = _stage(tmp_path, tool, **stage)
    status = cli.main(['verdict', '--allow-unjudged',
                       _report_with(tmp_path, rec)])
    out = capsys.readouterr().out
    if exit_line is None:
        assert status == 0, out
    else:
        assert status == 1, out
        assert out.count(exit_line) == 1, out


# -- the probe script itself, with vendor tools that replay the outputs ----

REPLAY = {
    'amd-smi': """#!/bin/sh
case "$1" in
static) cat '{fix}/amd/amd-smi_static_mi210.json' ;;
metric) cat '{fix}/amd/amd-smi_metric_power.json' ;;
process) echo '[]' ;;
*) exit 2 ;;
esac
""",
    'hl-smi': """#!/bin/sh
cat '{fix}/habana/hl-smi_2x_hl225.txt'
""",
    # without the amdgpu module: its message and exit status (SOURCE.md)
    'amd-smi-failing': f"""#!/bin/sh
echo '{AMD_SMI_NO_DRIVER}'
exit 255
""",
}


@pytest.mark.parametrize('tool, expected, failures', [
    ('amd-smi', MI210, []),
    ('hl-smi', HL225, []),
    ('amd-smi-failing', MI210,
     [('', f'amd-smi failed (exit 255): {AMD_SMI_NO_DRIVER}')]),
])
def test_probe_script_runs_the_vendor_tool(tmp_path, tool, expected,
                                           failures):
    import os
    import subprocess
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    name = tool.replace('-failing', '')
    (bindir / name).write_text(REPLAY[tool].format(fix=FIX))
    (bindir / name).chmod(0o755)
    stage = tmp_path / 'stage'
    stage.mkdir()
    probe.write(str(stage))
    # only this tool on PATH among the four the probe looks for
    system = '/usr/bin:/bin'
    if any(shutil.which(t, path=system) for t in probe.TOOLS):
        pytest.skip(f'a GPU tool is installed in {system}')
    env = {**os.environ, 'PATH': f'{bindir}{os.pathsep}{system}'}
    before, trap = probe.commands(False)
    subprocess.run(['bash', '-c', f'{before}\n{trap}\ntrue\n'], cwd=stage,
                   env=env, check=True, timeout=60)
    rec = probe.read(str(stage))
    assert rec['tool'] == name
    assert rec['kernel']
    assert judge.failures(rec, expected) == failures
    if not failures:
        assert len(rec['after']['gpus']) == expected['gpus']
