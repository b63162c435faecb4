"""A real ``reframe -r --system local``: the README's first command.

The run itself is the session fixture ``local_run`` (tests/conftest.py),
which the report tests read as well.  The MPI ping-pong and CPU
memory-bandwidth checks must pass with finite values judged against
references/local.yaml.  BabelStream needs its
upstream source: offline it must be skipped with a reason, not fail.
"""
import math
import shutil

import pytest

from rfmrun import by_name, cases, perf


def _judged_and_passed(tc, metrics):
    values = perf(tc)
    for name in metrics:
        value, ref, *_ , result = values[name]
        assert math.isfinite(value) and value > 0, (name, value)
        assert ref and ref > 0, f'{name} has no reference'
        assert result == 'pass', (name, values[name])


def test_run_succeeds(local_run):
    proc, report, _ = local_run
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report['session_info']['num_failures'] == 0


def test_pingpong_on_node(local_run):
    [tc] = by_name(local_run[1], 'Mpi4pyPingPongCheck %placement=on_node')
    assert tc['result'] == 'pass'
    _judged_and_passed(tc, ['latency_8B', 'latency_1KiB', 'bandwidth_4MiB'])
    # spread is kept, logged without a reference
    assert math.isfinite(perf(tc)['latency_8B_std'][0])


@pytest.mark.skipif(shutil.which('likwid-bench') is None,
                    reason='likwid not installed (bootstrap.sh installs it '
                           'as root on Debian)')
@pytest.mark.parametrize('kernel', ['copy', 'stream'])
def test_likwid_bandwidth(local_run, kernel):
    [tc] = by_name(local_run[1], f'LikwidBenchCheck %kernel={kernel}')
    assert tc['result'] == 'pass'
    _judged_and_passed(tc, [f'{kernel}_bandwidth'])


def test_babelstream_skips_with_reason_or_passes(local_run):
    proc, report, _ = local_run
    for tc in by_name(report, 'BabelStream'):
        assert tc['result'] in ('pass', 'skip'), tc['fail_reason']
        if tc['result'] == 'skip':
            # the JSON report keeps no skip reason; the console does
            assert 'unreachable and no -S src_mirror' in proc.stdout


def test_no_gpu_checks_on_a_cpu_host(local_run):
    names = {tc['display_name'].split()[0] for tc in cases(local_run[1])}
    if shutil.which('nvidia-smi') is None:
        assert 'BabelStreamCudaCheck' not in names
