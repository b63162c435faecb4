"""The validation suites, as ReFrame modes (``reframe --mode <mode>``).

Each benchmark names the suites its tests belong to (``suites()`` of
hpcval.benchmarks.base, as the tags ``quick`` and ``screen``).

- ``quick``: one node's health in minutes: memory bandwidth of every GPU
  (and the CPUs), the collectives over all of the node's GPUs, every GPU
  pair's copy bandwidth, and MPI on the node; the checks' own sizes, so
  that references calibrated from quick runs hold for the full runs too.
- ``screen``: the quick suite's single-node checks but the MPI ping-pong
  on every node of the partition (``--distribute=all``, Slurm-like schedulers), once each: no
  retries, so a slow node is named, not rerun until it passes; the CPU
  figure is the best of three likwid-bench runs in the node's job, whose
  healthy spread the default peer rule is built on (docs/screening.md).
- ``acceptance``: every check, multi-node collectives and latencies
  included, and nothing may be skipped (``-S strict=yes``).

``screen`` and ``acceptance`` are statements about the system: ReFrame
refuses to start them with a narrowed selection or a ``-S`` that changes
what a check measures (hpcval.inputs.check_command_line).

Read the result with ``hpcval verdict`` (exit 0 / 1 / 2).  Durations
measured on real nodes are in docs/after-maintenance.md.
"""

#: The tags that put a test into a suite: each benchmark says which of its
#: tests belong (its ``suites()``), so a new benchmark joins a suite in its
#: own files.
QUICK_TAG, SCREEN_TAG = 'quick', 'screen'
QUICK = ['-t', f'^{QUICK_TAG}$']
SCREEN = ['-t', f'^{SCREEN_TAG}$']

MODES = [
    {
        'name': 'quick',
        'options': [*QUICK, '--max-retries=0'],
    },
    {
        'name': 'screen',
        'options': [*SCREEN, '--distribute=all', '--max-retries=0',
                    '-S', 'LikwidBenchCheck.repeats=3'],
    },
    {
        'name': 'acceptance',
        'options': ['-S', 'strict=yes', '--max-retries=0'],
    },
]
