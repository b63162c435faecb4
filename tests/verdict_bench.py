"""What the verdict's speed benches share: the real case they clone, the
references file that judges it, and the timed ``hpcval verdict``."""
import argparse
import json
import os
import pathlib
import resource
import subprocess
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
H200 = ROOT / 'tests/fixtures/reports/h200x2' / \
    'nccl-transferbench-babelstream.json'
HPCVAL = ROOT / '.venv/bin/hpcval'


def babelstream_case():
    """(report, its BabelStream test case) of the 2 x H200 report."""
    report = json.loads(H200.read_text())
    case = next(tc for tc in report['runs'][0]['testcases']
                if tc['display_name'].startswith('BabelStreamCudaCheck'))
    return report, case


def write_references(folder, rule, metrics):
    """``folder``/local.yaml judging BabelStreamCudaCheck's ``metrics``."""
    folder.mkdir(exist_ok=True)
    (folder / 'local.yaml').write_text(yaml.safe_dump({
        'system': 'local', 'description': 'the benchmark\'s own values',
        'rules': {'own': rule},
        'entries': [{'check': 'BabelStreamCudaCheck', 'metrics': metrics}]}))


def timed_verdict(hpcval, *args):
    """(process, wall seconds, rusage of the children) of ``hpcval
    verdict ARGS``."""
    start = time.monotonic()
    proc = subprocess.run([str(hpcval), 'verdict', *map(str, args)],
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    return proc, wall, resource.getrusage(resource.RUSAGE_CHILDREN)


def arguments(count, default, *extra):
    """The benches' command line: ``--<count>`` and ``--hpcval``."""
    parser = argparse.ArgumentParser()
    parser.add_argument(f'--{count}', type=int, default=default)
    parser.add_argument('--hpcval', default=str(HPCVAL),
                        help='the hpcval to time (default: this checkout\'s)')
    for flag, text in extra:
        parser.add_argument(flag, action='store_true', help=text)
    return parser.parse_args()


def made_and_judged(make, n, hpcval, references=True):
    """(process, wall, rusage, report bytes) of ``hpcval verdict`` on the
    report ``make(n, path)`` writes, with its references where asked."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / 'report.json'
        make(n, path)
        refs = ['--references', path.parent / 'references'] \
            if references else []
        return (*timed_verdict(hpcval, path, *refs), os.path.getsize(path))
