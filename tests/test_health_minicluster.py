"""On the session's two-node Slurm minicluster: a node whose GPU tool fails
the real way (nvidia-smi's message, exit 9), reached through that node's
task prolog, fails the screen, named; the other node, whose nvidia-smi
replays the H100's healthy captures, passes."""
import json
import os
import shutil
import subprocess
from pathlib import Path

from rfmrun import ROOT, VENV_BIN, reframe

FIX = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
DRIVER_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate "
                 "with the NVIDIA driver. Make sure that the latest NVIDIA "
                 "driver is installed and running.")
FAILING = f"""#!/bin/sh
echo "{DRIVER_FAILED}"
echo
exit 9
"""
REPLAY = """#!/bin/sh
case "$*" in
*--query-compute-apps*) cat '{smi}/apps_idle.csv' ;;
*--query-gpu*) cat '{smi}/query_idle.csv' ;;
-q) cat '{smi}/q.txt' ;;
*) exit 2 ;;
esac
"""
# the partition expects one H100 per node (a site's inventory)
INVENTORY = """inventory:
  - partition: cpu
    gpus: 1
    vendor: nvidia
    model: H100 80GB HBM3
    source: "test: the minicluster's nodes as GPU nodes"
"""


def _tool(folder, text):
    folder.mkdir()
    (folder / 'nvidia-smi').write_text(text)
    (folder / 'nvidia-smi').chmod(0o755)
    return folder


def test_a_node_whose_gpu_tool_fails_fails_the_screen(faults, tmp_path):
    good = _tool(faults.faults / 'smi-good',
                 REPLAY.format(smi=FIX / 'nvidia-smi'))
    bad = _tool(faults.faults / 'smi-bad', FAILING)
    path = os.environ['PATH']
    faults.inject_fault('n1', f'export PATH={good}:{path}')
    faults.inject_fault('n2', f'export PATH={bad}:{path}')
    proc, report = reframe('-r', '--system', 'minicluster',
                           '--distribute=all', '-n',
                           'LikwidBenchCheck%kernel=peakflops',
                           tmp_path=tmp_path, env=faults.env(),
                           checks=('checks/likwid_bench.py',))
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]

    site = tmp_path / 'site' / 'references'
    site.mkdir(parents=True)
    shutil.copy(ROOT / 'references' / 'minicluster.yaml', site)
    with open(site / 'minicluster.yaml', 'a') as fp:
        fp.write(INVENTORY)
    out = subprocess.run(
        # x4: the node's figures share a busy host (test_minicluster_screen
        # LOOSE); this test is about n2's GPU tool
        [str(VENV_BIN / 'hpcval'), 'verdict', '--format', 'json',
         '--peer-factor', '4', str(tmp_path / 'report.json')],
        capture_output=True, text=True,
        cwd=ROOT, timeout=120,
        env={**os.environ, 'HPCVAL_SITE': str(tmp_path / 'site')})
    assert out.returncode == 1, out.stdout + out.stderr
    by_node = json.loads(out.stdout)['failures_by_node']
    assert list(by_node) == ['n2'], out.stdout
    assert by_node['n2'] == [f'node n2: nvidia-smi failed (exit 9): '
                             f'{DRIVER_FAILED}'], out.stdout
