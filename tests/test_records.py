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
