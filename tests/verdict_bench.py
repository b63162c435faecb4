"""What the verdict's speed benches share: the real case they clone, the
references file that judges it, and the timed ``hpcval verdict``."""
import json
import pathlib
import resource
import subprocess
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
