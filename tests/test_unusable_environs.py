"""A GPU check on a host without its GPU or compiler is listed and
skipped, naming what is missing, in ReFrame's output and in the verdict
(systems/local.py, hpcval.benchmarks.source)."""
import re
import subprocess

from rfmrun import VENV_BIN, reframe
from systems import local


def test_gpu_checks_of_this_gpu_less_host_are_listed(tmp_path):
    proc, _ = reframe('--system', 'local', '-l', '-t', 'nccl',
                      tmp_path=tmp_path, checks=['checks/nccl_tests.py'])
    # those that also need several nodes or GPU-aware MPI too
    for check in ('NcclTestsNodeCheck', 'NcclTestsMultiNodeCheck'):
        assert f'- {check} %collective=all_reduce' in proc.stdout, \
            proc.stdout[-2000:]


def test_skipped_gpu_checks_make_the_verdict_incomplete(tmp_path):
    proc, _ = reframe('--system', 'local', '-r', '-n', 'HlQualPciCheck',
                      tmp_path=tmp_path, checks=['checks/hl_qual.py'])
    why = ('no Gaudi on local:default (local detects NVIDIA and AMD GPUs '
           'only: --system gaudi2)')
    assert re.search(r'SKIP.*HlQualPciCheck.*' + re.escape(why), proc.stdout)
    verdict = subprocess.run([VENV_BIN / 'hpcval', 'verdict',
                              tmp_path / 'report.json'],
                             capture_output=True, text=True)
    assert verdict.returncode == 2, verdict.stdout
    assert f'SKIP HlQualPciCheck: {why}' in verdict.stdout


def test_a_gpu_without_its_compiler_is_named(tmp_path, monkeypatch):
    smi = tmp_path / 'nvidia-smi'
    smi.write_text('#!/bin/sh\necho "NVIDIA H100 80GB HBM3, 9.0"\n')
    smi.chmod(0o755)
    monkeypatch.setenv('PATH', str(tmp_path))
    features, _, envs, unusable = local._gpu_partition_extras()
    assert 'nvgpu' in features and envs == ['cuda']
    assert unusable == {'cuda': 'nvcc not on PATH on local:default'}
    monkeypatch.setenv('PATH', str(tmp_path / 'none'))
    assert local._gpu_partition_extras()[3]['cuda'] == \
        'no NVIDIA GPU on local:default (nvidia-smi not on PATH)'
