"""Cost of loading hpcval's configuration for one system:
``reframe -l --system frontier`` (Lmod over empty modulefiles, as in
tests/test_config.py), and which detection commands it runs.

    .venv/bin/python tests/bench_system_load.py [--repeat 5] [--gpu-tools-delay 0]

``nvidia-smi`` and ``rocminfo`` are put on PATH as probes that record each
call (and sleep ``--gpu-tools-delay`` seconds, as those tools take on a
node where the driver initialises slowly).  Printed: the wall time of the
listing and, apart from ReFrame's own work, of loading the configuration
alone (as ReFrame loads it, with the same command line), median and
minimum, and the detection calls each run made (figures:
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

# the configuration loaded as ReFrame loads it, for ``--system SYSTEM``
LOAD = """import sys, time
sys.argv = ['reframe', '-l', '--system', {system!r}]
from reframe.utility import import_module_from_file
start = time.perf_counter()
import_module_from_file({config!r}, load_parents=True)
print(time.perf_counter() - start)
"""

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
        times, loads = [], []
        for _ in range(args.repeat):
            load = subprocess.run(
                [str(VENV_BIN / 'python'), '-c', LOAD.format(
                    system=args.system,
                    config=str(ROOT / 'config' / 'settings.py'))],
                cwd=tmp, env=env, capture_output=True, text=True)
            if load.returncode != 0:
                raise SystemExit(load.stderr[-2000:])
            loads.append(float(load.stdout.split()[-1]))
            start = time.perf_counter()
            proc = subprocess.run(
                [str(VENV_BIN / 'reframe'), '-c', 'checks/', '--prefix',
                 str(tmp / 'rfm'), '-l', '--system', args.system],
                cwd=ROOT, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
        calls = log.read_text().split() if log.exists() else []
        print(f'--system {args.system}, GPU tool delay '
              f'{args.gpu_tools_delay:g} s, {args.repeat} runs: '
              f'reframe -l median {statistics.median(times):.2f} s (min '
              f'{min(times):.2f} s); configuration load median '
              f'{statistics.median(loads) * 1000:.0f} ms (min '
              f'{min(loads) * 1000:.0f} ms); detection calls per run: '
              f'{len(calls) / args.repeat / 2:g} '
              f'({", ".join(sorted(set(calls))) or "none"})')


if __name__ == '__main__':
    main()
