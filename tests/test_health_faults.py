"""The fault catalogue (hpcval.health.catalogue) on real outputs: kernel
logs of GPU and PCIe faults from public threads
(tests/fixtures/health/kernel/SOURCE.md), the nvidia-smi outputs and the
quick suite's report of a lent 4 x H200 NVLink node
(tests/fixtures/captured/h200x4/README.md) and public NVLink outputs
(tests/fixtures/health/nvidia/SOURCE.md), each mutated one defect at a
time where no real output has the defect.  Every fault fails the node
naming its kind and the GPU; information is shown once, never failing;
what a user's process prints fails nothing."""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hpcval import cli, records
from hpcval.health import catalogue, inventory, judge, kernel_log, nvidia
from hpcval.health import probe
from hpcval.health.xid_catalog import XIDS
from test_health import _report_with

FIX = Path(__file__).parent / 'fixtures' / 'health'
KERNEL = FIX / 'kernel'
NV = FIX / 'nvidia'
H100 = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
X4 = Path(__file__).parent / 'fixtures' / 'captured' / 'h200x4'
# the lent 4 x H200 node's outputs (tests/fixtures/captured/h200x4/README.md)
_CAPTURED = {'h200x4_nvlink_s.txt': 'nvlink_s.txt',
             'h200x4_nvlink_e.txt': 'nvlink_e.txt',
             'h200x4_ident.csv': 'ident.txt',
             'h200x4_apps_idle.csv': 'compute_apps.txt'}
H200X4 = {'partition': 'default', 'gpus': 4, 'vendor': 'nvidia',
          'model': 'H200', 'memory_gib': 140, 'pcie': {'gen': 5, 'width': 16},
          'nvlink': {'links': 18, 'gbs': 26.562}}


def _kernel(name):
    return (KERNEL / name).read_text()


def _nv(name):
    if name in _CAPTURED:
        return (X4 / 'tools' / _CAPTURED[name]).read_text()
    return (NV / name).read_text()


def _warmup_record():
    """The health record of BabelStreamCudaCheck in the node's quick-mode
    warm-up run, as the probe of main at 2936626 read it (no NVLink)."""
    report = json.loads((X4 / 'run' / 'warmup.json').read_text())
    return next(tc['hpcval_health'] for run in report['runs']
                for tc in run['testcases']
                if tc['name'].startswith('BabelStreamCudaCheck'))


def _h(rec):
    """The typed record of a report's record changed in place here, or
    of the probe (hpcval.records.Health already)."""
    return rec if isinstance(rec, records.Health) else \
        records.decode('health', rec)


def _events(text):
    return [(e['kind'], e['bus_id'], e['code'], e['fatal'])
            for e in kernel_log.events(text)]


# -- the catalogue ------------------------------------------------------------

@pytest.mark.parametrize('code', [48, 62, 64, 74, 79, 94, 95, 119, 120,
                                  144, 145, 146, 147, 148, 149, 150, 154])
def test_xids_that_fail_a_node(code):
    assert catalogue.xid_severity(code) == catalogue.FAIL


@pytest.mark.parametrize('code', [13, 31, 43, 45, 63, 92])
def test_xids_that_are_information(code):
    """NVIDIA's catalogue: the application's to restart, or to ignore."""
    assert catalogue.xid_severity(code) == catalogue.INFO
    assert XIDS[code][2] in ('RESTART_APP', 'IGNORE', 'WORKFLOW_XID_45')


def test_an_xid_45_caused_by_an_nvlink_xid_fails_as_that_xid():
    assert catalogue.xid_severity(45, caused_by=149) == catalogue.FAIL
    assert catalogue.xid_severity(45, caused_by=13) == catalogue.INFO
    assert catalogue.xid_severity(999) == catalogue.FAIL    # newer code


def test_every_catalogue_entry_has_a_severity_and_a_source():
    assert len(XIDS) == 172
    for key, (sev, what, seen, source) in catalogue.EVENTS.items():
        assert sev in (catalogue.FAIL, catalogue.INFO, None), key
        assert what and seen and source, key


def test_docs_hold_the_catalogue():
    text = (Path(__file__).parents[1] / 'docs' / 'health.md').read_text()
    for sev, what, _, _ in catalogue.rows():
        assert f'| {sev} | {what} |' in text, what
    for code in (48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 145, 149):
        assert f'| {code} |' in text, code


# -- kernel log records, real -------------------------------------------------

def test_a_gpu_fallen_off_the_bus_without_an_xid():
    """Its record spans three lines: the continuations are kept."""
    (ev,) = kernel_log.events(_kernel('fallen_off_bus_no_xid_nvsentinel155'
                                      '.txt'))
    assert (ev['kind'], ev['code'], ev['bus_id'], ev['fatal']) == \
        ('nvrm', 'fallen_off_bus', '0000:b3:00.0', True)
    assert ev['line'].endswith('fallen off the bus and is not responding '
                               'to commands.')


def test_rminitadapter_and_gsp_failures():
    assert _events(_kernel('rminitadapter_gsp_ogkm789.txt')) == [
        ('nvrm', '', 'init_failed', True),
        ('nvrm', '0000:98:00.0', 'init_failed', True),
        ('nvrm', '0000:98:00.0', 'init_failed', True)]


def test_xid_79_with_a_fatal_aer_before_it():
    assert _events(_kernel('xid79_aer_fatal_gpuburn1.txt')) == [
        ('aer', '0000:00:02.0', 'Corrected', False),
        ('aer', '0000:00:02.0', 'Fatal', True),
        ('xid', '0000:02:00', 79, True)]


def test_xid_79_and_the_drivers_own_line_and_a_crash_dump_record():
    events = kernel_log.events(_kernel('xid79_crashdump_nvidia_docker1553'
                                       '.txt'))
    assert [(e['kind'], e['code']) for e in events] == [
        ('xid', 79), ('nvrm', 'fallen_off_bus'), ('aer', 'Corrected')]
    recs = kernel_log.records(_kernel('xid79_crashdump_nvidia_docker1553'
                                      '.txt'))
    assert any(r.endswith('before the NVIDIA kernel module is unloaded.')
               is False and 'nvidia-bug-report.sh as root' in r
               for r in recs)


def test_application_xids_and_a_halt():
    assert _events(_kernel('xid31_62_45_gigahorse301.txt')) == [
        ('xid', '0000:0a:00', 31, False), ('xid', '0000:0a:00', 62, True),
        ('xid', '0000:0a:00', 45, False), ('xid', '0000:0a:00', 45, False),
        ('xid', '0000:0a:00', 45, False)]
    assert {e[3] for e in _events(_kernel('xid13_application_gpud.txt'))} \
        == {False}


def test_xid_119_in_dmesg_clock_time():
    events = kernel_log.events(_kernel('xid119_gsp_timeout_gpud.txt'))
    assert events and {(e['code'], e['bus_id'], e['fatal'])
                       for e in events} == {(119, '0000:9b:00', True)}


def test_aer_correctable_and_amdgpu_init():
    assert _events(_kernel('aer_correctable_popos3363.txt')) == [
        ('aer', '0000:00:00.0', 'Corrected', False)]
    events = _events(_kernel('amdgpu_init_failed_coreboot4.txt'))
    assert events[0] == ('aer', '0000:01:00.0', 'Corrected', False)
    assert {e[:1] + e[3:] for e in events[1:]} == {('amdgpu', True)}
    assert ('amdgpu', '0000:03:00.0', '', True) in events


def test_a_healthy_h200_nodes_driver_lines_are_no_fault():
    assert kernel_log.events(_nv('h200x4_dmesg_tail.txt')) == []


@pytest.mark.parametrize('name', ['amdgpu', 'nvidia', 'habanalabs', 'NVRM',
                                  'NVRM: Xid (PCI:', 'nvidia 0000:00:',
                                  'amdgpu 0000:c5:', 'pcieport', '[drm:x]'])
def test_a_crashing_process_fails_nothing(name):
    """The kernel's segfault lines of real crashes, the process renamed:
    a user names a process as they like (15 characters at most)."""
    text = _kernel('user_segfaults_real.txt')
    for real in ('zed-editor', 'nvc:[driver]', 'python3'):
        text = text.replace(f'{real}[', f'{name}[')
    assert kernel_log.events(text) == []
    assert kernel_log.events(_kernel('user_segfaults_real.txt')) == []


def test_a_newline_in_a_process_name_starts_no_record():
    """The Xid line carries the process's name (15 characters at most):
    what a newline in it puts on the next line has no time stamp, so it
    stays part of the application's Xid 13 record."""
    real = _kernel('xid13_application_gpud.txt').splitlines()[0]
    forged = real.replace('name=<unknown>',
                          'name=x\nNVRM: Xid (PCI:0000:38:00): 79,')
    events = kernel_log.events(forged)
    assert [(e['code'], e['fatal']) for e in events] == [(13, False)]


def test_an_xid_in_pci_domain_3_is_named_on_that_gpu():
    """Azure-style nodes: each GPU in its own domain at bus 00 device 00."""
    rec = _record()
    for d, gpu in enumerate(rec['before']['gpus'] + rec['after']['gpus']):
        gpu['bus_id'] = f'0000000{d % 4}:00:00.0'
    line = _kernel('xid79_aer_fatal_gpuburn1.txt').splitlines()[-1] \
        .replace('PCI:0000:02:00', 'PCI:0003:00:00')
    rec['kernel_events'] = kernel_log.events(line)
    assert judge.failures(_h(rec), H200X4) == [
        ('GPU 3', f'Xid 79 (GPU has fallen off the bus) in the kernel log: '
                  f'{line}')]


def test_an_xid_45_caused_by_a_previous_nvlink_xid_fails_the_gpu():
    real = _kernel('xid31_62_45_gigahorse301.txt').splitlines()[3]
    line = real + ' caused by previous Xid 149'
    rec = _record()
    rec['before']['gpus'][0]['bus_id'] = '00000000:0A:00.0'
    rec['kernel_events'] = kernel_log.events(line)
    assert judge.failures(_h(rec), H200X4) == [
        ('GPU 0', 'Xid 45 (Preemptive cleanup, due to previous errors) '
                  'caused by Xid 149 (NVLINK: NETIR Error) in the kernel '
                  f'log: {line}')]
    # without the suffix: the application's, information
    rec['kernel_events'] = kernel_log.events(real)
    assert judge.failures(_h(rec), H200X4) == []
    assert judge.notes(_h(rec))[0][0] == 'GPU 0'


# -- the 4 x H200 node's record and its NVLinks -------------------------------

def _record(links=True):
    rec = _warmup_record()
    if links:
        for phase in ('before', 'after'):
            rec[phase]['nvlink'] = _links(_nv('h200x4_nvlink_s.txt'),
                                          _nv('h200x4_nvlink_e.txt'))
    return rec


def _links(status, errors):
    return {'status': {str(g): {str(k): v for k, v in ls.items()}
                       for g, ls in nvidia.nvlink_status(status).items()},
            'errors': {str(g): {str(k): v for k, v in ls.items()}
                       for g, ls in nvidia.nvlink_errors(errors).items()}}


def test_nvlink_outputs_of_the_h200_node():
    status = nvidia.nvlink_status(_nv('h200x4_nvlink_s.txt'))
    assert {g: len(ls) for g, ls in status.items()} == {0: 18, 1: 18, 2: 18,
                                                        3: 18}
    assert {v for ls in status.values() for v in ls.values()} == {26.562}
    errors = nvidia.nvlink_errors(_nv('h200x4_nvlink_e.txt'))
    assert errors[3][17] == {'replay': 0, 'recovery': 0, 'crc': 0}
    a100 = nvidia.nvlink_status(_nv('a100x8_nvlink_s_gpud.txt'))
    assert len(a100) == 8 and {len(v) for v in a100.values()} == {12}


def test_the_healthy_4_gpu_record_passes():
    rec = _record()
    assert judge.failures(_h(rec), H200X4) == []
    assert judge.notes(_h(rec)) == []
    assert [g['uuid'] for g in judge.gpu_identity(_h(rec))] == [
        'GPU-28f4c570-4492-e6ab-5c81-b243191cba85',
        'GPU-0057510f-96b4-d6a0-5be4-af6850ed007d',
        'GPU-f7da5474-6b1c-c5dc-eec5-03cfcf8c0985',
        'GPU-9084251a-5561-d5db-a4da-cef1b0f762a5']
    assert judge.gpu_identity(_h(rec))[2]['serial'] == '1654124008869'


def test_calibrate_writes_the_nvlink_expectation():
    entry = inventory.from_records([_h(_record())], 'default', 'test')
    assert entry['nvlink'] == {'links': 18, 'gbs': 26.562}
    assert entry['gpus'] == 4 and entry['model'] == 'NVIDIA H200'
    assert 'nvlink' not in inventory.from_records([_h(_record(links=False))],
                                                  'default', 'test')


def test_an_inactive_nvlink_seen_before_and_after_is_one_line():
    """The lent 4 x H100 node's run with GPU 1's link 3 reported
    inactive (tests/fixtures/captured/h100x4/README.md)."""
    report = json.loads((X4.parent / 'h100x4' / 'reports' /
                         'gpu1_nvlink_inactive.json').read_text())
    rec = next(tc['hpcval_health'] for run in report['runs']
               for tc in run['testcases']
               if tc['name'].startswith('BabelStreamCudaCheck'))
    assert judge.failures(_h(rec), None) == [
        ('GPU 1', 'NVLink 3 inactive before and after the benchmark')]


def test_an_inactive_nvlink_fails_naming_gpu_and_link():
    inactive = _nv('h200x4_nvlink_s.txt').replace(
        'GPU 2: NVIDIA H200', 'GPU 2: X').split('GPU 2: X')
    after = inactive[0] + 'GPU 2: NVIDIA H200' + inactive[1].replace(
        'Link 5: 26.562 GB/s', 'Link 5: <inactive>', 1)
    rec = _record()
    rec['after']['nvlink'] = _links(after, _nv('h200x4_nvlink_e.txt'))
    assert judge.failures(_h(rec), H200X4) == [
        ('GPU 2', 'NVLink 5 inactive after the benchmark')]
    # without an expectation, an inactive link fails all the same
    assert judge.failures(_h(rec), None) == [
        ('GPU 2', 'NVLink 5 inactive after the benchmark')]


def test_the_public_v100_output_with_two_links_inactive():
    rec = _record()
    rec['before']['nvlink'] = _links(
        _nv('v100_nvlink_s_inactive_azhpc73.txt'), '')
    found = judge.failures(_h(rec), None)
    assert found == [('GPU 3', 'NVLink 3 inactive'),
                     ('GPU 3', 'NVLink 5 inactive')]


def test_fewer_nvlinks_than_the_inventory_expects():
    rec = _record()
    a100 = _nv('a100x8_nvlink_s_gpud.txt')
    rec['before']['nvlink']['status'] = _links(a100, '')['status']
    found = judge.failures(_h(rec), H200X4)
    assert ('GPU 0', '12 of 18 NVLinks active') in found
    assert ('GPU 0', 'NVLink 0 at 25 GB/s, expected 26.562 GB/s') in found


def test_nvlink_state_not_read_fails_where_links_are_expected():
    rec = _record(links=False)
    assert judge.failures(_h(rec), H200X4)[0] == (
        '', 'NVLink state before and after the benchmark: not read by the '
            'probe (the inventory expects 18 links per GPU)')
    assert judge.failures(_h(rec), dict(H200X4, nvlink=None)) == []


def test_growing_nvlink_errors():
    grown = _nv('h200x4_nvlink_e.txt').split('GPU 1:')
    crc = grown[0] + 'GPU 1:' + grown[1].replace(
        'Link 3: CRC Errors: 0', 'Link 3: CRC Errors: 12', 1)
    rec = _record()
    rec['after']['nvlink'] = _links(_nv('h200x4_nvlink_s.txt'), crc)
    assert judge.failures(_h(rec), H200X4) == [
        ('GPU 1', 'NVLink 3: 12 crc error(s) during the benchmark')]
    replay = grown[0] + 'GPU 1:' + grown[1].replace(
        'Link 3: Replay Errors: 0', 'Link 3: Replay Errors: 4', 1)
    rec['after']['nvlink'] = _links(_nv('h200x4_nvlink_s.txt'), replay)
    assert judge.failures(_h(rec), H200X4) == []
    assert judge.notes(_h(rec)) == [
        ('GPU 1', 'NVLink 3: 4 replay error(s) during the benchmark')]


def test_growing_pcie_replays():
    """`nvidia-smi -q` of the node (GPU 1 at 1 replay since reset), GPU 1's
    count raised after: a few are a note, more than DCGM's 80 fail it."""
    text = (X4 / 'tools' / 'smi_q.txt').read_text()
    rec = _record()
    rec['before']['pcie_replays'] = nvidia.pcie_replays(text)
    for n, failing in ((5, False), (200, True)):
        rec['after']['pcie_replays'] = nvidia.pcie_replays(text.replace(
            'Replays Since Reset                            : 1',
            f'Replays Since Reset                            : {n}'))
        found = (f'{n - 1} PCIe replay(s) during the benchmark (more than '
                 f"80 fail: DCGM's max_pcie_replays)")
        assert judge.failures(_h(rec), H200X4) == (
            [('GPU 1', found)] if failing else [])
        assert (('GPU 1', found) in judge.notes(_h(rec))) is not failing


def test_a_gpu_lost_during_the_run_without_an_inventory():
    rec = _record()
    rec['after']['gpus'] = rec['after']['gpus'][:3]
    assert judge.failures(_h(rec), None) == [
        ('GPU 3', 'lost during the run: listed before the benchmark '
                  '(00000000:00:09.0, GPU-9084251a-5561-d5db-a4da-'
                  'cef1b0f762a5), not after it')]


# -- tolerant reading ---------------------------------------------------------

def _with_inforom(text):
    warning = _nv('inforom_warning_gpu_operator20.txt').replace(
        '0000:B3:00.0', '0000:00:08.0')
    return warning + text


def test_an_inforom_warning_keeps_every_gpu_and_names_gpu_2(tmp_path):
    text = _with_inforom(_nv('h200x4_ident.csv'))
    assert len(nvidia.gpus(text)) == 4
    assert nvidia.warnings(text) == [
        ('0000:00:08.0', 'WARNING: infoROM is corrupted')]
    stage = _stage(tmp_path, before=text, before_rc='14', after=text,
                   after_rc='14')
    rec = probe.read(str(stage))
    assert len(rec.before.gpus) == 4
    assert judge.failures(_h(rec), dict(H200X4, nvlink=None)) == [
        ('GPU 2', 'infoROM corrupted (nvidia-smi: WARNING: infoROM is '
                  'corrupted)')]


@pytest.mark.parametrize('name', ['evil,name', 'a"quote', "it's",
                                  'two\nlines', 'x, 1, y, 5 MiB', 'u\u2028v',
                                  'n\x85l\rr'])
def test_a_process_name_of_any_shape_fails_nothing(tmp_path, name):
    apps = _nv('h200x4_apps_idle.csv') + \
        f'GPU-f7da5474-6b1c-c5dc-eec5-03cfcf8c0985, 4242, {name}, 600 MiB\n'
    (app,) = nvidia.apps(apps)
    assert app['pid'] == 4242 and app['memory_mib'] == 600
    assert app['uuid'] == 'GPU-f7da5474-6b1c-c5dc-eec5-03cfcf8c0985'
    text = _nv('h200x4_ident.csv')
    stage = _stage(tmp_path, before=text, after=text, before_apps=apps)
    rec = probe.read(str(stage))
    assert judge.failures(_h(rec), dict(H200X4, nvlink=None)) == []
    (note,) = judge.notes(_h(rec))
    assert note[0] == 'GPU 2' and '(pid 4242), held 600 MiB' in note[1]


def test_a_process_without_a_pid_keeps_the_record_readable(tmp_path):
    """nvidia-smi prints [N/A] for a process it cannot see into (the
    real idle table, one row's pid and memory changed so)."""
    apps = _nv('h200x4_apps_idle.csv') + \
        'GPU-f7da5474-6b1c-c5dc-eec5-03cfcf8c0985, [N/A], x, [N/A]\n'
    text = _nv('h200x4_ident.csv')
    rec = probe.read(str(_stage(tmp_path, before=text, after=text,
                                before_apps=apps)))
    assert not rec.unreadable and rec.before.apps[0].pid is None
    assert judge.notes(rec) == [('GPU 2', 'another process, x (pid None), '
                                 'held memory on GPU 2 before the benchmark '
                                 'started')]


def test_an_exception_reading_the_probe_files_is_a_named_finding(tmp_path,
                                                                  monkeypatch):
    stage = _stage(tmp_path, before=_nv('h200x4_ident.csv'),
                   after=_nv('h200x4_ident.csv'))

    def broken(text, lenient=False):
        raise RecursionError('deep')
    monkeypatch.setattr(nvidia, 'gpus', broken)
    rec = probe.read(str(stage))
    assert judge.failures(_h(rec), H200X4)[0] == (
        '', 'nvidia-smi: probe output unreadable (RecursionError)')
    monkeypatch.setattr(probe, '_keys', broken)
    rec = probe.read(str(stage))
    assert judge.failures(_h(rec), H200X4) == [
        ('', 'probe output unreadable (RecursionError: deep)')]


def _stage(tmp_path, **files):
    stage = tmp_path / 'stage'
    stage.mkdir(exist_ok=True)
    (stage / 'hpcval_health_node.txt').write_text(
        'host=vm\ntool=nvidia-smi\nstart=1\nkmsg=0\nkernel=6.8\n'
        'kmsg_rc=0\nend=2\n')
    for key, text in files.items():
        phase, _, what = key.partition('_')
        name = f'{phase}.txt' + ('.rc' if what == 'rc' else '') \
            if what in ('', 'rc') else f'{phase}_{what}.txt'
        (stage / f'hpcval_health_{name}').write_text(
            text + ('\n' if what == 'rc' else ''))
    for phase in ('before', 'after'):
        rc = stage / f'hpcval_health_{phase}.txt.rc'
        if not rc.exists():
            rc.write_text('0\n')
    return stage


# -- the probe script against replayed tools ----------------------------------

_FAKE_SMI = r'''#!/bin/bash
# nvidia-smi replaying the 4 x H200 node's outputs
case "$1" in
nvlink) case "$2" in -s) cat {nv}/nvlink_s.txt ;;
        -e) cat {nv}/nvlink_e.txt ;; esac; exit 0 ;;
-q) # as the real tool: no -d PCIE (driver 580, lent H100, 2026-12-07)
    [ $# = 1 ] || {{ echo "Failed to parse --display/-d flags"; exit 2; }}
    [ -n "$NO_Q" ] && {{ echo "Unable to determine the device handle for" \
    "GPU 0000:00:07.0: Unknown Error"; exit 15; }}
    # cut short before the last GPU's block: a truncated output
    [ -n "$CUT_Q" ] && {{ sed '/^GPU 00000000:00:09.0/,$d' {nv}/smi_q.txt
        exit 0; }}
    cat {nv}/smi_q.txt; exit 0 ;;
--query-compute-apps=*) cat {nv}/compute_apps.txt; exit 0 ;;
--query-gpu=*)
    [ -n "$HANG" ] && exec sleep 300
    fields=${{1#--query-gpu=}}
    for f in ${{fields//,/ }}; do
        if grep -qx "$f" {refused} 2>/dev/null; then
            echo "Field \"$f\" is not a valid field to query."; echo
            exit 2
        fi
    done
    echo "$fields" > {asked}
    cat {nv}/ident.txt; exit 0 ;;
esac
exit 0
'''


def _run_probe(tmp_path, refused=(), hang=False, limit=None, no_q=False,
               cut_q=False):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (tmp_path / 'refused').write_text(''.join(f'{f}\n' for f in refused))
    (bindir / 'nvidia-smi').write_text(_FAKE_SMI.format(
        nv=X4 / 'tools', refused=tmp_path / 'refused',
        asked=tmp_path / 'asked'))
    (bindir / 'nvidia-smi').chmod(0o755)
    system = '/usr/bin:/bin'
    if any(shutil.which(t, path=system) for t in probe.TOOLS):
        pytest.skip(f'a GPU tool is installed in {system}')
    stage = tmp_path / 'stage'
    stage.mkdir()
    probe.write(str(stage))
    env = {**os.environ, 'PATH': f'{bindir}{os.pathsep}{system}'}
    env.pop('HPCVAL_PROBE_TIMEOUT', None)
    if hang:
        env['HANG'] = '1'
    if no_q:
        env['NO_Q'] = '1'
    if cut_q:
        env['CUT_Q'] = '1'
    if limit:
        env['HPCVAL_PROBE_TIMEOUT'] = str(limit)
    before, trap = probe.commands(False)
    t0 = time.monotonic()
    subprocess.run(['bash', '-c', f'{before}\n{trap}\ntrue\n'], cwd=stage,
                   env=env, check=True, timeout=120)
    return probe.read(str(stage)), time.monotonic() - t0, tmp_path / 'asked'


def test_the_probe_reads_the_h200_nodes_gpus_and_nvlinks(tmp_path):
    rec, _, _ = _run_probe(tmp_path)
    assert len(rec.after.gpus) == 4
    assert rec.before.nvlink.status['3']['17'] == 26.562
    assert rec.after.pcie_replays == {'00000000:00:06.0': 0,
                                      '00000000:00:07.0': 1,
                                      '00000000:00:08.0': 0,
                                      '00000000:00:09.0': 0}
    assert judge.failures(_h(rec), H200X4) == []


def test_unread_pcie_replays_fail_the_node(tmp_path):
    """`nvidia-smi -q` failing while the GPU query works: the
    replays are not judged, so the node is not passed."""
    rec, _, _ = _run_probe(tmp_path, no_q=True)
    assert len(rec.after.gpus) == 4 and rec.after.pcie_replays == {}
    why = ('nvidia-smi -q failed (exit 15): Unable to determine the '
           'device handle for GPU 0000:00:07.0: Unknown Error')
    assert judge.failures(_h(rec), H200X4) == [
        ('', f'PCIe replays not read {phase} the benchmark: {why}')
        for phase in ('before', 'after')]


def test_a_gpu_missing_from_the_pcie_output_fails_named(tmp_path):
    """`nvidia-smi -q` cut before GPU 3's block: the other three GPUs' replays
    are kept, and GPU 3, whose counter nobody read, fails the node."""
    rec, _, _ = _run_probe(tmp_path, cut_q=True)
    assert len(rec.after.pcie_replays) == 3
    why = ('nvidia-smi -q printed no "Replays Since Reset" line of '
           'GPU 3 (00000000:00:09.0)')
    assert judge.failures(_h(rec), H200X4) == [
        ('', f'PCIe replays not read {phase} the benchmark: {why}')
        for phase in ('before', 'after')]


def test_a_driver_refusing_fields_loses_only_those(tmp_path):
    """R535 knows no clocks_event_reasons*: each refused field is dropped
    alone (the active reasons asked by their older name); the remapped
    rows and retired pages are still asked."""
    refused = [f for f in nvidia.FIELDS if f.startswith('clocks_event')]
    rec, _, asked = _run_probe(tmp_path, refused=refused)
    fields = asked.read_text().strip().split(',')
    assert not set(refused) & set(fields)
    assert 'clocks_throttle_reasons.active' in fields
    for f in ('remapped_rows.pending', 'remapped_rows.failure',
              'retired_pages.pending',
              'ecc.errors.uncorrected.volatile.total'):
        assert f in fields
    assert rec.before.rc == 0 and len(rec.before.gpus) == 4


def test_a_hanging_nvidia_smi_ends_the_probe_within_its_limit(tmp_path):
    rec, took, _ = _run_probe(tmp_path, hang=True, limit=2)
    # one call waits out the limit; every later one is not started
    assert took < 15, took
    found = judge.failures(_h(rec), H200X4)
    assert found[0] == ('', 'nvidia-smi timed out after 2 s (a GPU that '
                            'fell off the bus hangs its tool)')


# -- through hpcval verdict ---------------------------------------------------

@pytest.fixture
def site(tmp_path, monkeypatch):
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    text = (H100 / 'reports' / 'local.yaml').read_text()
    text = text.replace('gpus: 1', 'gpus: 4').replace(
        'model: H100 80GB HBM3', 'model: H200').replace(
        'memory_gib: 80', 'memory_gib: 140\n    nvlink: {links: 18, gbs: '
                          '26.562}')
    (refs / 'local.yaml').write_text(text)
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    return refs


def _verdict(capsys, *args):
    status = cli.main(['verdict', '--allow-unjudged', *args])
    return status, capsys.readouterr().out


def test_the_verdict_header_counts_the_gpus(tmp_path, site, capsys):
    status, out = _verdict(capsys, _report_with(tmp_path, _record()))
    assert status == 0, out
    assert 'on 1 node(s), 4 GPUs: vm' in out
    assert ('gpus node vm: 4 x NVIDIA H200 (VBIOS 96.00.A5.00.1A): '
            'GPU-28f4c570-4492-e6ab-5c81-b243191cba85 ') in out
    assert 'FAIL' not in out and 'INFO' not in out


def test_information_is_shown_once_and_never_fails(tmp_path, site, capsys):
    rec = _record()
    rec['kernel_events'] = kernel_log.events(
        _kernel('xid13_application_gpud.txt').replace('0000:38:00',
                                                      '0000:00:06') +
        _kernel('aer_correctable_popos3363.txt'))
    rec['kernel_log'] = ''
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 0, out
    xid = [l for l in out.splitlines() if 'INFO node vm GPU 0: Xid 13' in l]
    assert len(xid) == 1 and '(3 times)' in xid[0], out
    assert out.count('INFO node vm PCI 0000:00:00.0: PCIe AER corrected') \
        == 1
    status = cli.main(['verdict', '--allow-unjudged', '--format', 'json',
                       _report_with(tmp_path, rec)])
    data = json.loads(capsys.readouterr().out)
    (part,) = data['partitions']
    assert len(part['infos']) == 2
    assert part['gpus']['vm'][3]['serial'] == '1654124046712'


def test_a_throttled_gpu_is_one_line(tmp_path, site, capsys):
    rec = _record()
    for phase in ('before', 'after'):
        rec[phase]['gpus'][1]['throttle'] = ['hw_slowdown']
    rec['after']['gpus'][1]['throttle_us'] = dict(
        rec['before']['gpus'][1]['throttle_us'], hw_thermal_slowdown=3200000)
    rec['samples']['1']['throttle'] = {'hw_slowdown': 0.75}
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1
    lines = [l for l in out.splitlines() if l.startswith('  FAIL node vm')]
    assert lines == [
        '  FAIL node vm GPU 1: HW slowdown active before and after the '
        'benchmark, 75% of the run, 41 C',
        '  FAIL node vm GPU 1: HW thermal slowdown active 3.2 s by its '
        'counter'], out


def test_references_file_inventory_expecting_more_gpus(tmp_path, capsys):
    """``hpcval verdict REPORT --references FILE``: FILE's inventory judges
    the node as the installed references would."""
    text = (H100 / 'reports' / 'local.yaml').read_text()
    refs = tmp_path / 'local.yaml'
    refs.write_text(text.replace('gpus: 1', 'gpus: 8'))
    refs.chmod(0o644)
    status = cli.main(['verdict', '--allow-unjudged', '--references',
                       str(refs), str(H100 / 'reports' / 'healthy.json')])
    out = capsys.readouterr().out
    assert status == 1, out
    assert 'FAIL node vm: 1 of 8 GPUs (expected 8 x H100 80GB HBM3)' in out


@pytest.mark.parametrize('field, value, line, fails', [
    ('ecc_uncorrected', 2, '2 uncorrectable ECC error(s) since the driver '
                           'loaded', True),
    ('remap_pending', True, 'row remapping pending (the GPU needs a reset)',
     True),
    ('remap_failure', True, 'row remapping failed', True),
    # R535 on a V100: page retirement instead of row remapping
    ('retired_pending', True, 'page retirement pending (the GPU needs a '
                              'reset)', True),
    ('ecc_corrected', 7, '7 correctable ECC error(s) during the benchmark',
     False),
])
def test_memory_faults_of_one_gpu_of_four(field, value, line, fails):
    """The real record, one field of GPU 1 after the benchmark changed."""
    rec = _record()
    rec['after']['gpus'][1][field] = value
    found = judge.failures(_h(rec), H200X4)
    if fails:
        assert found == [('GPU 1', line)]
    else:
        assert found == [] and judge.notes(_h(rec)) == [('GPU 1', line)]


def test_an_uncorrected_non_fatal_aer_report_fails():
    """gpu-burn#1's fatal report, its severity word changed."""
    line = _kernel('xid79_aer_fatal_gpuburn1.txt').splitlines()[4].replace(
        'Uncorrected (Fatal)', 'Uncorrected (Non-Fatal)')
    (ev,) = kernel_log.events(line)
    assert (ev['code'], ev['fatal']) == ('Non-Fatal', True)
    rec = _record()
    rec['kernel_events'] = [ev]
    assert judge.failures(_h(rec), H200X4) == [
        ('PCI 0000:00:02.0', 'PCIe AER uncorrectable (non-fatal) error in '
                             f'the kernel log: {line}')]


@pytest.mark.parametrize('body, lines', [
    ('cat {x4}/tools/ident.txt >/dev/null; '
     'printf "NVIDIA H200, 580.159.04\\n%.0s" 1 2 3 4',
     ['gpu=NVIDIA H200 x4', 'driver=580.159.04']),
    ('echo "No devices were found"; exit 6', []),
    ('exec sleep 300', []),
])
def test_provenance_never_takes_an_error_as_the_gpu(tmp_path, body, lines):
    """The run's provenance names the GPUs only from an answer of exit 0
    within the time limit: never 'No devices were found x1'."""
    from hpcval import provenance
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(f'#!/bin/sh\n{body.format(x4=X4)}\n')
    (bindir / 'nvidia-smi').chmod(0o755)
    cmd = provenance.command().replace('timeout -k 5 30', 'timeout -k 1 2')
    t0 = time.monotonic()
    subprocess.run(['bash', '-c', cmd], cwd=tmp_path, timeout=60,
                   env={**os.environ, 'PATH': f'{bindir}:/usr/bin:/bin'})
    assert time.monotonic() - t0 < 10
    text = (tmp_path / provenance.FILE).read_text()
    assert [l for l in text.splitlines()
            if l.startswith(('gpu=', 'driver='))] == lines


def test_a_vgpu_guests_na_replay_counter_is_not_judged(tmp_path):
    """A vGPU guest's real ``nvidia-smi -q`` prints ``Replays Since Reset :
    N/A`` (tests/fixtures/health/nvidia/SOURCE.md): the GPU has no such
    counter, which is neither a failed read nor a missing line."""
    text = _nv('vgpu_rtxa6000_q_cudaerror4vgpu.txt')
    assert nvidia.pcie_replays(text) == {'00000000:00:10.0': None}
    (tmp_path / 'hpcval_health_before_pcie.txt').write_text(text)
    (tmp_path / 'hpcval_health_before_pcie.txt.rc').write_text('0\n')
    gpus = [{'index': 0, 'bus_id': '00000000:00:10.0'}]
    assert probe._pcie_replays(str(tmp_path), 'before', gpus) == \
        {'pcie_replays': {}, 'pcie_error': ''}
    # a counter that is no count is a GPU not read
    (tmp_path / 'hpcval_health_before_pcie.txt').write_text(text.replace(
        'Replays Since Reset               : N/A',
        'Replays Since Reset               : -1'))
    assert probe._pcie_replays(str(tmp_path), 'before', gpus)[
        'pcie_error'].endswith('line of GPU 0 (00000000:00:10.0)')
