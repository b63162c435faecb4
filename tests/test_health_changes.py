"""What changed since the baseline (driver, VBIOS, kernel, GPU serial) and
between the nodes of one verdict, shown as CHANGED (a failure where the
site pins it), and the inventory ``hpcval calibrate`` writes from the
baseline runs' health records.  On the H100 node's real report and probe
files (tests/fixtures/captured/h100_health)."""
import copy
import json
import shutil
import types
import uuid
from pathlib import Path

import pytest
import yaml

from hpcval import cli, records, references
from hpcval.health import inventory, judge, probe
from hpcval.health import report as health_report
from hpcval.publish import calibrate as cal, results
from hpcval.references import ReferenceFileError

FIX = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
ROOT = Path(__file__).parents[1]
# the healthy report's GPU (another H100 card than the stage captures')
VBIOS, SERIAL = '96.00.DA.00.0C', '1752524009547'


@pytest.fixture
def site(tmp_path, monkeypatch):
    """The H100 node's site references; ``baseline(text)`` adds lines to
    its inventory entry."""
    refs = tmp_path / 'site' / 'references'
    refs.mkdir(parents=True)
    shutil.copy(FIX / 'reports' / 'local.yaml', refs / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))

    def add(lines):
        path = refs / 'local.yaml'
        path.write_text(path.read_text() + lines)
    return add


def _verdict(capsys, *args):
    status = cli.main(['verdict', '--allow-unjudged', *args,
                       str(FIX / 'reports' / 'healthy.json')])
    return status, capsys.readouterr().out


def test_a_new_vbios_is_information(site, capsys):
    site('    baseline: {driver: 580.159.04, vbios: 96.00.74.00.0D}\n')
    status, out = _verdict(capsys)
    assert status == 0, out
    assert (f'  CHANGED node vm GPU 0: VBIOS {VBIOS}, baseline '
            f'96.00.74.00.0D') in out
    assert 'driver' not in out.split('CHANGED')[1].splitlines()[0]


def test_a_pinned_vbios_fails_the_node(site, capsys):
    site('    baseline: {driver: 580.159.04, vbios: 96.00.74.00.0D}\n'
         '    pin: [vbios]\n')
    status, out = _verdict(capsys)
    assert status == 1, out
    assert (f'FAIL node vm GPU 0: VBIOS {VBIOS}, baseline 96.00.74.00.0D '
            f'(pinned)') in out
    assert 'CHANGED' not in out          # a failure, not shown twice


def test_a_swapped_card_is_named_by_its_serial(site, capsys):
    site("    baseline:\n      serials: {vm: ['1752624014320']}\n")
    status, out = _verdict(capsys)
    assert status == 0, out
    assert (f'CHANGED node vm GPU 0: serial {SERIAL}, not one of the '
            f"node's 1 at calibration (another card)") in out


def test_same_as_baseline_shows_nothing(site, capsys):
    site(f"    baseline:\n      driver: 580.159.04\n      vbios: {VBIOS}\n"
         f"      serials: {{vm: ['{SERIAL}']}}\n    pin: [driver, vbios, "
         f"serial]\n")
    status, out = _verdict(capsys)
    assert status == 0, out
    assert 'CHANGED' not in out


@pytest.mark.parametrize('block, message', [
    ('    pin: [vbios]\n', r'pin: needs a baseline'),
    ('    baseline: {vbios: x}\n    pin: [bios]\n', r'pin: must be a list'),
    ('    baseline: {bios: x}\n', r'baseline: unknown key\(s\) bios'),
    ('    baseline: {serials: [a, b]}\n', r'baseline.serials: must map'),
])
def test_a_broken_baseline_names_file_and_key(tmp_path, block, message):
    path = tmp_path / 'local.yaml'
    path.write_text((FIX / 'reports' / 'local.yaml').read_text() + block)
    with pytest.raises(ReferenceFileError,
                       match=rf'local.yaml: inventory\[0\].{message}'):
        references.load(str(path))


# -- between the nodes of one verdict ---------------------------------------

def _record(node, vbios=None, driver=None, kernel=None):
    rec = records.builtins(probe.read(str(FIX / 'stage' / 'healthy')))
    rec['node'], rec['kernel'] = node, kernel or rec.get('kernel', '')
    for snap in (rec['before'], rec['after']):
        for gpu in snap['gpus']:
            gpu['vbios'] = vbios or gpu['vbios']
            gpu['driver'] = driver or gpu['driver']
    return records.decode('health', rec)


def _case(rec):
    return types.SimpleNamespace(system='local', partition='default',
                                 extras={'health': rec})


def test_the_node_unlike_the_others_is_named():
    j = health_report.Judge(references.ReferenceSet())
    recs = [_record('n1'), _record('n2'),
            _record('n3', vbios='96.00.99.00.01', driver='575.57.08'),
            _record('n4')]
    for rec in recs:
        assert j.failures(_case(rec), rec.node) == []
        assert j.changes(_case(rec), rec.node) == []
    lines = [(n, c, t) for _, n, c, t in j.between_nodes()]
    assert lines == [
        ('n3', '', 'driver 575.57.08, other nodes 580.159.04'),
        ('n3', 'GPU 0', 'VBIOS 96.00.99.00.01, other nodes 96.00.DA.00.0C')]


def test_one_node_has_no_others():
    j = health_report.Judge(references.ReferenceSet())
    j.changes(_case(_record('n1', vbios='x')), 'n1')
    assert j.between_nodes() == []


def test_changes_of_a_record():
    rec = _record('vm', kernel='6.8.0-45-generic')
    base = {'gpus': 1, 'baseline': {'kernel': '6.8.0-31-generic',
                                    'driver': '575.57.08'}}
    assert judge.changes(rec, base) == [
        ('', 'kernel 6.8.0-45-generic, baseline 6.8.0-31-generic', 'kernel'),
        ('', 'driver 580.159.04, baseline 575.57.08', 'driver')]
    assert judge.changes(rec, {'gpus': 1}) == []


# -- hpcval calibrate writes the inventory ----------------------------------

def _runs(tmp_path, n=3):
    """``n`` copies of the H100 node's healthy report as separate
    sessions, loaded."""
    report = json.loads((FIX / 'reports' / 'healthy.json').read_text())
    paths = []
    for i in range(n):
        r = copy.deepcopy(report)
        r['session_info']['uuid'] = str(uuid.UUID(int=i + 1))
        r['session_info']['time_start_unix'] += 100 * i
        path = tmp_path / f'run{i}.json'
        path.write_text(json.dumps(r))
        paths.append(str(path))
    return results.load(paths, on_error='reject')


def _calibrate(tmp_path, text):
    refs = tmp_path / 'refs'
    refs.mkdir(exist_ok=True)
    (refs / 'local.yaml').write_text(text)
    return cal.calibrate(_runs(tmp_path).samples, 'local',
                         references.load_dir(str(refs)), ref_dir=str(refs),
                         min_samples=2, k=3, floor=0.05, keep_outliers=True,
                         accept_performance_failures=True)


def test_calibrate_writes_the_inventory(tmp_path):
    builtin = (ROOT / 'references' / 'local.yaml').read_text()
    first = _calibrate(tmp_path, builtin)
    (entry,) = yaml.safe_load(first.text)['inventory']
    assert entry == {
        'partition': 'default', 'gpus': 1, 'vendor': 'nvidia',
        'model': 'NVIDIA H100 80GB HBM3', 'memory_gib': 79,
        'pcie': {'gen': 5, 'width': 16},
        'baseline': {'driver': '580.159.04', 'vbios': VBIOS,
                     'serials': {'vm': [SERIAL]}},
        'source': 'hpcval calibrate: the GPU tool on vm in the baseline '
                  'runs, 2026-11-25'}
    # a second calibration rewrites its own block, not a second one
    again = _calibrate(tmp_path, first.text)
    assert again.text.count('\ninventory:') == 1
    assert 'inventory rewritten from the baseline runs' in ' '.join(
        again.notes)
    # and the file loads, its inventory validated
    assert inventory.validate('x', yaml.safe_load(again.text)['inventory'])


def test_calibrate_keeps_an_inventory_written_by_hand(tmp_path):
    text = (FIX / 'reports' / 'local.yaml').read_text()
    head, _, _ = text.partition('\ninventory:')
    inv = text[len(head):]
    entries_at = head.index('\nentries:')
    by_hand = head[:entries_at] + inv + head[entries_at:] + '\n'
    out = _calibrate(tmp_path, by_hand)
    assert out.text.count('\ninventory:') == 1
    assert 'model: H100 80GB HBM3' in out.text      # the hand-written one
    assert any('kept the inventory written by hand; the baseline runs '
               'show: default: 1 x NVIDIA H100 80GB HBM3' in n
               for n in out.notes)
