"""The validation suites, as ReFrame modes (``reframe --mode <mode>``).

- ``quick``: one node's health in minutes: memory bandwidth of every GPU
  (and the CPUs), the collectives over all of the node's GPUs, every GPU
  pair's copy bandwidth, and MPI on the node; the checks' own sizes, so
  that references calibrated from quick runs hold for the full runs too.
- ``screen``: the quick suite's single-node checks but the MPI ping-pong
  on every node of the partition (``--distribute=all``, Slurm-like schedulers), once each: no
  retries, so a slow node is named, not rerun until it passes.
- ``acceptance``: every check, multi-node collectives and latencies
  included, and nothing may be skipped (``-S strict=yes``).

``screen`` and ``acceptance`` are statements about the system: ReFrame
refuses to start them with a narrowed selection or a ``-S`` that changes
what a check measures (hpcval.inputs.check_command_line).

Read the result with ``hpcval verdict`` (exit 0 / 1 / 2).  Durations
measured on real nodes are in docs/after-maintenance.md.
"""

#: Display names (without spaces, as ReFrame's -n matches them) of the
#: single-node checks of a node's health.
QUICK = ('^(BabelStream(Cpu|Cuda|Hip)Check'
         '|(Nccl|Rccl)TestsNodeCheck'
         '|TransferBench(Cuda)?Check%preset=p2p'
         '|Mpi4pyPingPongCheck%placement=on_node'
         # every core's flop rate (likwid-bench peakflops): the CPU figure
         # a screen compares
         '|LikwidBenchCheck%kernel=peakflops)')

#: The screen's checks: the quick suite's, less the on-node MPI ping-pong,
#: whose latency and bandwidth vary by several times between healthy nodes
#: of a shared host (docs/screening.md): peers would blame noise.
SCREEN = QUICK.replace('|Mpi4pyPingPongCheck%placement=on_node', '')

MODES = [
    {
        'name': 'quick',
        'options': ['-n', QUICK, '--max-retries=0'],
    },
    {
        'name': 'screen',
        'options': ['-n', SCREEN, '--distribute=all', '--max-retries=0'],
    },
    {
        'name': 'acceptance',
        'options': ['-S', 'strict=yes', '--max-retries=0'],
    },
]
