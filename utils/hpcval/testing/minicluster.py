"""A Slurm cluster of N nodes on this host, for the test suite and by hand:
``python -m hpcval.testing.minicluster start|status|restart-node|
restart-controller|stop --dir DIR`` (docs/systems/minicluster.md; its
faults for tests: docs/screening.md, "Faults of a set size").

Debian's Slurm, slurmdbd, MariaDB and munge, run as root, with every file
under DIR (its task prolog runs as root in every job: hpcval.trust)."""
import argparse
import contextlib
import json
import math
import os
import pathlib
import re
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from hpcval import trust
from hpcval.minicluster_shape import (  # noqa: F401 (the cluster's shape)
    CORES_PER_SOCKET, CPUS_PER_NODE, GPU_NODE_MEMORY_MB, GPU_NODE_SOCKETS,
    GPU_PARTITION, GPU_TYPE, GPUS_PER_GPU_NODE, PARTITION, REAL_MEMORY_MB,
    SOCKETS, THREADS_PER_CORE)

DEFAULT_NODE_COUNT = 2
#: starts tried when a daemon found the port picked for it taken
_START_ATTEMPTS = 3
#: the most nodes one host runs (one slurmd each, about 5 MB and a port)
MAX_NODE_COUNT = 256
#: slow_node_by's CPU quota period: short, so that it acts within a run
QUOTA_PERIOD_US = 10000
#: the partition whose jobs preempt others (MiniCluster(preempting=True))
URGENT = 'urgent'
#: compete(): shell loops that end when the step ($STEP) ends
COMPETITORS = {
    'memory': ('#!/bin/sh\nwhile kill -0 "$STEP" 2>/dev/null; do\n'
               '  dd if=/dev/zero of=/dev/null bs={size}M count=32 '
               '2>/dev/null\ndone\n'),
    'cpu': ('#!/bin/sh\nfor i in $(seq {size}); do\n'
            '  (while kill -0 "$STEP" 2>/dev/null; do :; done) &\n'
            'done\nwait\n'),
}
# unix socket paths are limited to 108 bytes (sun_path)
_MAX_SOCKET_PATH = 100


def node_names(count):
    """n1 ... n<count>."""
    return tuple(f'n{i}' for i in range(1, count + 1))


#: the nodes of a default (two-node) cluster
NODES = node_names(DEFAULT_NODE_COUNT)


class MiniClusterError(RuntimeError):
    """The cluster could not be started, queried or stopped."""


def _write_new(path, data, mode):
    """``path`` made anew (hpcval.trust.write_new) over an older one."""
    pathlib.Path(path).unlink(missing_ok=True)
    trust.write_new(path, data, mode)


def default_dir():
    """A new folder for a cluster, 0700, of a name nobody can guess."""
    return tempfile.mkdtemp(prefix='hpcval-minicluster-')


def missing_prerequisites():
    """Why the minicluster cannot run here ('' when it can)."""
    if os.geteuid() != 0:
        return 'the minicluster runs its Slurm and munge daemons as root'

    tools = [t for t in ('munged', 'slurmctld', 'slurmd', 'slurmdbd',
                         'srun', 'sbatch', 'scontrol', 'sinfo', 'squeue',
                         'sacct', 'scancel', 'mariadbd', 'mariadb-install-db')
             if shutil.which(t) is None]
    if tools:
        return (f'not installed: {" ".join(tools)} (./bootstrap.sh --tests '
                f'installs Debian\'s slurm-wlm, slurmdbd, mariadb-server '
                f'and munge)')

    return ''


def free_ports(count):
    """``count`` distinct TCP ports nobody listens on right now."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(('127.0.0.1', 0))
        return [sock.getsockname()[1] for sock in sockets]


def _proc_field(pid, name):
    try:
        return pathlib.Path(f'/proc/{pid}/{name}').read_bytes()
    except OSError:
        return None


def _stat(pid):
    """'pid (comm) S PPID ...': the fields after the last ')', or []."""
    stat = _proc_field(pid, 'stat')
    return stat[stat.rindex(b')') + 2:].split() if stat else []


def _alive(pid):
    """Running and not a zombie waiting for a parent to reap it."""
    return _stat(pid)[:1] not in ([], [b'Z'], [b'X'])


def _parent(pid):
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _live_pids():
    return [int(e.name) for e in pathlib.Path('/proc').iterdir()
            if e.name.isdigit() and _alive(int(e.name))]


def processes_naming(path):
    """Live processes whose command line contains ``path``."""
    needle = str(path).encode()
    return [pid for pid in _live_pids()
            if needle in (_proc_field(pid, 'cmdline') or b'')
            and pid != os.getpid()]


def job_processes(conf):
    """The slurmstepd processes that inherited SLURM_CONF=``conf`` from our
    slurmd, and every process they started (never a shell exporting it)."""
    pids = _live_pids()
    steps = {pid for pid in pids
             if (_proc_field(pid, 'comm') or b'').strip() == b'slurmstepd'
             and _runs_with(pid, conf)}
    found = set(steps)
    while more := {pid for pid in pids if _parent(pid) in found} - found:
        found |= more
    return sorted(found)


def _runs_with(pid, conf):
    """Whether ``pid``'s environment names the cluster's SLURM_CONF."""
    needle = f'SLURM_CONF={conf}\0'.encode()
    return needle in (_proc_field(pid, 'environ') or b'')


def _read_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _reap(pid):
    """Collect a daemon's exit status: no zombie while we live on."""
    with contextlib.suppress(ChildProcessError):   # not ours: init reaps it
        os.waitpid(pid, os.WNOHANG)


def _terminate(pids, timeout):
    """SIGTERM, then SIGKILL what is still there after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in pids:
                _reap(pid)
            pids = [pid for pid in pids if _alive(pid)]
            if not pids:
                return

            time.sleep(0.1)

    if pids:
        raise MiniClusterError(f'processes {pids} survived SIGKILL')


class CpuQuota:
    """CPU weights and quotas of a cgroup per node (v2, or v1's ``cpu``)
    under a folder named after the cluster."""

    #: a node's share of the host's CPUs against anything outside the
    #: cluster: 100 times the default (v2 weight 100, v1 shares 1024)
    WEIGHT = {2: ('cpu.weight', '10000'), 1: ('cpu.shares', '102400')}
    #: no quota: what lift() writes (v2's default period of 100 ms)
    NO_QUOTA = {2: ('cpu.max', 'max 100000'), 1: ('cpu.cfs_quota_us', '-1')}

    def __init__(self, cluster_root):
        tag = 'hpcval-mc-' + re.sub(r'[^A-Za-z0-9]', '_',
                                    str(cluster_root))[-60:]
        v2 = pathlib.Path('/sys/fs/cgroup')
        v1 = v2 / 'cpu'
        if (v2 / 'cgroup.controllers').exists():
            self.version, self.base = 2, v2 / tag
        elif (v1 / 'cpu.cfs_quota_us').exists():
            self.version, self.base = 1, v1 / tag
        else:
            self.version, self.base = None, None

    def dedicate(self, node, pids):
        """Give ``pids`` and their children the host's CPUs before anything
        outside the cluster; False where no cgroup can be written."""
        if self.base is None:
            return False
        name, value = self.WEIGHT[self.version]
        try:
            # a weight counts among siblings: the cluster's folder competes
            # with the host's other work, its nodes among themselves
            self._set(node, [(name, value)], pids)
            (self.base / name).write_text(value)
        except OSError:
            return False
        return True

    def _set(self, node, settings, pids):
        """Write ``settings`` in ``node``'s group, then move ``pids`` in."""
        group = self.base / node
        if self.version == 2:
            self._enable_v2_cpu()
        group.mkdir(parents=True, exist_ok=True)
        for name, value in settings:
            (group / name).write_text(value)
        for pid in pids:
            (group / 'cgroup.procs').write_text(str(pid))

    def limit(self, node, percent, pids, period=QUOTA_PERIOD_US):
        """Hold ``pids`` (and every process they start) to ``percent`` % of
        one CPU (above 100: of several), enforced every ``period`` us or,
        for a quota below the kernel's 1 ms, every 1 ms / percent."""
        if self.base is None:
            raise MiniClusterError('no cgroup cpu controller mounted at '
                                   '/sys/fs/cgroup: cannot slow a node')
        # the kernel's smallest quota is 1 ms: below 10 %, a longer period
        period = max(period, math.ceil(1000 * 100 / percent))
        quota = int(period * percent / 100)
        # v1 refuses a quota below the period's: quota off first
        settings = [('cpu.max', f'{quota} {period}')] if self.version == 2 \
            else [('cpu.cfs_quota_us', '-1'), ('cpu.cfs_period_us',
                                                str(period)),
                  ('cpu.cfs_quota_us', str(quota))]
        try:
            self._set(node, settings, pids)
        except OSError as err:
            raise MiniClusterError(f'cannot set a CPU quota in '
                                   f'{self.base / node}: {err}') from None

    def _enable_v2_cpu(self):
        # a controller reaches a child only through its parent's
        # subtree_control; the cluster's folder holds no process itself
        root = self.base.parent
        if 'cpu' not in (root / 'cgroup.subtree_control').read_text().split():
            (root / 'cgroup.subtree_control').write_text('+cpu')
        self.base.mkdir(exist_ok=True)
        (self.base / 'cgroup.subtree_control').write_text('+cpu')

    def lift(self, node):
        """No quota for ``node`` any more (its processes stay grouped)."""
        if self.base and (self.base / node).exists():
            name, value = self.NO_QUOTA[self.version]
            (self.base / node / name).write_text(value)

    def remove(self):
        """Remove the cluster's groups (once their processes have ended)."""
        if self.base is None or not self.base.exists():
            return
        for group in [*self.base.iterdir(), self.base]:
            if group.is_dir():
                # a process still in it: left for the kernel
                with contextlib.suppress(OSError):
                    group.rmdir()


class MiniCluster:
    """The cluster whose files live under ``root``, of ``nodes`` slurmd
    (default: as many as last started there, else two); the other options:
    docs/systems/minicluster.md and docs/screening.md."""

    def __init__(self, root, nodes=None, dedicated=True,
                 gpu_partition=False, preempting=False):
        self.gpu_partition = gpu_partition
        self.preempting = preempting
        # never resolved: a symbolic link is refused, not followed
        self.root = pathlib.Path(os.path.abspath(root))
        self.conf = self.root / 'etc' / 'slurm.conf'
        self.munge_socket = self.root / 'munge' / 'munge.socket'
        self.db_socket = self.root / 'db' / 'mysqld.sock'
        self.faults = self.root / 'faults'
        self._pid_file = self.root / 'daemons.json'
        self._layout_file = self.root / 'cluster.json'
        if nodes is None:
            nodes = _read_json(self._layout_file).get('nodes',
                                                      DEFAULT_NODE_COUNT)
        if not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODE_COUNT:
            raise MiniClusterError(f'--nodes {nodes}: expected 1 to '
                                   f'{MAX_NODE_COUNT}')
        self.nodes = node_names(nodes)
        self.quota = CpuQuota(self.root)
        self._dedicate = dedicated
        #: {node: whether its slurmd got the host's CPUs first (dedicate)}
        self.dedicated = {}

    def _secure_root(self, create=False):
        """MiniClusterError unless the folder is the user's alone (made 0700
        when ``create`` and missing)."""
        try:
            if create:
                trust.own_folder(self.root, 0o700)
            else:
                trust.check_path(self.root)
                st = os.lstat(self.root)
                if st.st_uid != os.geteuid():
                    raise trust.UntrustedPath(
                        f'{self.root} is owned by uid {st.st_uid}, not by '
                        f'the running user')
        except trust.UntrustedPath as err:
            raise MiniClusterError(f'--dir {self.root}: {err}; not used '
                                   f'(its files run as root; choose a new '
                                   f'folder, or leave --dir out)') from None

    def _folder(self, sub):
        """The folder ``sub`` under the cluster's, made 0700 where missing."""
        path = self.root
        for part in pathlib.PurePath(sub).parts:
            path = path / part
            with contextlib.suppress(FileExistsError):
                path.mkdir(mode=0o700)
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                raise MiniClusterError(f'{path}: a symbolic link, not a '
                                       f'folder or not the running user\'s;'
                                       f' not used')
        return path

    # -- what a shell or a test needs ---------------------------------------

    def env(self):
        """Environment variables for Slurm commands and ReFrame."""
        return {'SLURM_CONF': str(self.conf)}

    def run(self, *cmd, check=True, timeout=30):
        """A Slurm command against this cluster; its CompletedProcess."""
        # a query killed by SIGPIPE: the controller, busy on a loaded host,
        # closed its connection; asked again, as a person would
        for _ in range(3 if cmd[0] in ('sinfo', 'squeue') else 1):
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  env=dict(os.environ, **self.env()),
                                  timeout=timeout)
            if proc.returncode != -signal.SIGPIPE:
                break
            time.sleep(1)
        if check and proc.returncode != 0:
            raise MiniClusterError(f'{shlex.join(cmd)} failed '
                                   f'({proc.returncode}): {proc.stderr}')
        return proc

    def node_states(self):
        """{node: state} as sinfo reports it ('idle', 'down*', ...)."""
        out = self.run('sinfo', '-h', '-N', '-o', '%N %t').stdout
        return dict(line.split() for line in out.splitlines() if line.strip())

    def _check_node(self, node):
        if node not in self.nodes:
            shown = (', '.join(self.nodes) if len(self.nodes) < 5
                     else f'{self.nodes[0]} ... {self.nodes[-1]}')
            raise MiniClusterError(f'no node {node!r}: {shown}')

    def inject_fault(self, node, *prolog_lines):
        """Every task started on ``node`` from now gets these TaskProlog
        lines (``export NAME=value``, ``unset NAME``)."""
        self._check_node(node)
        (self.faults / node).write_text(''.join(f'{line}\n'
                                                for line in prolog_lines))

    def slow_node_by(self, node, fraction):
        """``node`` ``fraction`` slower on CPU (0.1: 10 %): its slurmd and
        job steps get (1 - fraction) of its CPUs, enforced every 10 ms."""
        if not 0 < fraction < 1:
            raise MiniClusterError(f'slow_node_by {fraction!r}: expected a '
                                   f'fraction between 0 and 1')
        self._check_node(node)
        pid = self.running().get(f'slurmd-{node}')
        if pid is None:
            raise MiniClusterError(f'slurmd of {node} is not running')
        self.quota.limit(node, 100 * CPUS_PER_NODE * (1 - fraction), [pid])

    def compete(self, node, kind, size):
        """Beside each task of ``node`` until its step ends, a competitor:
        'memory' (``size`` MiB buffers) or 'cpu' (``size`` busy loops)."""
        self._check_node(node)
        if kind not in COMPETITORS or not isinstance(size, int) or \
                not 1 <= size <= 4096:
            raise MiniClusterError(f'compete {kind!r} {size!r}: expected '
                                   f'{" or ".join(COMPETITORS)} and a size '
                                   f'of 1 to 4096')
        script = self.faults / f'{node}.compete'
        script.write_text(COMPETITORS[kind].format(size=size))
        script.chmod(0o700)

    def clear_faults(self):
        for node in self.nodes:
            (self.faults / node).unlink(missing_ok=True)
            (self.faults / f'{node}.compete').unlink(missing_ok=True)
            self.quota.lift(node)

    # -- configuration ------------------------------------------------------

    def _slurmdbd_conf(self, dbd_port, db_port):
        host = socket.gethostname().split('.')[0]
        return '\n'.join([
            'AuthType=auth/munge',
            f'AuthInfo=socket={self.munge_socket}',
            f'DbdHost={host}',
            'DbdAddr=127.0.0.1',
            f'DbdPort={dbd_port}',
            'SlurmUser=root',
            f'PidFile={self.root / "state" / "slurmdbd.pid"}',
            f'LogFile={self.root / "log" / "slurmdbd.log"}',
            'DebugLevel=info',
            'StorageType=accounting_storage/mysql',
            'StorageHost=127.0.0.1',
            f'StoragePort={db_port}',
            # the database's own root, on 127.0.0.1 only, empty password:
            # the database is this cluster's and lives under DIR/db
            'StorageUser=root',
            'StorageLoc=slurm_acct_db',
        ]) + '\n'

    def _slurm_conf(self, ctld_port, node_ports, dbd_port):
        host = socket.gethostname().split('.')[0]
        state = self.root / 'state'
        log = self.root / 'log'
        auth = f'socket={self.munge_socket}'
        lines = [
            'ClusterName=minicluster',
            # accounting, as real sites run it: sacct answers for finished
            # jobs (ReFrame's slurm backend), with their state and nodes
            'AccountingStorageType=accounting_storage/slurmdbd',
            'AccountingStorageHost=127.0.0.1',
            f'AccountingStoragePort={dbd_port}',
            # for slurmdbd connections Slurm takes munge's socket from here
            f'AccountingStoragePass={self.munge_socket}',
            f'SlurmctldHost={host}(127.0.0.1)',
            f'SlurmctldPort={ctld_port}',
            'SlurmUser=root',
            'SlurmdUser=root',
            'AuthType=auth/munge',
            f'AuthInfo={auth}',
            'CredType=cred/munge',
            # no cgroups: several slurmd share this host and its hierarchy
            'ProctrackType=proctrack/linuxproc',
            # no task/affinity: every node's cores are the same host cores,
            # and Slurm confines a one-core-per-node job's ranks to "core 0"
            # of each node, the same host core (a ping-pong across nodes
            # then takes turns on it: minutes instead of a second)
            'TaskPlugin=task/none',
            'JobAcctGatherType=jobacct_gather/none',
            # a screen runs one short job per node, one after another: a
            # job starts when it is submitted, not up to batch_sched_delay
            # (3 s) later
            'SchedulerParameters=batch_sched_delay=0',
            'SelectType=select/cons_tres',
            'SelectTypeParameters=CR_Core',
            'MpiDefault=none',
            # a node set DOWN by hand stays down until resumed (with 2 its
            # next ping response returned it within a second, racing tests)
            'ReturnToService=1',
            # the declared CPUs count even on a host with fewer cores
            'SlurmdParameters=config_overrides',
            # one failed rank ends the step instead of leaving its peers
            # blocked in MPI until the time limit
            'KillOnBadExit=1',
            # a job is never requeued after a node failure: it would outlive
            # the screen and run again when the node is resumed
            'JobRequeue=0',
            # time limits and cancellations take effect in seconds
            'KillWait=2',
            'OverTimeLimit=0',
            'MessageTimeout=10',
            'SlurmdTimeout=30',
            'InactiveLimit=0',
            'MinJobAge=600',
            # many nodes answer the controller's pings on two cores
            'TreeWidth=64',
            'MailProg=/bin/true',
            f'TaskProlog={self.root / "etc" / "task_prolog.sh"}',
            f'StateSaveLocation={state / "ctld"}',
            f'SlurmdSpoolDir={state / "spool" / "%n"}',
            f'SlurmctldPidFile={state / "slurmctld.pid"}',
            f'SlurmdPidFile={state / "slurmd-%n.pid"}',
            f'SlurmctldLogFile={log / "slurmctld.log"}',
            f'SlurmdLogFile={log / "slurmd-%n.log"}',
            'SlurmctldDebug=info',
            'SlurmdDebug=info',
        ]
        gpu_node = self.nodes[-1] if self.gpu_partition else None
        if gpu_node:
            lines.append('GresTypes=gpu')
        for node, port in zip(self.nodes, node_ports):
            sockets, memory, gres = (
                (GPU_NODE_SOCKETS, GPU_NODE_MEMORY_MB,
                 f'Gres=gpu:{GPU_TYPE}:{GPUS_PER_GPU_NODE} ')
                if node == gpu_node else (SOCKETS, REAL_MEMORY_MB, ''))
            lines.append(f'NodeName={node} NodeHostname={host} '
                         f'NodeAddr=127.0.0.1 Port={port} '
                         f'Sockets={sockets} '
                         f'CoresPerSocket={CORES_PER_SOCKET} '
                         f'ThreadsPerCore={THREADS_PER_CORE} '
                         f'RealMemory={memory} {gres}State=UNKNOWN')

        lines.append(f'PartitionName={PARTITION} Nodes=ALL '
                     f'Default=YES MaxTime=INFINITE State=UP')
        if gpu_node:
            lines.append(f'PartitionName={GPU_PARTITION} Nodes={gpu_node} '
                         f'MaxTime=INFINITE State=UP')
        if self.preempting:
            # only a job sent to URGENT preempts: nothing else changes
            lines += ['PreemptType=preempt/partition_prio',
                      'PreemptMode=CANCEL',
                      f'PartitionName={URGENT} Nodes=ALL PriorityTier=2 '
                      f'MaxTime=INFINITE State=UP']
        return '\n'.join(lines) + '\n'

    def _gres_conf(self):
        """gres.conf of the GPU node: Slurm drops a GPU without File=, so
        each is a character device of /dev/null's number (never opened)."""
        if not self.gpu_partition:
            return ''
        gpus = self._folder('gpus')
        null = os.stat('/dev/null').st_rdev
        for i in range(GPUS_PER_GPU_NODE):
            os.mknod(gpus / f'gpu{i}', 0o600 | stat.S_IFCHR, null)
        return (f'NodeName={self.nodes[-1]} Name=gpu Type={GPU_TYPE} '
                f'File={gpus}/gpu[0-{GPUS_PER_GPU_NODE - 1}]\n')

    def _task_prolog(self):
        # slurmstepd kills the prolog's process group when it exits: the
        # competitor runs in a session of its own, watches the step (the
        # prolog's parent) and ends with it.  The prolog waits until the
        # competitor's session exists (it marks a file once in it): under
        # load the forked child may not have left the group by the kill.
        return ('#!/bin/sh\n'
                '# minicluster fault hook: lines of faults/<node> reach the '
                'task\n'
                f'f={shlex.quote(str(self.faults))}/"$SLURMD_NODENAME"\n'
                '[ -r "$f" ] && cat "$f"\n'
                '[ -x "$f.compete" ] || exit 0\n'
                'm="$f.started.$$"\n'
                'STEP=$PPID setsid -f sh -c \': > "$1"; exec "$2"\' sh '
                '"$m" "$f.compete" </dev/null >/dev/null 2>&1\n'
                'i=0\n'
                'while [ ! -e "$m" ] && [ $i -lt 300 ]; do sleep 0.1; '
                'i=$((i + 1)); done\n'
                'rm -f "$m"\n'
                'exit 0\n')

    def _write_files(self):
        # state and faults of an earlier cluster here never carry over
        # (rmtree removes a link, never what it points to)
        for sub in ('state', 'faults', 'gpus'):
            shutil.rmtree(self.root / sub, ignore_errors=True)
        for sub in ('etc', 'munge', 'state/ctld', 'log', 'faults',
                    *(f'state/spool/{n}' for n in self.nodes)):
            self._folder(sub)

        # munged wants its key folder writable by its owner only, and
        # searchable for the socket (the cluster's folder itself is 0700)
        os.chmod(self.root / 'munge', 0o711)
        self.write_key()
        _write_new(self.root / 'etc' / 'task_prolog.sh', self._task_prolog(),
                   0o700)
        ctld_port, dbd_port, db_port, *node_ports = free_ports(
            3 + len(self.nodes))
        self.db_port = db_port
        _write_new(self.conf, self._slurm_conf(ctld_port, node_ports,
                                               dbd_port), 0o644)
        _write_new(self.conf.with_name('gres.conf'), self._gres_conf(),
                   0o644)
        # slurmdbd refuses a configuration others can read
        _write_new(self.conf.with_name('slurmdbd.conf'),
                   self._slurmdbd_conf(dbd_port, db_port), 0o600)
        self._install_db()
        _write_new(self._layout_file, json.dumps({'nodes': len(self.nodes)}),
                   0o600)

    def write_key(self):
        """A new munge key, 0400 from its creation."""
        _write_new(self.root / 'munge' / 'munge.key',
                   secrets.token_bytes(1024), 0o400)

    def _install_db(self):
        """A fresh MariaDB data folder: job ids restart at 1 with the
        controller's state, so no old accounting record may remain."""
        shutil.rmtree(self.root / 'db', ignore_errors=True)
        data = self._folder('db/data')
        # temporary tables in the cluster's folder: in the shared /tmp a
        # bootstrap failed on a temporary file gone from under it
        tmp = self._folder('db/tmp')
        proc = subprocess.run(
            ['mariadb-install-db', '--no-defaults', f'--datadir={data}',
             '--user=root', '--auth-root-authentication-method=normal',
             '--skip-test-db', f'--tmpdir={tmp}'],
            capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise MiniClusterError(f'mariadb-install-db failed: '
                                   f'{proc.stdout[-1000:]}{proc.stderr}')

    # -- daemons ------------------------------------------------------------

    def _slurmd_cmd(self, node):
        return ['slurmd', '-D', '-N', node, '-f', str(self.conf)]

    def _daemon_cmds(self):
        munge = self.root / 'munge'
        return [
            ('munged', ['munged', '--foreground', '--force',
                        f'--socket={self.munge_socket}',
                        f'--key-file={munge / "munge.key"}',
                        f'--pid-file={munge / "munged.pid"}',
                        f'--seed-file={munge / "munged.seed"}',
                        f'--log-file={self.root / "log" / "munged.log"}']),
            ('mariadbd', ['mariadbd', '--no-defaults',
                          f'--datadir={self.root / "db" / "data"}',
                          f'--tmpdir={self.root / "db" / "tmp"}',
                          '--user=root', '--bind-address=127.0.0.1',
                          f'--port={self.db_port}', '--skip-name-resolve',
                          f'--socket={self.db_socket}',
                          f'--pid-file={self.root / "db" / "mysqld.pid"}',
                          f'--log-error={self.root / "log" / "mariadb.log"}',
                          '--innodb-buffer-pool-size=32M']),
            ('slurmdbd', ['slurmdbd', '-D']),
            ('slurmctld', ['slurmctld', '-D', '-i', '-f', str(self.conf)]),
            *((f'slurmd-{node}', self._slurmd_cmd(node))
              for node in self.nodes),
        ]

    def _record(self, pids):
        _write_new(self._pid_file, json.dumps(pids, indent=1), 0o600)

    def _is_ours(self, pid):
        """The PID still runs a daemon whose command line names this
        cluster's files (a PID reused by another process is not ours)."""
        cmdline = _proc_field(pid, 'cmdline')
        if not _alive(pid) or cmdline is None:
            return False
        # slurmdbd takes no file argument: it has our SLURM_CONF
        return str(self.root).encode() in cmdline or \
            _runs_with(pid, self.conf)

    def running(self):
        """{daemon: pid} of the recorded (or adopted) daemons running."""
        return {name: pid for name, pid in self._adopt().items()
                if self._is_ours(pid)}

    def dead(self):
        """Recorded daemons that are no longer running."""
        return sorted(name for name, pid in self._adopt().items()
                      if not _alive(pid))

    def _adopt(self):
        """The recorded PIDs, a dead slurmctld or slurmd replaced by one
        started again by hand with this cluster's configuration."""
        pids = _read_json(self._pid_file)
        gone = [name for name, pid in pids.items()
                if name == 'slurmctld' or name.startswith('slurmd-')
                if not _alive(pid)]
        if not gone:
            return pids
        found = {}
        for pid in processes_naming(self.conf):
            argv = (_proc_field(pid, 'cmdline') or b'').split(b'\0')
            words = [w.decode(errors='replace') for w in argv if w]
            if not words or str(self.conf) not in words:
                continue
            program = os.path.basename(words[0])
            if program == 'slurmctld':
                found.setdefault('slurmctld', pid)
            elif program == 'slurmd' and '-N' in words[:-1]:
                found.setdefault(f'slurmd-{words[words.index("-N") + 1]}',
                                 pid)
        adopted = {name: found[name] for name in gone if name in found}
        if adopted:
            pids.update(adopted)
            self._record(pids)
        return pids

    def _spawn(self, name, cmd):
        env = dict(os.environ, **self.env())
        fd = os.open(self.root / 'log' / f'{name}.out', os.O_WRONLY |
                     os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, 'ab') as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log,
                                    stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self._record({**_read_json(self._pid_file), name: proc.pid})
        node = name.removeprefix('slurmd-')
        if node != name and self._dedicate:
            # before the node registers, so every job it runs inherits it
            self.dedicated[node] = self.quota.dedicate(node, [proc.pid])
        return proc.pid

    def _children(self):
        """Processes this one started for the cluster, recorded or not."""
        ours = {*processes_naming(self.root),
                *(pid for pid in _live_pids() if _runs_with(pid, self.conf))}
        return [pid for pid in ours if _parent(pid) == os.getpid()]

    def _end_the_rest(self, pids, timeout):
        """End ``pids`` and the job processes, remove the cgroups."""
        pids = [*pids, *job_processes(self.conf)]
        _terminate(pids, timeout)
        self._pid_file.unlink(missing_ok=True)
        self.quota.remove()
        return pids

    def start(self, timeout=None):
        """Start the daemons and wait until every node is idle."""
        why = missing_prerequisites()
        if why:
            raise MiniClusterError(why)
        running = self.running()
        if running and not self.dead():
            raise MiniClusterError(f'a minicluster already runs from '
                                   f'{self.root}; stop it first')
        if len(str(self.munge_socket)) > _MAX_SOCKET_PATH:
            raise MiniClusterError(f'{self.root}: path too long for the munge '
                                   f'socket; choose a shorter --dir')
        timeout = 60 + len(self.nodes) if timeout is None else timeout
        for attempt in range(_START_ATTEMPTS):
            before = self._log_sizes()
            try:
                return self._start_once(timeout)
            except MiniClusterError:
                if attempt + 1 == _START_ATTEMPTS or \
                        not self._port_taken(before):
                    raise

    def _log_sizes(self):
        logs = self.root / 'log'
        try:
            return {p.name: p.stat().st_size for p in logs.iterdir()}
        except OSError:
            return {}

    def _port_taken(self, before):
        """Whether a daemon logged its port taken since ``before``."""
        for name, size in self._log_sizes().items():
            try:
                with open(self.root / 'log' / name, 'rb') as fp:
                    fp.seek(before.get(name, 0))
                    if b'Address already in use' in fp.read(1 << 20):
                        return True
            except OSError:
                continue
        return False

    def _start_once(self, timeout):
        self._secure_root(create=True)
        # what a crashed cluster here left: daemons, job steps, cgroups
        self._end_the_rest(list(self.running().values()), 10)
        try:
            self._write_files()
            ready = {
                'munged': (self.munge_socket.exists, 10, 'munged socket'),
                'mariadbd': (self.db_socket.exists, 60, 'MariaDB socket'),
                'slurmdbd': (self._dbd_answers, 60, 'slurmdbd answering'),
                'slurmctld': (self._controller_answers, 30,
                              'slurmctld answering')}
            for name, cmd in self._daemon_cmds():
                pid = self._spawn(name, cmd)
                if name == 'munged':
                    # until exec, the child's command line is still ours
                    self._wait_for(lambda: self._is_ours(pid), 10,
                                   f'{name} to start')
                if name in ready:
                    self._wait_for(*ready[name])

            self._wait_for(self._all_idle, timeout, 'every node idle')
        except BaseException:
            # an error, Ctrl-C or SIGTERM: nothing started stays running
            self._stop_after_failure()
            raise

    def _stop_after_failure(self):
        # a second Ctrl-C or SIGTERM must not cut the cleanup short
        signals = (signal.SIGINT, signal.SIGTERM) if \
            threading.current_thread() is threading.main_thread() else ()
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals}
        try:
            self.stop()
            _terminate(self._children(), 10)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def restart_node(self, node, timeout=60):
        """Start ``node``'s slurmd again on a clean spool, until in service."""
        self._check_node(node)
        self._secure_root()
        name = f'slurmd-{node}'
        pid = self.running().get(name)
        if pid is not None:
            _terminate([pid], 10)
        spool = self.root / 'state' / 'spool' / node
        shutil.rmtree(spool, ignore_errors=True)
        spool.mkdir(parents=True)
        self._spawn(name, self._slurmd_cmd(node))
        self._wait_for(lambda: not self.node_states().get(
            node, 'down').startswith(('down', 'unk')), timeout,
            f'{node} back in service')
        if self.node_states()[node].startswith('down'):
            self.run('scontrol', 'update', f'nodename={node}', 'state=resume')

    def restart_controller(self, timeout=60):
        """Start slurmctld again on its saved state, until nodes register."""
        self._secure_root()
        pid = self.running().get('slurmctld')
        if pid is not None:
            _terminate([pid], 10)
        self._spawn('slurmctld', ['slurmctld', '-D', '-f', str(self.conf)])
        self._wait_for(self._controller_answers, timeout,
                       'slurmctld answering')
        self._wait_for(lambda: not any(
            s.startswith(('down', 'unk')) or s.endswith('*')
            for s in self.node_states().values()), timeout,
            'every node registered with the new controller')

    def _dbd_answers(self):
        return self.run('sacctmgr', '-n', 'show', 'cluster',
                        check=False).returncode == 0

    def _controller_answers(self):
        return self.run('scontrol', 'ping', check=False).returncode == 0

    def _all_idle(self):
        states = self.node_states()
        return all(states.get(node) == 'idle' for node in self.nodes)

    def _no_jobs(self):
        return not self.run('squeue', '-h', '-t', 'PD,R,CG,S',
                            check=False).stdout.strip()

    def _wait_for(self, ready, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = self.dead()
            if dead:
                raise MiniClusterError(f'{", ".join(dead)} exited; see '
                                       f'{self.root / "log"}')
            with contextlib.suppress(MiniClusterError,
                                     subprocess.SubprocessError):
                if ready():
                    return

            time.sleep(0.2)

        raise MiniClusterError(f'timed out after {timeout} s waiting for '
                               f'{what}; see {self.root / "log"}')

    def stop(self, timeout=10):
        """Cancel jobs, end the daemons (munged last) and job processes."""
        ended = []
        running = self.running()
        if 'slurmctld' in running:
            self.run('scancel', '--full', '-p', PARTITION, check=False)
            # their processes are ended below
            with contextlib.suppress(MiniClusterError):
                self._wait_for(self._no_jobs, timeout, 'jobs to end')

        slurmds = [pid for name, pid in running.items()
                   if name.startswith('slurmd-')]
        # the others in the reverse of their start: munged last
        others = [name for name in reversed(list(running))
                  if not name.startswith('slurmd-')]
        for group in (slurmds, *([running[name]] for name in others)):
            _terminate(group, timeout)
            ended += group
        return ended + self._end_the_rest([], timeout)

    def status(self):
        """(text, healthy): each daemon's PID or DEAD, each node's state."""
        running, dead = self.running(), self.dead()
        lines = [f'{name}: pid {pid}' for name, pid in running.items()]
        lines += [f'{name}: DEAD (exited; see {self.root / "log"})'
                  for name in dead]
        if 'slurmctld' in running:
            lines += [f'node {node}: {state}'
                      for node, state in self.node_states().items()]

        if not lines:
            return f'no minicluster running from {self.root}', False
        return '\n'.join(lines), not dead


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m hpcval.testing.minicluster',
        description='A Slurm cluster of N nodes (n1 ... nN) on this host.')
    parser.add_argument('action', choices=('start', 'stop', 'status',
                                           'restart-node',
                                           'restart-controller'))
    parser.add_argument('node', nargs='?',
                        help='restart-node: the node (n1, n2, ...)')
    parser.add_argument('--dir', default=None,
                        help='folder for configuration, state and logs '
                             '(start: made 0700; default: a new folder of '
                             'a random name in $TMPDIR or /tmp)')
    parser.add_argument('--nodes', type=int, default=None,
                        help=f'start: how many nodes (default '
                             f'{DEFAULT_NODE_COUNT})')
    # NODE may follow --dir, as the usage above writes it
    args = parser.parse_intermixed_args(argv)
    if (args.action == 'restart-node') != (args.node is not None):
        parser.error('a NODE goes with restart-node, and only with it')
    if args.dir is None and args.action != 'start':
        parser.error(f'{args.action} needs the --dir that start printed')
    # SIGTERM (a CI job's timeout) stops what start started, as Ctrl-C does
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        cluster = MiniCluster(args.dir or default_dir(), args.nodes)
        if args.action == 'start':
            cluster.start()
            print(f'minicluster: started in {cluster.root}; stop it with: '
                  f'python -m hpcval.testing.minicluster stop --dir '
                  f'{shlex.quote(str(cluster.root))}', file=sys.stderr)
            print('\n'.join(f'export {name}={shlex.quote(value)}'
                            for name, value in cluster.env().items()))
        elif args.action == 'stop':
            ended = cluster.stop()
            print(f'stopped {len(ended)} processes', file=sys.stderr)
        elif args.action == 'restart-node':
            cluster.restart_node(args.node)
            print(f'{args.node}: slurmd restarted', file=sys.stderr)
        elif args.action == 'restart-controller':
            cluster.restart_controller()
            print('slurmctld restarted', file=sys.stderr)
        else:
            text, healthy = cluster.status()
            print(text)
            return 0 if healthy else 1
    except MiniClusterError as err:
        print(f'minicluster: {err}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f'minicluster: interrupted; what {args.action} started is '
              f'stopped', file=sys.stderr)
        return 130

    return 0


if __name__ == '__main__':
    sys.exit(main())
