"""A real ``reframe -r --system local``: the README's first command.

The run itself is the session fixture ``local_run`` (tests/conftest.py),
which the report tests read as well.  The MPI ping-pong and CPU
memory-bandwidth checks must run and give finite values that ReFrame judged
against references/local.yaml; whether this host met the references is
recorded (printed), not asserted: no test depends on how fast the host is.
BabelStream needs its upstream source: offline it must be skipped with a
reason, not fail.
"""
import math
import shutil

import pytest

from rfmrun import by_name, cases, perf


def _ran(tc):
    """Passed, or failed only where this host missed a reference."""
    assert tc['result'] == 'pass' or tc['fail_phase'] == 'performance', \
        (tc['display_name'], tc['fail_phase'], tc['fail_reason'])


def _judged(tc, metrics):
    """Finite, positive, and judged against a reference; the figure and
    ReFrame's verdict are printed (pytest -rA shows them)."""
    values = perf(tc)
    for name in metrics:
        value, ref, *_, result = values[name]
        assert math.isfinite(value) and value > 0, (name, value)
        assert ref and ref > 0, f'{name} has no reference'
        assert result in ('pass', 'fail'), (name, values[name])
        print(f'{tc["display_name"]} {name}: {value} {values[name][4]} '
              f'(reference {ref}): {result}')


def test_run_succeeds(local_run):
    proc, report, _ = local_run
    failed = [tc for tc in cases(report) if tc['result'] == 'fail']
    for tc in failed:
        _ran(tc)
    assert (proc.returncode == 0) == (failed == []), proc.stdout[-3000:]
    assert report['session_info']['num_failures'] == len(failed)


def test_pingpong_on_node(local_run):
    [tc] = by_name(local_run[1], 'Mpi4pyPingPongCheck %placement=on_node')
    _ran(tc)
    _judged(tc, ['latency_8B', 'latency_1KiB', 'bandwidth_4MiB'])
    # spread is kept, logged without a reference
    assert math.isfinite(perf(tc)['latency_8B_std'][0])


@pytest.mark.skipif(shutil.which('likwid-bench') is None,
                    reason='likwid not installed (bootstrap.sh installs it '
                           'as root on Debian)')
@pytest.mark.parametrize('kernel', ['copy', 'stream'])
def test_likwid_bandwidth(local_run, kernel):
    [tc] = by_name(local_run[1], f'LikwidBenchCheck %kernel={kernel}')
    _ran(tc)
    _judged(tc, [f'{kernel}_bandwidth'])


def test_babelstream_skips_with_reason_or_passes(local_run):
    proc, report, _ = local_run
    for tc in by_name(report, 'BabelStream'):
        if tc['result'] != 'skip':
            _ran(tc)
        if tc['result'] == 'skip':
            # the JSON report keeps no skip reason; the console does
            assert 'unreachable and no -S src_mirror' in proc.stdout


def test_no_gpu_checks_on_a_cpu_host(local_run):
    names = {tc['display_name'].split()[0] for tc in cases(local_run[1])}
    if shutil.which('nvidia-smi') is None:
        assert 'BabelStreamCudaCheck' not in names
