"""A one-GPU node can pass the collectives check: nccl-tests' bus bandwidth
is 0 by definition on one GPU, so the check declares those figures
diagnostic, and a reference meant for several GPUs never judges them.

The node is this host seen through stand-ins of ``nvidia-smi`` (one H200)
and ``nvcc``; nccl-tests is a prebuilt_dir whose executables print the
2 x H200 capture made a one-GPU run: one rank line, ``nGpus 1``, busbw
0.00 (nccl-tests' factor for one rank is 0) and the footer's average 0.
"""
import re
import stat

import pytest

from rfmrun import ROOT, VENV_BIN, by_name, perf, reframe

CAPTURED = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2'


def one_gpu(text):
    text = text.replace('nGpus 2', 'nGpus 1')
    text = '\n'.join(line for line in text.splitlines()
                     if not line.startswith('#  Rank  1')) + '\n'
    rows = []
    for line in text.splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit():
            for at in (7, 11):      # busbw of both blocks
                tokens[at] = '0.00'
            line = ' '.join(tokens)
        rows.append(line)
    text = '\n'.join(rows) + '\n'
    return re.sub(r'(# Avg bus bandwidth\s*:\s*)\S+', r'\g<1>0', text)


def _script(path, body):
    path.write_text(f'#!/bin/bash\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp, outputs):
    """The NcclTestsNodeCheck run on the one-H200 stand-in node, its
    collectives printing ``outputs`` ({collective: text})."""
    bins, prebuilt = tmp / 'bin', tmp / 'prebuilt'
    bins.mkdir()
    prebuilt.mkdir()
    _script(bins / 'nvidia-smi', 'case "$*" in *compute_cap*) '
            'echo "NVIDIA H200, 9.0";; *driver_version*) echo 580.159.04;; '
            '*) echo "NVIDIA H200";; esac')
    _script(bins / 'nvcc', 'echo "Cuda compilation tools, release 13.0"')
    for coll, text in outputs.items():
        out = prebuilt / f'{coll}.txt'
        out.write_text(text)
        _script(prebuilt / f'{coll}_perf', f'cat {out}')
    # the build checks that every collective's executable is there
    for coll in ('broadcast', 'reduce', 'reduce_scatter', 'alltoall',
                 'sendrecv'):
        _script(prebuilt / f'{coll}_perf', 'exit 1')
    import os
    env = {"PATH": f"{bins}:{VENV_BIN}:{os.environ['PATH']}"}
    # the stand-in answers the check's queries, not the health probe's
    # (which would fail the node: tests/test_node_health.py)
    return reframe('-r', '--system', 'local', '-n', 'NcclTestsNodeCheck',
                   '-S', f'prebuilt_dir={prebuilt}', '-S', 'NcclTestsNodeCheck.health_probe=no',
                   tmp_path=tmp, env=env,
                   checks=('checks/nccl_tests.py',))


@pytest.fixture(scope='module')
def one_gpu_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp('onegpu'), {
        coll: one_gpu((CAPTURED / f'check_nccl2196_{coll}_g2.txt')
                      .read_text())
        for coll in ('all_reduce', 'all_gather')})


def test_both_collectives_pass_with_busbw_diagnostic(one_gpu_run):
    proc, report = one_gpu_run
    assert report, proc.stdout[-3000:] + proc.stderr
    cases = by_name(report, 'NcclTestsNodeCheck')
    assert len(cases) == 2, proc.stdout[-3000:]
    for case in cases:
        assert case['result'] == 'pass', case['fail_reason']
        values = perf(case)
        assert values['busbw_inplace_largest'][0] == 0.0
        unjudged = case.get('check_vars', case)['hpcval_unjudged']
        for metric in ('busbw_inplace_largest', 'busbw_outofplace_max',
                       'avg_busbw'):
            assert unjudged[metric].startswith(
                'diagnostic: one GPU: nccl-tests\' bus bandwidth'), unjudged
        # the latency figures: judged by local.yaml's day-one ceiling
        assert 'time_inplace_smallest' not in unjudged, unjudged
        assert values['time_inplace_smallest'][3] is not None


def test_an_rccl_output_on_this_nvidia_node_fails_naming_it(tmp_path):
    rccl = (ROOT / 'tests' / 'fixtures' / 'captured' / 'public' /
            'rccl_develop448c4c7_rccl2223_all_reduce_mi300x_r8.txt')
    proc, report = _run(tmp_path, {'all_reduce': rccl.read_text(),
                                   'all_gather': 'not run\n'})
    [case] = [c for c in by_name(report, 'NcclTestsNodeCheck')
              if 'all_reduce' in c['display_name']]
    assert case['result'] == 'fail' and case['fail_phase'] == 'sanity'
    assert "the output is rccl-tests' (\"rccl-tests: Version " \
        "develop:448c4c7\"; devices: AMD Instinct MI300X x8), this test " \
        "runs nccl-tests" in case['fail_reason'], case['fail_reason']
