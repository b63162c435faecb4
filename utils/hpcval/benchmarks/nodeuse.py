"""A measurement has its node to itself, and its record says whether it did.

- Whole nodes: every measurement asks the scheduler for its nodes alone
  (ReFrame's ``exclusive_access``: ``#SBATCH --exclusive`` on Slurm,
  ``#BSUB -x`` on LSF; the local scheduler runs one job at a time).
- No build beside a measurement: where measurements run on the host that
  builds (a partition with the local scheduler; ReFrame builds on the
  host it runs on), each build holds a shared lock on one file of the
  session's stage folder and each measurement an exclusive one, from its
  first command to its last, so a measurement starts only when the builds
  running then have finished and no build starts while it runs, whatever
  the execution policy.  On a batch partition the measurements run on
  other nodes than the builds and need no lock.
- The node's load at job start: the job samples /proc/loadavg five times,
  SPACING_S apart (each job of a screen pays it), and lists the busiest
  processes (``ps``), into
  ``LOAD_FILE``; ``read()`` makes the check's ``hpcval_node_load`` record
  of it.  The node was busy when, in the median sample, other runnable
  tasks than the job's numbered at least ``max(1, BUSY_SHARE x CPUs)``.
  The run-queue count is instantaneous, unlike the 1-minute load average,
  which stays high for a minute after a build that has ended.
"""
import os
import re
import shlex
import statistics

from hpcval import records

LOAD_FILE = 'hpcval_node_load.txt'
LOCK_NAME = '.hpcval-node.lock'
BUSY_SHARE = 0.1
_SAMPLES = 5
#: seconds between samples: a process that keeps a CPU busy is runnable in
#: every sample however close they are, and 10 ms is several of the
#: kernel's time slices, so samples this far apart still see a short-lived
#: task come and go; 50 ms cost each job of a screen 0.2 s more
#: (docs/measurements.md, "Where a screen job's time goes")
SPACING_S = 0.01
_PROCESSES = 8
_LOCK_FD = 9


def lock_file():
    """The session's lock: in its stage folder."""
    import reframe.core.runtime as rt
    return os.path.join(rt.runtime().stage_prefix, LOCK_NAME)


def _flock(mode):
    path = shlex.quote(lock_file())
    return (f'if command -v flock >/dev/null; then exec {_LOCK_FD}>>{path} '
            f'&& flock {mode} {_LOCK_FD}; fi')


def builds_beside_measurements(partition):
    """Whether this partition's measurements run where builds do."""
    return partition.scheduler.registered_name == 'local'


def build_commands(build):
    """Lines a build runs first: a shared hold on the session's lock."""
    if not builds_beside_measurements(build.current_partition):
        return []
    return [_flock('-s')]


def measurement_commands(test):
    """Lines a measurement runs first: the exclusive hold on the session's
    lock (where builds run beside it), then the node's load into
    LOAD_FILE; never failing the job."""
    lines = []
    if builds_beside_measurements(test.current_partition):
        lines += ['hpcval_wait=$SECONDS', _flock('-x'),
                  'hpcval_wait=$((SECONDS - hpcval_wait))']
    sample = (f'for hpcval_i in {" ".join(["1"] * _SAMPLES)}; do '
              f'echo "loadavg=$(cat /proc/loadavg)"; '
              f'sleep {SPACING_S:g}; done')
    ps = (f'ps -eo pid=,ppid=,stat=,pcpu=,comm= --sort=-pcpu '
          f'| head -n {_PROCESSES + 4} | sed "s/^/ps=/"')
    lines.append(f'{{ echo "cpus=$(nproc)"; echo "self=$$"; '
                 f'echo "waited_s=${{hpcval_wait:-0}}"; {sample}; {ps}; }} '
                 f'> {LOAD_FILE} 2>/dev/null || true')
    return lines


_LOADAVG = re.compile(r'(\S+) (\S+) (\S+) (\d+)/(\d+) \d+')
_PS = re.compile(r'\s*(\d+)\s+(\d+)\s+(\S+)\s+([\d.]+)\s+(.{1,64})')
_NAME = re.compile(r'[\x21-\x7e][\x20-\x7e]{0,63}')


def read(text):
    """The ``hpcval_node_load`` record (hpcval.records.NodeLoad) of a
    LOAD_FILE's text, or None when unreadable."""
    fields, loads, procs = {}, [], []
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if not sep:
            continue
        if key == 'loadavg':
            m = _LOADAVG.fullmatch(value.strip())
            if m:
                loads.append((float(m[1]), int(m[4])))
        elif key == 'ps':
            m = _PS.fullmatch(value.rstrip())
            if m and _NAME.fullmatch(m[5].strip()):
                procs.append((int(m[1]), int(m[2]), m[3], float(m[4]),
                              m[5].strip()))
        elif key in ('cpus', 'self', 'waited_s') and value.strip().isdigit():
            fields[key] = int(value)
    if not loads or 'cpus' not in fields:
        return None

    me = fields.get('self')
    # the job's shell, the sampling commands and ps's own pipeline
    others = [p for p in procs if me not in (p[0], p[1])]
    # a sample counts its own 'cat' as runnable
    running = statistics.median(max(0, n - 1) for _, n in loads)
    cpus = fields['cpus']
    busy = running >= max(1, BUSY_SHARE * cpus)
    top = tuple(records.Process(pid, stat, pcpu, cmd)
                for pid, _, stat, pcpu, cmd in others[:5])
    why = ''
    if busy:
        named = ', '.join(f'{p.command} (pid {p.pid}, '
                          f'{p.cpu_percent:g}% CPU)' for p in top[:3]
                          if p.cpu_percent > 0 or p.state[0] == 'R')
        why = (f'{running:g} other runnable tasks on {cpus} CPUs at job '
               f'start{"; busiest: " + named if named else ""}')
    return records.NodeLoad(cpus, loads[0][0], running,
                            fields.get('waited_s', 0), busy, why, top)
