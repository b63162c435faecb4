"""A measurement has its node to itself, and its record says whether it did
(docs/node-use.md): build locks, and the job's load sampled at its start."""
import os
import re
import shlex
import statistics

import msgspec

from hpcval import records
from hpcval.records import clears, listed, outside, takes_cpu  # noqa: F401

LOAD_FILE = 'hpcval_node_load.txt'
LOCK_NAME = '.hpcval-node.lock'
BUSY_SHARE = 0.1
_SAMPLES = 5
#: seconds between samples: several of the kernel's time slices
#: (docs/node-use.md)
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
    return [_flock('-s')] if builds_beside_measurements(
        build.current_partition) else []


def measurement_commands(test):
    """A measurement's first lines: exclusive lock, then node load."""
    lines = []
    if builds_beside_measurements(test.current_partition):
        lines += ['hpcval_wait=$SECONDS', _flock('-x'),
                  'hpcval_wait=$((SECONDS - hpcval_wait))']
    sample = (f'for hpcval_i in {" ".join(["1"] * _SAMPLES)}; do '
              f'echo "loadavg=$(cat /proc/loadavg)"; '
              f'sleep {SPACING_S:g}; done')
    ps = (f'ps -eo pid=,ppid=,uid=,stat=,pcpu=,comm= --sort=-pcpu '
          f'| head -n {_PROCESSES + 4} | sed "s/^/ps=/"')
    lines.append(f'{{ echo "cpus=$(nproc)"; echo "self=$$"; '
                 f'echo "uid=$(id -u)"; {_screen_line()}; '
                 f'echo "waited_s=${{hpcval_wait:-0}}"; {sample}; {ps}; }} '
                 f'> {LOAD_FILE} 2>/dev/null || true')
    return lines


def _screen_line():
    """Shell printing ``screen=PID`` where the job runs beside this ReFrame."""
    pid = os.getpid()
    try:
        with open('/proc/sys/kernel/random/boot_id') as fp:
            boot = fp.read().strip()
        with open(f'/proc/{pid}/stat') as fp:
            tick = fp.read().rpartition(') ')[2].split()[19]
    except (OSError, IndexError):
        return ':'
    if not (re.fullmatch(r'[0-9a-f-]{36}', boot) and tick.isdigit()):
        return ':'
    return (f'[ "$(cat /proc/sys/kernel/random/boot_id)" = {boot} ] && '
            f'[ "$(sed "s/.*) //" /proc/{pid}/stat | cut -d" " -f20)" = '
            f'{tick} ] && echo "screen={pid}"')


_LOADAVG = re.compile(r'(\S+) (\S+) (\S+) (\d+)/(\d+) \d+')
# pid, ppid, uid (recorded since it decides), state, %CPU, name
_PS = re.compile(r'\s*(\d+)\s+(\d+)\s+(?:(\d+)\s+)?([A-Za-z]\S*)\s+'
                 r'([\d.]+)\s+(.{1,64})')
_NAME = re.compile(r'[\x21-\x7e][\x20-\x7e]{0,63}')


def read(text):
    """The ``hpcval_node_load`` record of a LOAD_FILE's text, or None."""
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
            if m:   # a name unfit to show is '?': the process still counts
                name = m[6].strip()
                procs.append((int(m[1]), int(m[2]), m[3] and int(m[3]),
                              m[4], float(m[5]),
                              name if _NAME.fullmatch(name) else '?'))
        elif key in ('cpus', 'self', 'waited_s', 'uid', 'screen') and \
                value.strip().isdigit():
            fields[key] = int(value)
    if not loads or 'cpus' not in fields:
        return None

    me, screen = fields.get('self'), fields.get('screen')
    # the job's shell, the sampling commands and ps's own pipeline
    others = [p for p in procs if me not in (p[0], p[1])]
    # a sample counts its own 'cat' as runnable
    running = statistics.median(max(0, n - 1) for _, n in loads)
    cpus = fields['cpus']
    busy = running >= max(1, BUSY_SHARE * cpus)
    top = tuple(records.Process(pid, stat, pcpu, cmd, uid,
                                screen is not None and screen in (pid, ppid))
                for pid, ppid, uid, stat, pcpu, cmd in others[:_PROCESSES])
    load = records.NodeLoad(cpus, loads[0][0], running,
                            fields.get('waited_s', 0), busy, '', top,
                            fields.get('uid'))
    if not busy:
        return load
    named = outside(load)
    own = [p for p in top if p.screen and takes_cpu(p)]
    why = (f'{running:g} other runnable tasks on {cpus} CPUs at job '
           f'start; ' + (f'outside the screen: {listed(named)}' if named
                         else 'none of them found outside the screen'))
    if own:
        why += f'; the screen\'s own: {listed(own)}'
    return msgspec.structs.replace(load, why=why)


