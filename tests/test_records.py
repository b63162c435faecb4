"""The records a check leaves beside its figures (hpcval.records): what
the check writes is what every reader decodes, and a record of another
shape in a report is left out, never half read."""
import json
import pathlib

from hpcval import records
from hpcval.benchmarks import nodeuse
from hpcval.publish import results

FIX = pathlib.Path(__file__).resolve().parent / 'fixtures'
REPORT = FIX / 'captured' / 'h100_health' / 'reports' / 'healthy.json'
LOAD = FIX / 'captured' / 'nodeload' / 'shared_host_3yes.txt'


def _loaded(tmp_path, **fields):
    report = json.loads(REPORT.read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            tc.update(fields)
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report))
    return results.load([str(path)])


def test_the_node_load_written_is_the_one_read(tmp_path):
    written = nodeuse.read(LOAD.read_text())
    loaded = _loaded(tmp_path, hpcval_node_load=records.builtins(written))
    assert {c.extras['node_load'] for c in loaded.cases} == {written}


def test_records_of_another_shape_are_left_out(tmp_path):
    loaded = _loaded(tmp_path, hpcval_node_load={'busy': 'yes'},
                     hpcval_components={'copy': 5},
                     hpcval_provenance=['gpu'])
    for case in loaded.cases:
        assert not {'node_load', 'components', 'provenance'} & \
            set(case.extras)
    assert loaded.cases and not loaded.problems


def test_the_real_records_decode(tmp_path):
    loaded = results.load([str(REPORT)])
    provs = [c.provenance for c in loaded.cases]
    assert all(p and p['gpu'] == 'NVIDIA H100 80GB HBM3 x1' for p in provs)
    assert any(c.extras.get('components') for c in loaded.cases)


# -- hpcval_health ------------------------------------------------------------

#: every captured report with health records: 1 x H100, 4 x H100, 2 x H200,
#: the burn-ins (tests/fixtures/captured/*/README.md say where each ran)
CAPTURED = sorted(p for d in ('h100_health', 'h100x4', 'h200x2', 'burnin')
                  for p in (FIX / 'captured' / d).rglob('*.json')
                  if 'hpcval_health' in p.read_text())


def test_every_captured_health_record_decodes_and_is_written_back():
    assert len(CAPTURED) >= 20
    loaded = results.load([str(p) for p in CAPTURED], on_error='reject')
    healths = [c.extras['health'] for c in loaded.cases
               if 'health' in c.extras]
    assert len(healths) >= 60
    assert all(isinstance(h, records.Health) for h in healths)
    assert {h.tool for h in healths} == {'nvidia-smi'}
    assert all(records.decode('health', records.builtins(h)) == h
               for h in healths)


def test_a_replay_of_an_old_report_has_no_health_record(tmp_path):
    """Reports of replays (docs/comparison) recorded ``{}``: no record,
    nothing unreadable."""
    loaded = results.load([str(FIX.parent.parent / 'docs' / 'comparison' /
                               'reports' / 'kestrel-replay.json')],
                          on_error='reject')
    assert loaded.cases and not any('health' in c.extras
                                    for c in loaded.cases)


def _health(mutate):
    report = json.loads(REPORT.read_text())
    rec = next(tc['hpcval_health'] for tc in report['runs'][0]['testcases']
               if tc.get('hpcval_health'))
    mutate(rec)
    return rec


def _cut(rec):
    # a record cut short: its GPU list and what follows it gone
    del rec['before']['gpus'][1:], rec['before']['gpus'][0]['index']
    for key in [k for k in rec if k not in ('node', 'tool', 'before')]:
        del rec[key]


def _mistyped(rec):
    rec['after']['gpus'][0]['index'] = '0'


def _unknown(rec):
    rec['after']['gpus'][0]['healthy'] = True


def test_a_health_record_of_another_shape_is_unreadable(tmp_path):
    """Truncated, mistyped or with a field hpcval never writes: the case
    is left out, named by file and test case, never judged."""
    for mutate, why in ((_cut, 'Object missing required field `index` - '
                               'at `$.before.gpus[0]`'),
                        (_mistyped, 'Expected `int`, got `str` - at '
                                    "`$.after.gpus[0].index`; value '0'"),
                        (_unknown, 'Object contains unknown field '
                                   '`healthy` - at `$.after.gpus[0]`')):
        loaded = _loaded(tmp_path, hpcval_health=_health(mutate))
        assert not loaded.cases
        assert loaded.problems[0].reason == (
            'runs[0].testcases[0] (NcclTestsSource ~local): unreadable '
            f'health record ({why})')
        assert loaded.problems[0].source == str(tmp_path / 'report.json')
        assert len(loaded.damaged) == len(loaded.problems)
