"""Every health record the verdict reads is decoded strictly, and what
the node's tools said of a GPU is judged, never ignored: the lent H100
node's real record and probe files (tests/fixtures/captured/h100_health/
README.md), one mutation each, never exit 0.

A value the probe cannot have written is an input error naming report,
field and value (exit 3); a state a tool printed, a sampler file that
cannot be read and a kernel event's own line fail the node (exit 1)."""
import copy
import json
import shutil

import pytest

from hpcval import cli, verdict
from hpcval.health import judge, kernel_log
from test_health import DRIVER_FAILED, FIX, XID_79, _report_with, _stage

HEALTHY = json.loads((FIX / 'reports' / 'healthy.json').read_text())
RECORD = next(tc['hpcval_health'] for run in HEALTHY['runs']
              for tc in run['testcases']
              if tc['name'].startswith('BabelStreamCudaCheck'))


def _site(tmp_path, monkeypatch, inventory):
    """The node's calibrated references, with or without the inventory
    that hpcval calibrate wrote."""
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    text = (FIX / 'reports' / 'local.yaml').read_text()
    if not inventory:
        text = text[:text.index('\ninventory:')] + '\n'
    (refs / 'local.yaml').write_text(text)
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))


@pytest.fixture
def site(tmp_path, monkeypatch):
    _site(tmp_path, monkeypatch, True)


@pytest.fixture(params=['inventory', 'no inventory'])
def either_site(request, tmp_path, monkeypatch):
    _site(tmp_path, monkeypatch, request.param == 'inventory')


def _verdict(capsys, path):
    status = cli.main(['verdict', '--allow-unjudged', path])
    return status, capsys.readouterr().out


def _gpu(**fields):
    def edit(rec):
        rec['after']['gpus'][0].update(fields)
    return edit


def _twice(rec):
    rec['after']['gpus'].append(copy.deepcopy(rec['after']['gpus'][0]))


def _no_driver_line(rec):
    rec['kernel_events'] = [{'kind': 'xid', 'line': 'Xid 79 somewhere',
                             'code': 79, 'fatal': True}]


def _app_memory(rec):
    rec['before']['apps'] = [{'pid': 5504, 'name': 'python3',
                              'memory_mib': float('inf')}]


INPUT_ERRORS = {
    'ECC 1e308': (_gpu(ecc_uncorrected=1e308), 'ecc_uncorrected', '1e+308'),
    'ECC inf': (_gpu(ecc_uncorrected=float('inf')), 'ecc_uncorrected',
                'inf'),
    'ECC nan': (_gpu(ecc_uncorrected=float('nan')), 'ecc_uncorrected',
                'nan'),
    "ECC 'nan'": (_gpu(ecc_uncorrected='nan'), 'ecc_uncorrected', "'nan'"),
    'ECC -1': (_gpu(ecc_uncorrected=-1), 'ecc_uncorrected', '-1'),
    'remap pending Yes': (_gpu(remap_pending='Yes'), 'remap_pending',
                          "'Yes'"),
    'remap failure 1': (_gpu(remap_failure=1), 'remap_failure', '1'),
    'width 8.0': (_gpu(pcie_width=8.0), 'pcie_width', '8.0'),
    'width 12': (_gpu(pcie_width=12), 'pcie_width', '12'),
    "memory '40960'": (_gpu(memory_total_mib='40960'), 'memory_total_mib',
                       "'40960'"),
    'GPU listed twice': (_twice, 'after.gpus[1].index', '0'),
    'event of no driver': (_no_driver_line, 'kernel_events[0].line',
                           "'Xid 79 somewhere'"),
    'process memory inf': (_app_memory, 'before.apps[0].memory_mib', 'inf'),
}


@pytest.mark.parametrize('defect', sorted(INPUT_ERRORS))
def test_a_value_the_probe_never_writes_is_an_input_error(
        tmp_path, site, capsys, defect):
    edit, field, value = INPUT_ERRORS[defect]
    rec = copy.deepcopy(RECORD)
    edit(rec)
    path = _report_with(tmp_path, rec)
    status, out = _verdict(capsys, path)
    assert status == verdict.EXIT_INPUT, out
    line = next(l for l in out.splitlines()
                if 'unreadable health record' in l)
    assert line.startswith(f'  {path}: runs[0].testcases[')
    assert f'{field}`; value {value})' in line, line
    assert 'HEALTHY' not in out


def test_an_xid_79_the_record_calls_not_fatal_fails(tmp_path, site,
                                                    capsys):
    """Severity is the catalogue's, read from the event's own line."""
    rec = copy.deepcopy(RECORD)
    [ev] = kernel_log.events(XID_79)
    rec['kernel_events'] = [dict(ev, fatal=False, what='nothing')]
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1, out
    assert out.count('FAIL node vm GPU 0: Xid 79 (GPU has fallen off the '
                     f'bus) in the kernel log: {XID_79}') == 1, out


def _fields(names, new, files=('before.txt', 'after.txt')):
    """Edits setting each nvidia-smi field of ``names`` to ``new`` in
    every row (hpcval_health_before.txt, after.txt)."""
    def edit(text):
        lines = text.splitlines()
        cols = [c.strip().split(' [')[0] for c in lines[0].split(',')]
        rows = []
        for line in lines[1:]:
            cells = line.split(', ')
            for name in names:
                cells[cols.index(name)] = new
            rows.append(', '.join(cells))
        return '\n'.join([lines[0], *rows]) + '\n'
    return {f: edit for f in files}


# nvidia-smi's query of a GPU it cannot talk to prints its state in the
# fields it cannot read, exit 0 (nvidia-smi(1)); index stays readable
_ALL_BUT_INDEX = ('name', 'uuid', 'serial', 'pci.bus_id', 'memory.total',
                  'ecc.errors.uncorrected.volatile.total',
                  'remapped_rows.pending')
GPU_STATES = {
    '[GPU requires reset]': (_fields(_ALL_BUT_INDEX, '[GPU requires reset]'),
                             '[GPU requires reset] for ecc.errors.'
                             'uncorrected.volatile.total, memory.total, '
                             'name, pci.bus_id and 3 more field(s)'),
    '[GPU is lost]': (_fields(_ALL_BUT_INDEX, '[GPU is lost]', ('after.txt',)),
                      '[GPU is lost] for ecc.errors.uncorrected.volatile.'
                      'total, memory.total, name, pci.bus_id and 3 more '
                      'field(s)'),
    '[Unknown Error] in ECC and remap': (
        _fields(('ecc.errors.uncorrected.volatile.total',
                 'remapped_rows.pending', 'remapped_rows.failure'),
                '[Unknown Error]'),
        '[Unknown Error] for ecc.errors.uncorrected.volatile.total, '
        'remapped_rows.failure, remapped_rows.pending'),
    '[N/A] UUID': (_fields(('uuid',), '[N/A]'), '[N/A] for uuid'),
}


@pytest.mark.parametrize('state', sorted(GPU_STATES))
def test_a_gpu_state_fails_the_gpu_with_or_without_inventory(
        tmp_path, either_site, capsys, state):
    edits, what = GPU_STATES[state]
    rec = _stage(tmp_path, **edits)
    assert rec.before.rc == 0 and rec.after.rc == 0
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1, out
    assert out.count(f'FAIL node vm GPU 0: nvidia-smi printed {what}') == 1, \
        out


def test_n_a_where_a_gpu_has_no_such_value_fails_nothing(tmp_path):
    """The H100's own ``retired_pages.pending`` of [N/A] (no page
    retirement after A100): no state."""
    rec = _stage(tmp_path)
    assert rec.before.gpus[0].retired_pending is None
    assert rec.before.gpus[0].states == {}


def test_a_gpu_the_tool_lists_twice_fails_the_node(tmp_path, site, capsys):
    def twice(text):
        head, row = text.splitlines()[:2]
        return '\n'.join([head, row, row.replace('0, NVIDIA', '1, NVIDIA',
                                                 1)]) + '\n'
    rec = _stage(tmp_path, **{'after.txt': twice})
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1, out
    assert 'FAIL node vm: probe output unreadable (Unreadable: unreadable ' \
        'health record (GPU listed twice (as after.gpus[0]) - at ' \
        '`$.after.gpus[1].uuid`' in out, out


def test_an_unreadable_sampler_file_fails_the_node(tmp_path, site, capsys):
    """The sampler's nvidia-smi failing mid-run: docs/health.md calls a
    probe file that cannot be read a failure of the node."""
    rec = _stage(tmp_path, **{'samples.txt': lambda t: DRIVER_FAILED + '\n'})
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1, out
    assert out.count('FAIL node vm: probe output unreadable: nvidia-smi '
                     f'sampler: {DRIVER_FAILED[:60]}') == 1, out


def test_an_empty_sampler_file_holds_no_samples(tmp_path):
    """A benchmark that ended before the sampler's first line."""
    rec = _stage(tmp_path, **{'samples.txt': lambda t: ''})
    assert rec.samples == {} and not rec.samples_error
    assert judge.failures(rec, None) == []


def test_a_tool_message_is_cut_to_its_stated_length(tmp_path, site, capsys):
    long = DRIVER_FAILED + ' ' + 'x' * 5000
    rec = copy.deepcopy(RECORD)
    rec['before'] = {'rc': 9, 'message': long}
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status == 1, out
    [line] = [l for l in out.splitlines()
              if l.startswith('  FAIL node vm: nvidia-smi failed')]
    said = line.split('(exit 9): ', 1)[1]
    assert len(said) == judge.MESSAGE_CHARS and long.startswith(said), line


def test_the_stage_of_a_sampler_without_a_file_is_unchanged(tmp_path):
    """No samples file (NodeHealthCheck runs no sampler): no error."""
    src = tmp_path / 'src'
    shutil.copytree(FIX / 'stage' / 'healthy', src)
    (src / 'hpcval_health_samples.txt').unlink()
    from hpcval.health import probe
    rec = probe.read(str(src))
    assert rec.samples == {} and not rec.samples_error
