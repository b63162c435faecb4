"""AMD (amd-smi, rocm-smi) and Intel Gaudi (hl-smi) health records, from
real public outputs of those tools (tests/fixtures/health/*/SOURCE.md),
each mutated one defect at a time: every defect is named (node, GPU,
what) and fails the verdict; the healthy outputs pass it."""
import json
import shutil
from pathlib import Path

import pytest

from hpcval import cli, records
from hpcval.health import amd, habana, judge, kernel_log, probe
from rfmrun import host_free_path
from test_health import _report_with  # the H100 report with a record

FIX = Path(__file__).parent / 'fixtures' / 'health'
AMD = FIX / 'amd'
H100 = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
STATIC = (AMD / 'amd-smi_static_mi210.json').read_text()
METRIC = (AMD / 'amd-smi_metric_power.json').read_text()
RX_STATIC = (AMD / 'amd-smi_static_rx6600.json').read_text()
RX_METRIC = (AMD / 'amd-smi_metric_rx6600.json').read_text()
ROCM = (AMD / 'rocm-smi_showallinfo_mi210.json').read_text()
ROCM_MI100 = (AMD / 'rocm-smi_4x_mi100_rocm602.json').read_text()
ROCM_MI100_GEN3 = (AMD / 'rocm-smi_6x_mi100_rocm571.json').read_text()
AMD_DMESG = (AMD / 'dmesg_amdgpu_ring_timeout_reset.txt').read_text()
HLSMI = (FIX / 'habana' / 'hl-smi_2x_hl225.txt').read_text()
HL_DMESG = (FIX / 'habana' / 'dmesg_habanalabs_8x_hl205.txt').read_text()
# the tools' messages without the amdgpu module, from their source
# (tests/fixtures/health/amd/SOURCE.md)
AMD_SMI_NO_DRIVER = 'ERROR: Driver not loaded (amdgpu not found in modules)'
ROCM_SMI_NO_DRIVER = ('ERROR: Driver not initialized (amdgpu not found in '
                      'modules)')
# a real amd-smi 26.1.0 run without the module (ROCm/amdsmi issue #172);
# its exit status was not shown, so both are tried
AMD_SMI_26_NO_DRIVER = (AMD / 'amd-smi_no_driver_26.1.txt').read_text()
AMD_SMI_26_MESSAGE = ('ERROR:root:Unable to get devices, driver not '
                      'initialized (amdgpu not found in modules)')
AMD_RESET = '[127035.492304] amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!'
AMD_TIMEOUT = ('[127033.279661] amdgpu 0000:c5:00.0: amdgpu: ring gfx_0.0.0 '
               'timeout, signaled seq=2662395, emitted seq=2662397')
HL_NOT_USABLE = ('[   72.993269] habanalabs 0000:1a:00.0: Failed to '
                 'initialize hl2. Device is NOT usable !')

MI210 = {'partition': 'default', 'gpus': 1, 'vendor': 'amd',
         'model': 'MI210', 'memory_gib': 64, 'pcie': {'gen': 4, 'width': 16}}
# the RX 6600 is a PCIe 4.0 x8 card
RX6600 = {'partition': 'default', 'gpus': 1, 'vendor': 'amd',
          'model': 'RX 6600', 'memory_gib': 8, 'pcie': {'gen': 4, 'width': 8}}
MI100 = {'partition': 'default', 'gpus': 4, 'vendor': 'amd',
         'model': 'MI100', 'memory_gib': 32, 'pcie': {'gen': 4, 'width': 16}}
HL225 = {'partition': 'default', 'gpus': 2, 'vendor': 'habana',
         'model': 'HL-225', 'memory_gib': 96}


def _edited(text, *path_value):
    """The real JSON document ``text`` with the one value at ``path`` set,
    printed back as both tools print it (indent 4): a mutation."""
    *path, val = path_value
    doc = json.loads(text)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if val is None:
        del node[path[-1]]
    else:
        node[path[-1]] = val
    return json.dumps(doc, indent=4) + '\n'


def _rx(*path_value):
    """The RX 6600's real static + metric pair, its metric mutated."""
    return RX_STATIC + _edited(RX_METRIC, 0, *path_value)


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
    assert 'serial' not in gpu                  # product_serial "0": none


def test_amd_smi_static_and_metric_of_a_radeon():
    """Every block of the metric document the judge reads (pcie, ecc,
    power's throttle_status, temperature, mem_usage) as amd-smi printed
    it for a Radeon RX 6600: no Instinct's was found."""
    (gpu,) = amd.gpus(RX_STATIC + RX_METRIC)
    assert gpu['model'] == 'Navi 23 [Radeon RX 6600/6600 XT'  # as printed
    assert gpu['bus_id'] == '0000:0b:00.0'
    assert (gpu['pcie_gen'], gpu['pcie_width']) == (4, 8)
    assert (gpu['pcie_gen_max'], gpu['pcie_width_max']) == (4, 16)
    assert (gpu['ecc_corrected'], gpu['ecc_uncorrected']) == (0, 0)
    assert (gpu['temp_c'], gpu['temp_mem_c']) == (37, 32)
    assert (gpu['power_w'], gpu['power_limit_w']) == (6, 100)
    assert (gpu['util_pct'], gpu['memory_used_mib']) == (1, 202)
    assert gpu['memory_total_mib'] == 8176
    assert gpu['driver'] == '7.0.0-3-pve'
    assert gpu['vbios'] == '020.003.000.030.000000'
    assert gpu['throttle'] == [] and 'serial' not in gpu


def test_navi_max_pcie_width_is_not_its_link():
    """amd-smi static gives this x8 card max_pcie_width 16 (the link inside
    the Navi package), metric the x8 it trained: without a pinned link the
    judge names x8 against 16, with the site's pin the card passes."""
    snap = {'rc': 0, 'gpus': amd.gpus(RX_STATIC + RX_METRIC)}
    rec = records.decode('health', {'node': 'vm', 'tool': 'amd-smi',
                                    'before': snap, 'after': snap})
    unpinned = {k: v for k, v in RX6600.items() if k != 'pcie'}
    assert judge.failures(rec, unpinned) == [
        ('GPU 0', 'PCIe x8, the link can train x16')]
    assert judge.failures(rec, RX6600) == []


def test_rocm_smi_of_an_mi210():
    (gpu,) = amd.gpus(ROCM, 'rocm-smi')
    assert gpu['bus_id'] == '0000:63:00.0'
    assert gpu['vbios'] == '113-D67301-063'
    # "Serial Number": "00000000000000" is none: the ASIC's Unique ID
    assert gpu['serial'] == '0x43cc8cc8af246708'
    assert gpu['driver'] == '5.18.13'
    assert (gpu['temp_c'], gpu['temp_mem_c']) == (35.0, 46.0)
    # rocm-smi names the card by its VBIOS image, not "MI210"
    assert gpu['model'] == 'GENERIC RM IMAGE'


def test_rocm_smi_of_four_mi100():
    gpus = amd.gpus(ROCM_MI100, 'rocm-smi')
    assert [g['index'] for g in gpus] == [0, 1, 2, 3]
    assert {g['model'] for g in gpus} == {'Arcturus GL-XL [Instinct MI100]'}
    # "pcie clock level": "0 (16.0GT/s x16)"
    assert {(g['pcie_gen'], g['pcie_width']) for g in gpus} == {(4, 16)}
    assert [g['serial'] for g in gpus] == [
        '0x79ccd55167a2124a', '0x4edfb117a17a07d', '0xd4a9ec48d03d261d',
        '0x1b9dd972253c3736']
    assert gpus[1]['bus_id'] == '0000:A3:00.0'
    assert {g['memory_total_mib'] for g in gpus} == {32752}
    assert {g['driver'] for g in gpus} == {'6.3.6'}
    assert (gpus[0]['power_w'], gpus[0]['power_limit_w']) == (36.0, 290.0)


def test_rocm_smi_zero_serials_are_none():
    gpus = amd.gpus(ROCM_MI100_GEN3, 'rocm-smi')
    assert len(gpus) == 6
    # "Serial Number": "0", "Unique ID": "N/A" on every card
    assert not any('serial' in g for g in gpus)
    assert {(g['pcie_gen'], g['pcie_width']) for g in gpus} == {(3, 16)}


def test_rocm_smi_link_forms():
    """The JSON's "0 (16.0GT/s x16)" and the text's "1 (16.0GT/s, x16
    619Mhz)" (ROCm/rocm_smi_lib issue #77) name the same link."""
    for text in ('0 (16.0GT/s x16)', '1 (16.0GT/s, x16 619Mhz)'):
        m = amd._LINK.search(text)
        assert (amd.gen_of(float(m.group(1))), int(m.group(2))) == (4, 16)


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


def test_habanalabs_lines_name_the_device_that_failed():
    """The driver names the PCI device only in its "Failed to initialize
    ... NOT usable" line."""
    events = kernel_log.events(HL_DMESG)
    assert [e['bus_id'] for e in events if e['bus_id']] == [
        '0000:1a:00.0', '0000:34:00.0', '0000:33:00.0']
    assert all(e['kind'] == 'habanalabs' and e['fatal'] for e in events)
    assert not any('Successfully' in e['line'] for e in events)


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


def _violation(**status):
    """The AMD changelog's real ``metric -p`` document with an MI300
    ``throttle`` block added: no real JSON of that block was found
    (SOURCE.md); its key names are amd-smi's (amdsmi_cli)."""
    doc = json.loads(METRIC)
    doc[0]['temperature'] = {'edge': 'N/A',
                             'hotspot': {'value': 96, 'unit': 'C'},
                             'mem': {'value': 88, 'unit': 'C'}}
    doc[0]['throttle'] = status
    return json.dumps(doc, indent=4) + '\n'


def _hl_without(index):
    lines = HLSMI.splitlines(keepends=True)
    at = [i for i, l in enumerate(lines) if l.startswith(f'|   {index}  HL')]
    return ''.join(lines[:at[0]] + lines[at[0] + 3:])


def _hl_ecc(n):
    return HLSMI.replace('0000:b4:00.0     N/A |                   0  |',
                         f'0000:b4:00.0     N/A |                   {n}  |')


DEFECTS = {
    'amd healthy': ('amd-smi', dict(before=RX_STATIC + RX_METRIC,
                                    samples=RX_METRIC * 3), RX6600, None),
    'amd missing GPU': (
        'amd-smi', dict(before=RX_STATIC + RX_METRIC), dict(RX6600, gpus=2),
        ('', '1 of 2 GPUs (expected 2 x RX 6600)')),
    'amd narrow link': (
        'amd-smi', dict(before=_rx('pcie', 'width', 4)), RX6600,
        ('GPU 0', 'PCIe Gen4 x4, expected Gen4 x8')),
    'amd link a generation down': (
        'amd-smi', dict(before=_rx('pcie', 'speed', 'value', 8)), RX6600,
        ('GPU 0', 'PCIe Gen3 x8, expected Gen4 x8')),
    'amd uncorrectable ECC': (
        'amd-smi', dict(before=_rx('ecc', 'total_uncorrectable_count', 3)),
        RX6600, ('GPU 0', '3 uncorrectable ECC error(s) since the driver '
                          'loaded')),
    'amd ECC after the benchmark': (
        'amd-smi', dict(before=RX_STATIC + RX_METRIC,
                        after=_rx('ecc', 'total_uncorrectable_count', 1)),
        RX6600, ('GPU 0', '1 uncorrectable ECC error(s) since the driver '
                          'loaded')),
    'amd thermal violation': (
        'amd-smi', dict(before=STATIC + METRIC, samples=_violation(
            hbm_thermal_violation_status='ACTIVE')), MI210,
        ('GPU 0', 'HBM thermal violation active 100% of the run, 96 C')),
    'amd-smi fails': (
        'amd-smi', dict(before=AMD_SMI_NO_DRIVER + '\n', rc=255), RX6600,
        ('', f'amd-smi failed (exit 255): {AMD_SMI_NO_DRIVER}')),
    # the probe's file holds static's and metric's output, one after the
    # other
    'amd-smi 26.1 fails, exit 0': (
        'amd-smi', dict(before=AMD_SMI_26_NO_DRIVER * 2, rc=0), RX6600,
        ('', f'amd-smi: unreadable output: {AMD_SMI_26_MESSAGE}')),
    'amd-smi 26.1 fails, exit 255': (
        'amd-smi', dict(before=AMD_SMI_26_NO_DRIVER * 2, rc=255), RX6600,
        ('', f'amd-smi failed (exit 255): {AMD_SMI_26_MESSAGE}')),
    'amdgpu reset': (
        'amd-smi', dict(before=RX_STATIC + RX_METRIC, kmsg=AMD_DMESG),
        RX6600, ('PCI 0000:c5:00.0', f'amdgpu driver error in the kernel '
                 f'log (8 times): {AMD_TIMEOUT}')),
    'rocm-smi fails with exit 0': (
        'rocm-smi', dict(before=ROCM_SMI_NO_DRIVER + '\n', rc=0), MI100,
        ('', f'rocm-smi: unreadable output: {ROCM_SMI_NO_DRIVER}')),
    'rocm-smi healthy': ('rocm-smi', dict(before=ROCM),
                         dict(MI210, model='GENERIC RM IMAGE', pcie=None),
                         None),
    'rocm-smi MI100 healthy': ('rocm-smi', dict(before=ROCM_MI100), MI100,
                               None),
    'rocm-smi MI100 missing GPU': (
        'rocm-smi', dict(before=_edited(ROCM_MI100, 'card3', None)), MI100,
        ('', '3 of 4 GPUs (expected 4 x MI100)')),
    'rocm-smi MI100 narrow link': (
        'rocm-smi', dict(before=_edited(ROCM_MI100, 'card2',
                                        'pcie clock level',
                                        '0 (16.0GT/s x8)')), MI100,
        ('GPU 2', 'PCIe Gen4 x8, expected Gen4 x16')),
    # unmodified: these six MI100 ran their links at 8.0 GT/s
    'rocm-smi MI100 at Gen3': (
        'rocm-smi', dict(before=ROCM_MI100_GEN3), dict(MI100, gpus=6),
        ('GPU 5', 'PCIe Gen3 x16, expected Gen4 x16')),
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
    'hl driver failed a device': (
        'hl-smi', dict(before=HLSMI, kmsg=HL_DMESG), HL225,
        ('PCI 0000:1a:00.0', f'habanalabs driver error in the kernel log: '
                             f'{HL_NOT_USABLE}')),
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
    doc = json.loads(RX_METRIC)
    doc[0]['power']['socket_power']['value'] = 98
    doc[0]['power']['throttle_status'] = 'THROTTLED'
    doc[0]['temperature']['hotspot']['value'] = 87
    hot = json.dumps(doc, indent=4) + '\n'
    rec = _stage(tmp_path, 'amd-smi', RX_STATIC + RX_METRIC,
                 samples=RX_METRIC + hot + hot + RX_METRIC)
    assert judge.failures(rec, RX6600) == []
    assert judge.cause(rec, 'GPU 0') == (
        'during the run GPU 0 was throttled (amd-smi THROTTLE_STATUS) 50% '
        'of the time, 87 C')


def test_rocm_smi_swapped_card_is_changed(tmp_path):
    """rocm-smi's Unique ID names each MI100: a card whose ID the node did
    not have at calibration is another card."""
    ids = [g['serial'] for g in amd.gpus(ROCM_MI100, 'rocm-smi')]
    expected = dict(MI100, baseline={'serials': {'n12': ids}})
    same = _stage(tmp_path, 'rocm-smi', ROCM_MI100)
    assert judge.changes(same, expected) == []
    swapped = _stage(tmp_path, 'rocm-smi', _edited(
        ROCM_MI100, 'card1', 'Unique ID', '0x4edfb117a17a07e'))
    assert judge.changes(swapped, expected) == [
        ('GPU 1', "serial 0x4edfb117a17a07e, not one of the node's 4 at "
                  'calibration (another card)', 'serial')]


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

    def inventory(vendor, model, gpus, memory_gib, pcie=None, **_):
        text = (refs / 'local.yaml').read_text()
        head, _, _ = text.partition('\ninventory:')
        link = (f'    pcie: {{gen: {pcie["gen"]}, width: {pcie["width"]}}}\n'
                if pcie else '')
        (refs / 'local.yaml').write_text(
            f'{head}\ninventory:\n  - partition: default\n    gpus: {gpus}\n'
            f'    vendor: {vendor}\n    model: {model}\n'
            f'    memory_gib: {memory_gib}\n{link}    source: test\n')
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
    ('rocm-smi MI100 narrow link', 'FAIL node vm GPU 2: PCIe Gen4 x8, '
                                   'expected Gen4 x16'),
])
def test_the_verdict(tmp_path, site, capsys, defect, exit_line):
    tool, stage, expected, _ = DEFECTS[defect]
    site(**{k: v for k, v in expected.items() if v is not None})
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
static) cat '{fix}/amd/amd-smi_static_rx6600.json' ;;
metric) cat '{fix}/amd/amd-smi_metric_rx6600.json' ;;
process) echo '[]' ;;
*) exit 2 ;;
esac
""",
    'rocm-smi': """#!/bin/sh
cat '{fix}/amd/rocm-smi_4x_mi100_rocm602.json'
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
    ('amd-smi', RX6600, []),
    ('rocm-smi', MI100, []),
    ('hl-smi', HL225, []),
    ('amd-smi-failing', RX6600,
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
    # only this tool on PATH among the four the probe looks for, and the
    # kernel log's stand-in
    env = {**os.environ, 'PATH': host_free_path(
        f'{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin')}
    before, trap = probe.commands(False)
    subprocess.run(['bash', '-c', f'{before}\n{trap}\ntrue\n'], cwd=stage,
                   env=env, check=True, timeout=60)
    rec = probe.read(str(stage))
    assert rec.tool == name
    assert rec.kernel
    assert judge.failures(rec, expected) == failures
    if not failures:
        assert len(rec.after.gpus) == expected['gpus']
