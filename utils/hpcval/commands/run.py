"""``hpcval run``: reframe with hpcval's configuration, from any folder;
its exit status is the verdict's of the run (hpcval.exits)."""
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

from hpcval import ci, exits, paths, preflight, selection
from hpcval.commands import refused

HELP = """\
usage: hpcval run [REFRAME OPTIONS]

reframe with hpcval's configuration (first in RFM_CONFIG_FILES), from any
folder; every option of ReFrame's (reframe --help lists them) is accepted.
What hpcval adds to ReFrame:
  before it starts   an unknown --system or --mode, a system whose host
                     names do not match this host, a fixed --mode narrowed
                     by -n/-t/-x: refused in one line, nothing submitted
  after it ran       a selection of no test case is refused; the verdict's
                     headline of the run is printed (hpcval verdict judges
                     the report) and is the exit status
  --ci-generate FILE a GitLab pipeline whose jobs run hpcval run and whose
                     last stage runs hpcval verdict (docs/ci.md)

"""

#: ReFrame's line naming the session it stored in its results database
_STORED = re.compile(r'Current session stored with UUID: ([0-9a-f-]{36})')


def show_help():
    try:
        print(f'{HELP}{exits.epilog("run")}', flush=True)
    except BrokenPipeError:     # | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exits.OK


def _verdict_after(reframe_args, session, started, hpcval):
    """(the verdict's headline of the run ReFrame just made, its status),
    judged by ``hpcval`` (the command line's main); None: nothing ran."""
    report = selection.option_value(reframe_args, '--report-file')
    # a report older than the run is an earlier run's: never judged as this
    # one (a second of slack for file systems' coarse times)
    if report and '{' not in report and os.path.isfile(report) and \
            os.path.getmtime(report) >= started - 1:
        args = ['verdict', report]
    elif session:
        args = ['verdict', '--db', '--session', session]
    else:
        return None
    out = io.StringIO()
    with contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        status = hpcval([*args, '--format', 'json'])
    try:
        judged = json.loads(out.getvalue())
        first = f'hpcval verdict: {judged["verdict"]} (exit {status})'
    except ValueError:
        judged, first = None, 'hpcval verdict: could not judge the run'
    if judged is not None and not judged['partitions'] and \
            not judged['problems']:
        # a session of fixtures alone (a CI pipeline's build job): no
        # test to judge, ReFrame's word stands
        return None
    return f'{first}  (all of it: {shlex.join(["hpcval", *args])})', status


def _passthrough(cmd, env, pattern):
    """(exit status, whether a line matched ``pattern``, the session
    ReFrame stored or None) of ``cmd``, its output copied line by line.
    Ctrl-C reaches ReFrame (same process group), SIGTERM is passed on."""
    seen, session = False, None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
    with contextlib.suppress(ValueError):       # not the main thread
        signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    out = sys.stdout.buffer
    for line in iter(lambda: _uninterrupted(proc.stdout.readline), b''):
        out.write(line)
        out.flush()
        text = line.decode('utf-8', 'replace')
        seen = seen or bool(pattern.search(text))
        stored = _STORED.search(text)
        session = stored.group(1) if stored else session
    return _uninterrupted(proc.wait), seen, session


def _uninterrupted(call):
    """``call()``, again after each Ctrl-C (ReFrame gets it too)."""
    while True:
        try:
            return call()
        except KeyboardInterrupt:
            continue


def run_reframe(reframe_args, hpcval):
    """``reframe`` with hpcval's configuration first in RFM_CONFIG_FILES,
    after hpcval.preflight's checks; its status is the verdict's of the
    run (judged by ``hpcval``, the command line's main)."""
    config = paths.config_file()
    given = [f for f in os.environ.get('RFM_CONFIG_FILES', '').split(':')
             if f and os.path.abspath(f) != config]
    env = dict(os.environ, RFM_CONFIG_FILES=':'.join([config, *given]))
    try:
        refusal = preflight.refusal_before(reframe_args, os.environ,
                                           socket.gethostname())
    except paths.SiteError as err:      # a site module that does not load
        refusal = str(err)
    if refusal:
        return refused('run', refusal, preflight.REFUSED)
    here = os.path.dirname(sys.executable)
    exe = shutil.which('reframe', path=os.pathsep.join(
        [here, env.get('PATH', '')]))
    if not exe:
        return refused('run', 'no reframe executable next to this Python '
                       'or on PATH')
    if any(a == '--ci-generate' or a.startswith('--ci-generate=')
           for a in reframe_args):
        try:
            return exits.INPUT if ci.generate(reframe_args, exe, env) \
                else exits.OK
        except (ci.CiError, OSError) as err:
            return refused('run', err)
    started = time.time()
    status, saw_zero, session = _passthrough([exe, *reframe_args], env,
                                             preflight.ZERO)
    refusal = preflight.refusal_after(reframe_args, saw_zero)
    if refusal and status == 0:
        return refused('run', refusal, preflight.REFUSED)
    judged = _verdict_after(reframe_args, session, started, hpcval)
    if judged is None:
        # nothing ran to judge (-l, --dry-run, or ReFrame stopped first)
        return exits.OK if status == 0 else exits.INPUT
    headline, verdict_status = judged
    print(headline, flush=True)
    if verdict_status == exits.OK and status != 0:
        return refused('run', f'ReFrame exited {status} though the verdict '
                       f'passed: not validated', exits.INCOMPLETE)
    return verdict_status
