"""Cost of loading hpcval's configuration for one system:
``reframe -l --system frontier`` (Lmod over empty modulefiles, as in
tests/test_config.py), and which detection commands it runs.

    .venv/bin/python tests/bench_system_load.py [--repeat 5] [--gpu-tools-delay 0]

``nvidia-smi`` and ``rocminfo`` are put on PATH as probes that record each
call (and sleep ``--gpu-tools-delay`` seconds, as those tools take on a
node where the driver initialises slowly); the figures are the median wall
time of the listing and the calls each run made (figures:
docs/measurements.md).  Not a pytest test: a timing depends on the machine.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]   # tests/ helpers, systems/
from lmodenv import system_env  # noqa: E402
from rfmrun import ROOT, VENV_BIN  # noqa: E402

PROBE = """#!/bin/sh
echo "$(basename "$0")" >> {log}
sleep {delay}
"""


def _probes(folder, delay):
    log = folder / 'calls.log'
    for tool in ('nvidia-smi', 'rocminfo'):
        path = folder / tool
        path.write_text(PROBE.format(log=log, delay=delay))
        path.chmod(0o755)
    return log


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--gpu-tools-delay', type=float, default=0.0)
    parser.add_argument('--system', default='frontier')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / 'bin').mkdir()
        log = _probes(tmp / 'bin', args.gpu_tools_delay)
        env = dict(os.environ, **system_env(tmp / 'modulefiles'),
                   PATH=f'{tmp / "bin"}:{VENV_BIN}:{os.environ["PATH"]}',
                   RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
                   HPCVAL_ROOT=str(ROOT))
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            proc = subprocess.run(
                [str(VENV_BIN / 'reframe'), '-c', 'checks/', '--prefix',
                 str(tmp / 'rfm'), '-l', '--system', args.system],
                cwd=ROOT, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
        calls = log.read_text().split() if log.exists() else []
        print(f'reframe -l --system {args.system}: median '
              f'{statistics.median(times):.2f} s over {args.repeat} runs '
              f'(min {min(times):.2f} s, max {max(times):.2f} s); GPU tool '
              f'delay {args.gpu_tools_delay:g} s; detection calls per run: '
              f'{len(calls) / args.repeat:g} '
              f'({", ".join(sorted(set(calls))) or "none"})')


if __name__ == '__main__':
    main()
