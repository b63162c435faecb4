"""A two-node Slurm cluster on this host, for the test suite and by hand.

    python -m hpcval.testing.minicluster start  --dir DIR   # prints: export SLURM_CONF=...
    python -m hpcval.testing.minicluster status --dir DIR
    python -m hpcval.testing.minicluster stop   --dir DIR

Debian's ``slurm-wlm`` and ``munge``, run as root: one ``munged`` with its
own key and socket, one ``slurmctld`` and two ``slurmd`` (``-N n1``, ``-N
n2``) on free ports picked at start.  Configuration, state, logs, spool
and the munge key live under DIR; the system's /etc/munge, /etc/slurm and
any munged or Slurm someone else runs are left alone.  ``stop`` ends
exactly the daemons ``start`` recorded (by PID, checking that the PID is
still the daemon started here), then any job process left over from them.

Faults for tests: every task launched on node N first goes through a task
prolog that emits the lines of ``DIR/faults/N`` (Slurm's TaskProlog
protocol: ``export NAME=value``), so a test can break one node's
environment the way a broken software stack does.
"""
import argparse
import json
import os
import pathlib
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

NODES = ('n1', 'n2')
#: CPUs each slurmd declares: two ranks fit on one node (ping-pong on_node)
CPUS_PER_NODE = 2
REAL_MEMORY_MB = 1000
PARTITION = 'debug'
DAEMONS = ('munged', 'slurmctld', 'slurmd')
# unix socket paths are limited to 108 bytes (sun_path)
_MAX_SOCKET_PATH = 100


class MiniClusterError(RuntimeError):
    """The cluster could not be started, queried or stopped."""


def missing_prerequisites():
    """Why the minicluster cannot run here ('' when it can)."""
    if os.geteuid() != 0:
        return 'the minicluster runs its Slurm and munge daemons as root'

    tools = [t for t in ('munged', 'slurmctld', 'slurmd', 'srun', 'sbatch',
                         'scontrol', 'sinfo', 'squeue', 'sacct', 'scancel')
             if shutil.which(t) is None]
    if tools:
        return (f'not installed: {" ".join(tools)} (./bootstrap.sh --tests '
                f'installs Debian\'s slurm-wlm and munge)')

    return ''


def free_ports(count):
    """``count`` distinct TCP ports nobody listens on right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(('127.0.0.1', 0))
            sockets.append(sock)

        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _proc_field(pid, name):
    try:
        return pathlib.Path(f'/proc/{pid}/{name}').read_bytes()
    except OSError:
        return None


def _alive(pid):
    """Running and not a zombie waiting for a parent to reap it."""
    stat = _proc_field(pid, 'stat')
    if stat is None:
        return False

    # 'pid (comm) S ...': the state follows the last ')'
    return stat[stat.rindex(b')') + 2:][:1] not in (b'Z', b'X')


def _parent(pid):
    stat = _proc_field(pid, 'stat')
    if stat is None:
        return None

    return int(stat[stat.rindex(b')') + 2:].split()[1])


def _live_pids():
    return [int(e.name) for e in pathlib.Path('/proc').iterdir()
            if e.name.isdigit() and _alive(int(e.name))]


def processes_naming(path):
    """Live processes whose command line contains ``path``: the daemons of
    the cluster under that folder."""
    needle = str(path).encode()
    return [pid for pid in _live_pids()
            if needle in (_proc_field(pid, 'cmdline') or b'')
            and pid != os.getpid()]


def job_processes(conf):
    """Job steps of the cluster configured by ``conf``: the slurmstepd
    processes that inherited its SLURM_CONF from our slurmd, and every
    process they started.  A shell that merely exported SLURM_CONF is not
    one of them."""
    needle = f'SLURM_CONF={conf}\0'.encode()
    pids = _live_pids()
    steps = {pid for pid in pids
             if (_proc_field(pid, 'comm') or b'').strip() == b'slurmstepd'
             and needle in (_proc_field(pid, 'environ') or b'')}
    found, grew = set(steps), True
    while grew:
        children = {pid for pid in pids if _parent(pid) in found} - found
        found |= children
        grew = bool(children)

    return sorted(found)


def _reap(pid):
    """Collect the exit status of a daemon this process started, so that
    it leaves no zombie behind while we live on (pytest)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass        # not our child: init reaps it


def _terminate(pids, timeout):
    """SIGTERM, then SIGKILL what is still there after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

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


class MiniCluster:
    """The cluster whose files live under ``root``."""

    def __init__(self, root):
        self.root = pathlib.Path(root).resolve()
        self.conf = self.root / 'etc' / 'slurm.conf'
        self.munge_socket = self.root / 'munge' / 'munge.socket'
        self.faults = self.root / 'faults'
        self._pid_file = self.root / 'daemons.json'

    # -- what a shell or a test needs ---------------------------------------

    def env(self):
        """Environment variables for Slurm commands and ReFrame."""
        return {'SLURM_CONF': str(self.conf)}

    def shell_exports(self):
        return '\n'.join(f'export {name}={shlex.quote(value)}'
                         for name, value in self.env().items())

    def run(self, *cmd, check=True, timeout=30):
        """A Slurm command against this cluster; its CompletedProcess."""
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, **self.env()),
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise MiniClusterError(f'{shlex.join(cmd)} failed '
                                   f'({proc.returncode}): {proc.stderr}')

        return proc

    def node_states(self):
        """{node: state} as sinfo reports it ('idle', 'down*', ...)."""
        out = self.run('sinfo', '-h', '-N', '-o', '%N %t').stdout
        return dict(line.split() for line in out.splitlines() if line.strip())

    def inject_fault(self, node, *prolog_lines):
        """Every task started on ``node`` from now gets these TaskProlog
        lines (``export NAME=value``, ``unset NAME``)."""
        if node not in NODES:
            raise MiniClusterError(f'no node {node!r}: {", ".join(NODES)}')

        (self.faults / node).write_text(''.join(f'{line}\n'
                                                for line in prolog_lines))

    def clear_faults(self):
        for node in NODES:
            (self.faults / node).unlink(missing_ok=True)

    # -- configuration ------------------------------------------------------

    def _slurm_conf(self, ctld_port, node_ports):
        host = socket.gethostname().split('.')[0]
        state = self.root / 'state'
        log = self.root / 'log'
        auth = f'socket={self.munge_socket}'
        lines = [
            'ClusterName=minicluster',
            f'SlurmctldHost={host}(127.0.0.1)',
            f'SlurmctldPort={ctld_port}',
            'SlurmUser=root',
            'SlurmdUser=root',
            'AuthType=auth/munge',
            f'AuthInfo={auth}',
            'CredType=cred/munge',
            # no cgroups: several slurmd share this host and its hierarchy
            'ProctrackType=proctrack/linuxproc',
            'TaskPlugin=task/none',
            'JobAcctGatherType=jobacct_gather/none',
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
            # time limits and cancellations take effect in seconds
            'KillWait=2',
            'OverTimeLimit=0',
            'MessageTimeout=10',
            'SlurmdTimeout=30',
            'InactiveLimit=0',
            'MinJobAge=600',
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
        for node, port in zip(NODES, node_ports):
            lines.append(f'NodeName={node} NodeHostname={host} '
                         f'NodeAddr=127.0.0.1 Port={port} '
                         f'CPUs={CPUS_PER_NODE} '
                         f'RealMemory={REAL_MEMORY_MB} State=UNKNOWN')

        lines.append(f'PartitionName={PARTITION} Nodes={",".join(NODES)} '
                     f'Default=YES MaxTime=INFINITE State=UP')
        return '\n'.join(lines) + '\n'

    def _task_prolog(self):
        return ('#!/bin/sh\n'
                '# minicluster fault hook: lines of faults/<node> reach the '
                'task\n'
                f'f={shlex.quote(str(self.faults))}/"$SLURMD_NODENAME"\n'
                '[ -r "$f" ] && cat "$f"\n'
                'exit 0\n')

    def _write_files(self):
        for sub in ('etc', 'munge', 'state/ctld', 'log', 'faults',
                    *(f'state/spool/{n}' for n in NODES)):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

        # munged wants its key folder writable by its owner only, and
        # searchable by all for the socket
        os.chmod(self.root / 'munge', 0o711)
        key = self.root / 'munge' / 'munge.key'
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        prolog = self.root / 'etc' / 'task_prolog.sh'
        prolog.write_text(self._task_prolog())
        os.chmod(prolog, 0o755)
        ports = free_ports(1 + len(NODES))
        self.conf.write_text(self._slurm_conf(ports[0], ports[1:]))

    # -- daemons ------------------------------------------------------------

    def _daemon_cmds(self):
        munge = self.root / 'munge'
        conf = str(self.conf)
        return [
            ('munged', ['munged', '--foreground', '--force',
                        f'--socket={self.munge_socket}',
                        f'--key-file={munge / "munge.key"}',
                        f'--pid-file={munge / "munged.pid"}',
                        f'--seed-file={munge / "munged.seed"}',
                        f'--log-file={self.root / "log" / "munged.log"}']),
            ('slurmctld', ['slurmctld', '-D', '-i', '-f', conf]),
            *((f'slurmd-{node}', ['slurmd', '-D', '-N', node, '-f', conf])
              for node in NODES),
        ]

    def _recorded(self):
        if not self._pid_file.exists():
            return {}

        return json.loads(self._pid_file.read_text())

    def _is_ours(self, pid):
        """The PID still runs a daemon whose command line names this
        cluster's files (a PID reused by another process is not ours)."""
        cmdline = _proc_field(pid, 'cmdline')
        return (_alive(pid) and cmdline is not None and
                str(self.root).encode() in cmdline)

    def running(self):
        """{daemon: pid} of the recorded daemons still running."""
        return {name: pid for name, pid in self._recorded().items()
                if self._is_ours(pid)}

    def start(self, timeout=60):
        """Start the daemons and wait until every node is idle."""
        why = missing_prerequisites()
        if why:
            raise MiniClusterError(why)

        if self.running():
            raise MiniClusterError(f'a minicluster already runs from '
                                   f'{self.root}; stop it first')

        if len(str(self.munge_socket)) > _MAX_SOCKET_PATH:
            raise MiniClusterError(f'{self.root}: path too long for the munge '
                                   f'socket; choose a shorter --dir')

        self._write_files()
        pids = {}
        env = dict(os.environ, **self.env())
        try:
            for name, cmd in self._daemon_cmds():
                log = open(self.root / 'log' / f'{name}.out', 'ab')
                with log:
                    proc = subprocess.Popen(cmd, env=env, stdout=log,
                                            stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            start_new_session=True)
                pids[name] = proc.pid
                self._pid_file.write_text(json.dumps(pids, indent=1))
                # until exec, the child's command line is still ours
                self._wait_for(lambda: self._is_ours(proc.pid), 10,
                               f'{name} to start')
                if name == 'munged':
                    self._wait_for(self.munge_socket.exists, 10,
                                   'munged socket')
                elif name == 'slurmctld':
                    self._wait_for(self._controller_answers, 20,
                                   'slurmctld answering')

            self._wait_for(self._all_idle, timeout, 'both nodes idle')
        except Exception:
            self.stop()
            raise

    def _controller_answers(self):
        return self.run('scontrol', 'ping', check=False).returncode == 0

    def _all_idle(self):
        states = self.node_states()
        return all(states.get(node) == 'idle' for node in NODES)

    def _no_jobs(self):
        return not self.run('squeue', '-h', '-t', 'PD,R,CG,S',
                            check=False).stdout.strip()

    def _wait_for(self, ready, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [name for name, pid in self._recorded().items()
                    if not _alive(pid)]
            if dead:
                raise MiniClusterError(f'{", ".join(dead)} exited; see '
                                       f'{self.root / "log"}')
            try:
                if ready():
                    return
            except (MiniClusterError, subprocess.SubprocessError):
                pass

            time.sleep(0.2)

        raise MiniClusterError(f'timed out after {timeout} s waiting for '
                               f'{what}; see {self.root / "log"}')

    def stop(self, timeout=10):
        """Cancel jobs, end the daemons started here (compute nodes first,
        munged last) and any job process left from them; returns the PIDs
        ended."""
        ended = []
        running = self.running()
        if 'slurmctld' in running:
            self.run('scancel', '--full', '-p', PARTITION, check=False)
            try:
                self._wait_for(self._no_jobs, timeout, 'jobs to end')
            except MiniClusterError:
                pass        # their processes are ended below


        order = sorted(running, key=lambda name: (
            not name.startswith('slurmd'), name == 'munged'))
        for name in order:
            _terminate([running[name]], timeout)
            ended.append(running[name])

        leftovers = job_processes(self.conf)
        _terminate(leftovers, timeout)
        ended += leftovers
        self._pid_file.unlink(missing_ok=True)
        return ended

    def status(self):
        running = self.running()
        lines = [f'{name}: pid {pid}' for name, pid in running.items()]
        if 'slurmctld' in running:
            lines += [f'node {node}: {state}'
                      for node, state in self.node_states().items()]

        return '\n'.join(lines) or f'no minicluster running from {self.root}'


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m hpcval.testing.minicluster',
        description='A two-node Slurm cluster (n1, n2) on this host.')
    parser.add_argument('action', choices=('start', 'stop', 'status'))
    parser.add_argument('--dir', required=True,
                        help='folder for configuration, state and logs')
    args = parser.parse_args(argv)
    cluster = MiniCluster(args.dir)
    try:
        if args.action == 'start':
            cluster.start()
            print(cluster.shell_exports())
        elif args.action == 'stop':
            ended = cluster.stop()
            print(f'stopped {len(ended)} processes', file=sys.stderr)
        else:
            print(cluster.status())
    except MiniClusterError as err:
        print(f'minicluster: {err}', file=sys.stderr)
        return 1

    return 0


if __name__ == '__main__':
    sys.exit(main())
