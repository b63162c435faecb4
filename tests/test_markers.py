"""The markers that follow what a test runs (tests/conftest.py): the static
look through helpers, modules and fixtures, and the run-time guard."""
import pytest

import conftest

PROBES = '''
import rfmrun
from rfmrun import reframe
from hpcval.testing.minicluster import MiniCluster

def helper():
    return reframe('-l', tmp_path=None)

def via_helper():
    return helper()

def via_module():
    return rfmrun.reframe

def local_import():
    from rfmrun import reframe as run
    return run

def in_a_lambda():
    return lambda: helper()

def cluster(tmp):
    return MiniCluster(tmp)

def same_name_other_thing():
    import reframe as rfm          # the ReFrame package, not rfmrun's
    return rfm.__name__

def nothing():
    return len('reframe')

def hpcval_run(venv):
    return [str(venv / 'hpcval'), 'run', '-r']

def cluster_cli():
    return ['python', '-m', 'hpcval.testing.minicluster', 'start']
'''


@pytest.fixture(scope='module')
def probes():
    """The probe functions, compiled as if they were a file of tests/."""
    space = {'__name__': 'probes'}
    exec(compile(PROBES, str(conftest.TESTS / 'probes.py'), 'exec'), space)
    return space


@pytest.mark.parametrize('name, kinds', [
    ('helper', {'reframe'}), ('via_helper', {'reframe'}),
    ('via_module', {'reframe'}), ('local_import', {'reframe'}),
    ('in_a_lambda', {'reframe'}), ('cluster', {'minicluster'}),
    ('same_name_other_thing', set()), ('nothing', set()),
    ('hpcval_run', {'reframe'}), ('cluster_cli', {'minicluster'})])
def test_reaches_follows_calls(probes, name, kinds):
    assert conftest._reaches(probes[name]) == kinds


@pytest.mark.parametrize('argv, need', [
    (['/x/.venv/bin/reframe', '-c', 'checks/', '-l'], 'reframe'),
    (['/x/bin/hpcval', 'run', '-r'], 'reframe'),
    (['hpcval', 'verdict', 'report.json'], None),
    (['slurmctld', '-D', '-f', 'slurm.conf'], 'minicluster'),
    (['munged', '--foreground'], 'minicluster'),
    (['python', '-m', 'hpcval.testing.minicluster', 'start'], 'minicluster'),
    (['python', '-m', 'hpcval.testing.minicluster', 'stop'], None),
    (['bash', '-c', 'eval "$(python -m hpcval.testing.minicluster start '
      '--dir x)" && reframe -r'], 'minicluster'),
    (['bash', '-c', '. .venv/bin/activate && {\n  reframe -c checks/ -r'],
     'reframe'),
    (['bash', '-c', 'hpcval run --mode quick --system X'], 'reframe'),
    (['bash', '-c', 'hpcval report --db  # reframe runs'], None),
    ('ls -l', None), ([], None)])
def test_guard_knows_what_a_command_starts(argv, need):
    assert conftest._starts(argv) == need


def test_this_session_marks_by_fixture(request):
    """Every collected test that uses a minicluster or local-run fixture
    carries the markers, and so does everything slow."""
    for item in request.session.items:
        names = set(item.fixturenames)
        if names & {'minicluster', 'faults', 'minicluster_pingpong'}:
            assert item.get_closest_marker('minicluster'), item.nodeid
        if names & {'local_run', 'failing_smi_run', 'replay_reports',
                     'dry_run'}:
            assert item.get_closest_marker('reframe'), item.nodeid
        if item.get_closest_marker('reframe') or \
                item.get_closest_marker('minicluster'):
            assert item.get_closest_marker('slow'), item.nodeid
