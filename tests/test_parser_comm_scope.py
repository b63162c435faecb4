"""Comm|Scope results parser and the check's metrics, on JSON files and on
broken copies of them.

No GPU was at hand when this was written, so the JSON files are *format*
fixtures (tests/fixtures/captured/comm_scope/README.md): written by the
Google Benchmark library Comm|Scope v0.12.0 bundles (same commit, built
here), from a program registering Comm|Scope's names with fixed manual
times.  They prove the schema (aggregates, run_name, time_unit, raw
bytes_per_second, NaN counters), not any machine's speed.  The console
capture is a real Comm|Scope v0.12.0 run (CUDA 13 build) on a host without
a GPU.  The captured H200 runs are in tests/fixtures/captured/comm_scope.
"""
import json
import pathlib
from types import SimpleNamespace

import pytest

from hpcval.benchmarks.comm_scope import MODEL_NAMES, CommScope
from hpcval.parsers.common import ParseError
from hpcval.parsers.comm_scope import parse_comm_scope, why_no_file

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / \
    'comm_scope'
REPS = CAPTURED / 'format_gbench_names_reps3.json'
SINGLE = CAPTURED / 'format_gbench_peer_single.json'
NOGPU = CAPTURED / 'real_comm_scope0120_cuda13_nogpu.txt'

PINNED_27 = 'Comm_cudaMemcpyAsync_PinnedToGPU/0/0/log2(N):27/manual_time'
PEER_8 = 'Comm_cudaMemcpyPeerAsync_GPUToGPUPeer/0/1/log2(N):8/manual_time'


@pytest.fixture(scope='module')
def reps():
    return REPS.read_text()


def edit(text, change):
    doc = json.loads(text)
    change(doc['benchmarks'])
    return json.dumps(doc)


# -- files the library writes -----------------------------------------------

def test_aggregates(reps):
    runs = parse_comm_scope(reps)
    assert len(runs) == 16         # 2 GPUs x (kernel, sync, 2 x 2 copies,
    #                                2 peer copies), aggregates only
    pinned = runs[PINNED_27]
    assert pinned.repetitions == 3
    # manual time: 2.5 us + 2^27 B / 5e10 B/s, per iteration, ns -> us
    assert pinned.time_us == pytest.approx(2.5 + 2**27 / 5e10 * 1e6)
    assert pinned.time_std_us == pytest.approx(0, abs=1e-6)
    # raw bytes per second in the file (the console prints 1024-based G/s)
    assert pinned.bytes_per_second == pytest.approx(
        2**27 / (2.5e-6 + 2**27 / 5e10))
    kernel = runs['Comm_cudart_kernel/0/0/0/real_time/threads:1']
    assert kernel.bytes_per_second is None and kernel.time_us > 0


def test_single_repetition_without_aggregates():
    runs = parse_comm_scope(SINGLE.read_text())
    assert list(runs) == [PEER_8, PEER_8.replace(':8/', ':27/')]
    run = runs[PEER_8]
    assert (run.repetitions, run.time_std_us) == (1, None)
    assert run.time_us == pytest.approx(8.0 + 256 / 3.5e11 * 1e6, rel=1e-3)


def test_check_metrics(reps):
    """What CommScopeCudaCheck publishes from a two-GPU file."""
    test = SimpleNamespace(gpus=2, numa_node=0, latency_log2=8,
                           bandwidth_log2=27, model='cuda')
    test._name = lambda *a, **k: CommScope._name(test, *a, **k)
    test._get = lambda *a, **k: CommScope._get(test, *a, **k)
    test._bandwidth = lambda *a: CommScope._bandwidth(test, *a)
    values = CommScope.metrics(test, parse_comm_scope(reps))
    assert set(values) == {
        'kernel_launch', 'device_sync', 'h2d_bandwidth', 'd2h_bandwidth',
        'h2d_latency', 'd2h_latency', 'host_gpu_bandwidth',
        'host_gpu_latency', 'gpu_gpu_bandwidth', 'gpu_gpu_latency'}
    h2d = 2**27 / (2.5e-6 + 2**27 / 5e10) / 1e9
    d2h = 2**27 / (2.6e-6 + 2**27 / 5.2e10) / 1e9
    assert values['h2d_bandwidth'] == (pytest.approx(h2d), 'GB/s')
    assert values['host_gpu_bandwidth'][0] == pytest.approx((h2d + d2h) / 2)
    assert values['h2d_latency'] == (pytest.approx(2.5 + 256 / 5e4), 'us')
    assert values['gpu_gpu_latency'][0] == pytest.approx(8 + 256 / 3.5e5)
    assert values['kernel_launch'][1] == 'us'

    # a GPU pair without peer access registers no peer benchmark
    def drop_peer(benchmarks):
        benchmarks[:] = [e for e in benchmarks if not e['name'].startswith(
            'Comm_cudaMemcpyPeerAsync')]

    missing = edit(reps, drop_peer)
    with pytest.raises(ParseError, match=r'no result for Comm_cudaMemcpyPeer'
                                         r'Async_GPUToGPUPeer/0/1/log2\(N\)'
                                         r':27/manual_time'):
        CommScope.metrics(test, parse_comm_scope(missing))


def test_misspelt_upstream_name_is_not_the_peer_copy():
    # PeerAync (sic) is the copy with peer access off; the check reads the
    # GPUToGPUPeer benchmark and filters by the exact spelling
    assert 'PeerAsync_GPUToGPUPeer' in MODEL_NAMES['cuda']['peer']


# -- broken files -----------------------------------------------------------

@pytest.mark.parametrize('make, message', [
    (lambda t: t[:len(t) // 2], 'not valid JSON'),
    (lambda t: '{"context": {}}', 'no "benchmarks" list'),
    (lambda t: edit(t, lambda b: b.clear()), 'lists no benchmarks'),
    (lambda t: edit(t, lambda b: b[0].update(
        error_occurred=True,
        error_message='Comm_cudart_kernel failed to synchronize')),
     r'1 benchmark\(s\) failed: Comm_cudart_kernel/0/0/0/real_time/'
     r'threads:1_mean: Comm_cudart_kernel failed to synchronize'),
    (lambda t: edit(t, lambda b: b[0].update(real_time='NaN')),
     "real_time: 'NaN' is not a finite number"),
    (lambda t: edit(t, lambda b: b[0].update(time_unit='fortnight')),
     "unknown time_unit 'fortnight'"),
])
def test_broken(reps, make, message):
    with pytest.raises(ParseError, match=message):
        parse_comm_scope(make(reps))


def test_no_gpu_console_names_the_cause():
    assert why_no_file(NOGPU.read_text()) == (
        'what():  /tmp/cstest/thirdparty/libscope/include/scope/cuda.hpp:14'
        'CUDA error CUDA driver version is insufficient for CUDA runtime '
        'version')
    assert why_no_file('Comm|Scope 0.12.0\n') == 'no error printed'
