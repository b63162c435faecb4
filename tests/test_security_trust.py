"""Issue 26's trust-boundary attacks, each through the real command: the
minicluster's --dir and start, the site layer, -S on ReFrame's own
variables and the fixed modes.  Where the attack needs another local user,
a real unprivileged one is made here (useradd; the tests run as root, as
CI does) and removed after.  docs/security.md lists each defence with its
test."""
import json
import os
import pathlib
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import require_minicluster
from hpcval import inputs, preflight, suites, trust
from hpcval.testing import minicluster as mc
from rfmrun import ROOT, VENV_BIN, reframe

LIKWID = ('checks/likwid_bench.py',)
WARN = {'RFM_WARN_AS_ERROR': 'no'}


def _need_root():
    if os.geteuid() != 0:
        if os.environ.get('CI') == 'true':
            pytest.fail('CI=true: these attacks need root to make a user')
        pytest.skip('making another local user needs root')


@pytest.fixture(scope='module')
def other_user():
    """A real unprivileged local user, removed after the module."""
    _need_root()
    name = f'hpcvalx{secrets.token_hex(3)}'
    subprocess.run(['useradd', '--system', '--no-create-home', '--shell',
                    '/usr/sbin/nologin', name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(['userdel', name], check=False)


def as_user(user, *cmd):
    """``cmd`` run as ``user`` (its own uid and gid, no other groups)."""
    return subprocess.run(['setpriv', f'--reuid={user.pw_uid}',
                           f'--regid={user.pw_gid}', '--clear-groups', *cmd],
                          capture_output=True, text=True, check=True)


@pytest.fixture
def shared_tmp():
    """A folder like /tmp: world-writable with the sticky bit, reachable by
    every user."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix='hpcval-shared-',
                                           dir='/tmp'))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _hpcval(*args, env=None):
    return subprocess.run([str(VENV_BIN / 'hpcval'), *args],
                          env=dict(os.environ, HPCVAL_ROOT=str(ROOT),
                                   **(env or {})),
                          capture_output=True, text=True, timeout=120)


def _minicluster(*args):
    return subprocess.run([str(VENV_BIN / 'python'), '-m',
                           'hpcval.testing.minicluster', *args],
                          capture_output=True, text=True, timeout=120)


def one_line_error(proc, *words):
    out = proc.stdout + proc.stderr
    assert proc.returncode not in (0, None), out[-3000:]
    assert 'Traceback' not in out, out[-3000:]
    for word in words:
        assert word in out, (word, out[-3000:])


# -- the minicluster: root daemons started from --dir ------------------------

class TestMiniclusterDir:
    """Started as root with --dir in a shared folder, the minicluster used
    a folder another user made (who then swapped etc/task_prolog.sh: the
    next srun ran it as root); a symlinked --dir was written through."""

    def test_a_folder_made_by_another_user_is_refused(self, other_user,
                                                      shared_tmp):
        require_minicluster()
        folder = shared_tmp / 'mc'
        as_user(other_user, 'mkdir', '-m', '0777', str(folder))
        proc = _minicluster('start', '--dir', str(folder))
        one_line_error(proc, f'--dir {folder}',
                       f'owned by uid {other_user.pw_uid}', 'not used')
        assert os.listdir(folder) == []

    def test_a_folder_others_can_write_is_refused(self, shared_tmp):
        require_minicluster()
        folder = shared_tmp / 'mc'
        folder.mkdir()
        folder.chmod(0o777)
        proc = _minicluster('start', '--dir', str(folder))
        one_line_error(proc, 'writable by group or others (mode 0777)')
        assert os.listdir(folder) == []

    def test_a_symlinked_folder_is_not_written_through(self, tmp_path):
        require_minicluster()
        target = tmp_path / 'precious'
        for sub in ('munge', 'db', 'state'):
            (target / sub).mkdir(parents=True)
        (target / 'munge' / 'munge.key').write_bytes(b'the real key')
        link = tmp_path / 'mc'
        link.symlink_to(target)
        proc = _minicluster('start', '--dir', str(link))
        one_line_error(proc, 'symbolic link', 'not used')
        assert (target / 'munge' / 'munge.key').read_bytes() == \
            b'the real key'
        assert sorted(os.listdir(target)) == ['db', 'munge', 'state']

    def test_the_key_is_never_readable_by_others(self, tmp_path,
                                                 monkeypatch):
        # made 0400 by open(): a chmod after it would leave a window
        cluster = mc.MiniCluster(tmp_path / 'mc')
        cluster._secure_root(create=True)
        cluster._folder('munge')
        monkeypatch.setattr(os, 'chmod', None)
        cluster.write_key()
        key = cluster.root / 'munge' / 'munge.key'
        assert stat.S_IMODE(key.stat().st_mode) == 0o400
        assert stat.S_IMODE(cluster.root.stat().st_mode) == 0o700
        assert key.stat().st_size == 1024

    def test_the_default_folder_is_new_private_and_unguessable(self):
        first, second = mc.default_dir(), mc.default_dir()
        try:
            assert first != second
            for folder in (first, second):
                st = os.lstat(folder)
                assert stat.S_IMODE(st.st_mode) == 0o700
                assert st.st_uid == os.geteuid()
                assert os.path.dirname(folder) == tempfile.gettempdir()
        finally:
            os.rmdir(first)
            os.rmdir(second)

    def test_stop_without_the_folder_is_a_usage_error(self):
        proc = _minicluster('stop')
        assert proc.returncode == 2 and 'needs the --dir' in proc.stderr


def _ours(folder):
    conf = f'SLURM_CONF={folder}/etc/slurm.conf\0'.encode()
    return sorted({*mc.processes_naming(folder),
                   *(pid for pid in mc._live_pids() if conf in (
                       mc._proc_field(pid, 'environ') or b''))})


def _catches(pid, sig):
    """Whether process ``pid`` has a handler of ``sig`` (/proc's SigCgt)."""
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('SigCgt:'):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_during_start_stops_what_was_started(shared_tmp, other_user,
                                                    sig):
    """Ctrl-C during start left munged, mariadbd, slurmdbd and slurmctld
    running as root; an unprivileged process read the munge key while
    start ran.  SIGTERM (a CI job's timeout) is handled as Ctrl-C.  Start
    is held (SIGSTOP) from its slurmdbd on, with its handler of ``sig`` in
    place, until the signal is pending: it cannot finish first."""
    require_minicluster()
    # in a folder every user reaches: only the cluster's own 0700 protects
    folder = shared_tmp / 'mc'
    # SIGINT at its default, as a terminal's Ctrl-C finds it: a suite
    # started in the background of a script inherits it ignored, and
    # Python then installs no handler
    proc = subprocess.Popen([str(VENV_BIN / 'python'), '-m',
                             'hpcval.testing.minicluster', 'start', '--dir',
                             str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    pids = folder / 'daemons.json'
    deadline = time.monotonic() + 90
    started = {}
    try:
        while time.monotonic() < deadline and 'slurmdbd' not in started:
            time.sleep(0.1)
            try:
                started = json.loads(pids.read_text())
            except (OSError, ValueError):
                pass
        assert 'slurmdbd' in started, proc.stderr
        proc.send_signal(signal.SIGSTOP)
        assert _catches(proc.pid, sig)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        key = folder / 'munge' / 'munge.key'
        assert stat.S_IMODE(key.stat().st_mode) == 0o400
        with pytest.raises(subprocess.CalledProcessError) as read:
            as_user(other_user, 'cat', str(key))
        assert 'Permission denied' in read.value.stderr
        assert _ours(folder)
        proc.send_signal(sig)
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert 'interrupted' in err and 'Traceback' not in err
        assert _ours(folder) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        mc._terminate(_ours(folder), 10)


# -- the site layer: code loaded as root -------------------------------------

EVIL_SYSTEM = '''\
import pathlib
pathlib.Path({marker!r}).write_text('ran')
'''


class TestSiteLayer:

    def test_init_refuses_an_empty_folder_of_another_user(self, other_user,
                                                          shared_tmp):
        folder = shared_tmp / 'site'
        as_user(other_user, 'mkdir', '-m', '0755', str(folder))
        proc = _hpcval('site', 'init', str(folder))
        one_line_error(proc, f'owned by uid {other_user.pw_uid}',
                       'nothing written')
        assert proc.returncode == 3 and os.listdir(folder) == []

    def test_a_site_of_another_user_is_not_loaded(self, other_user,
                                                  shared_tmp, tmp_path):
        site = shared_tmp / 'site'
        marker = tmp_path / 'MARKER'
        source = shared_tmp / 'evil.py'
        source.write_text(EVIL_SYSTEM.format(marker=str(marker)))
        as_user(other_user, 'mkdir', '-p', str(site / 'systems'))
        as_user(other_user, 'cp', str(source), str(site / 'systems'))
        proc, _ = reframe('-l', tmp_path=tmp_path, checks=LIKWID,
                          env={**WARN, 'HPCVAL_SITE': str(site)})
        one_line_error(proc, f'HPCVAL_SITE={site}: not used',
                       f'owned by uid {other_user.pw_uid}')
        assert not marker.exists()

    @pytest.fixture
    def site(self, tmp_path):
        folder = tmp_path / 'site'
        assert _hpcval('site', 'init', str(folder)).returncode == 0
        return folder

    @pytest.mark.parametrize('part, mode, words', [
        ('systems', 0o777, 'systems/ not used'),
        ('checks', 0o775, 'checks/ not used'),
        ('references/local.yaml', 0o666, 'references/ not used'),
        ('.', 0o757, 'HPCVAL_SITE='),
    ])
    def test_parts_others_can_write_are_refused(self, site, part, mode,
                                                words):
        path = site / part
        if not path.exists():
            shutil.copyfile(ROOT / 'references' / 'local.yaml', path)
        path.chmod(mode)
        proc = _hpcval('paths', env={'HPCVAL_SITE': str(site)})
        one_line_error(proc, words, 'writable by group or others',
                       f'mode {mode:04o}')

    def test_a_file_of_another_user_is_refused(self, site, other_user):
        module = site / 'systems' / 'x.py'
        module.write_text('')
        os.chown(module, other_user.pw_uid, other_user.pw_gid)
        proc = _hpcval('paths', env={'HPCVAL_SITE': str(site)})
        one_line_error(proc, f'{module} is owned by uid {other_user.pw_uid}')

    @pytest.mark.parametrize('name', [
        '{evil}', 'local/../frontier', '_site', 'frontier\n', 'frontier.py'])
    def test_from_takes_a_system_name_only(self, tmp_path, name):
        # the issue's: --from "$(realpath --relative-to=systems OTHER)/evil"
        (tmp_path / 'evil.py').write_text('raise SystemExit("evil")\n')
        name = name.format(evil=os.path.relpath(tmp_path / 'evil',
                                                ROOT / 'systems'))
        folder = tmp_path / 'new'
        proc = _hpcval('site', 'init', str(folder), '--from', name)
        one_line_error(proc, 'not the name of a built-in system')
        assert not folder.exists()

    def test_site_modules_cannot_take_private_names(self, site, tmp_path):
        marker = tmp_path / 'MARKER'
        (site / 'systems' / '_site.py').write_text(
            EVIL_SYSTEM.format(marker=str(marker)))
        proc, _ = reframe('-l', tmp_path=tmp_path, checks=LIKWID,
                          env={**WARN, 'HPCVAL_SITE': str(site)})
        one_line_error(proc, f'{site}/systems/_site.py: names starting with '
                             f'_ are hpcval\'s own modules')
        assert not marker.exists()

    def test_a_check_of_a_built_in_name_in_another_file_is_refused(
            self, site):
        (site / 'checks' / 'mine.py').write_text(
            'class LikwidBenchCheck:\n    pass\n')
        proc = _hpcval('paths', env={'HPCVAL_SITE': str(site)})
        one_line_error(proc, 'class LikwidBenchCheck has the name of the '
                             'built-in check in checks/likwid_bench.py')

    def test_replacements_are_announced_and_listed(self, site, tmp_path):
        shutil.copyfile(ROOT / 'references' / 'local.yaml',
                        site / 'references' / 'local.yaml')
        shutil.copyfile(ROOT / 'checks' / 'likwid_bench.py',
                        site / 'checks' / 'likwid_bench.py')
        env = {'HPCVAL_SITE': str(site)}
        listed = _hpcval('paths', env=env)
        assert listed.returncode == 0, listed.stderr
        # a reference file without replace: true is layered, not replaced
        assert (f'layered    references/local.yaml under '
                f'{site}/references/local.yaml') in listed.stdout
        assert (f'replaced   checks/likwid_bench.py by '
                f'{site}/checks/likwid_bench.py') in listed.stdout
        # without -c, ReFrame takes the configuration's search path: the
        # site's copy alone, not both under one name
        proc = subprocess.run(
            [str(VENV_BIN / 'hpcval'), 'run', '-l', '--system', 'local',
             '-n', 'LikwidBenchCheck%kernel=copy', '--prefix',
             str(tmp_path / 'rfm')],
            env=dict(os.environ, HPCVAL_ROOT=str(ROOT), **WARN, **env,
                     RFM_SQLITE_DB_FILE=str(tmp_path / 'r.db')),
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        assert (f'hpcval: site checks: {site}/checks/likwid_bench.py '
                f'replaces the built-in checks/likwid_bench.py') in proc.stderr
        listed = [line for line in proc.stdout.splitlines()
                  if line.startswith('- LikwidBenchCheck')]
        assert len(listed) == 1, proc.stdout
        assert str(site) in proc.stdout


# -- -S on ReFrame's own variables (issue 26, item 7) ------------------------

class TestSetvarOnReframeVariables:
    """-S X.env_vars=FOO:$(touch F) gave ``export FOO=$(touch F)`` in the
    job script; -S X.prerun_cmds=... a command line."""

    @pytest.mark.parametrize('assignment', [
        'LikwidBenchCheck.env_vars=FOO:$(touch {marker})',
        'env_vars=FOO:`touch {marker}`',
        'variables=FOO:x;touch {marker}',
        'LikwidBenchCheck.prerun_cmds=touch {marker}',
        'postrun_cmds=touch {marker}',
        'executable_opts=-x;touch {marker}',
        'executable=touch {marker}',
        'modules=gcc$(touch {marker})',
        'sourcesdir=/tmp/x;touch {marker}',
    ])
    def test_refused_before_any_script(self, tmp_path, assignment):
        marker = tmp_path / 'MARKER'
        setting = assignment.format(marker=marker)
        proc, _ = reframe('--dry-run', '-n', 'LikwidBenchCheck%kernel=copy',
                          '-S', setting, tmp_path=tmp_path, checks=LIKWID,
                          env=WARN)
        name = setting.split('=', 1)[0].rsplit('.', 1)[-1]
        one_line_error(proc, f'-S {name}=', 'nothing was run')
        assert not marker.exists()
        assert not list(tmp_path.rglob('rfm_job.sh'))

    def test_safe_values_reach_the_script(self, tmp_path):
        proc, _ = reframe('--dry-run', '-n', 'LikwidBenchCheck%kernel=copy',
                          '-S', 'LikwidBenchCheck.env_vars=FOO:bar/1',
                          tmp_path=tmp_path, checks=LIKWID, env=WARN)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        [script] = tmp_path.rglob('rfm_job.sh')
        assert 'export FOO=bar/1' in script.read_text()

    def test_commands_name_the_way_out(self):
        with pytest.raises(inputs.InputError, match='site check'):
            inputs.check_reframe_variable('prerun_cmds', 'echo hi')


# -- modes that mean something (issue 26, item 8) ----------------------------

class TestFixedModes:
    """--mode acceptance -S LikwidBenchCheck.working_set=16kB measured L1
    and passed; --mode acceptance -n '...%kernel=copy' said PASSED for one
    test case."""

    @pytest.mark.parametrize('args, words', [
        (('--mode', 'acceptance', '-S', 'LikwidBenchCheck.working_set=16kB'),
         ('--mode acceptance: -S LikwidBenchCheck.working_set=16kB: not the '
          'acceptance suite, which runs every check as it is',)),
        (('--mode', 'acceptance', '-n', 'LikwidBenchCheck%kernel=copy'),
         ('--mode acceptance: -n LikwidBenchCheck%kernel=copy: ',)),
        (('--mode', 'screen', '-x', 'LikwidBenchCheck'),
         ('--mode screen: -x LikwidBenchCheck: ',)),
        (('--mode=acceptance', '--setv', 'strict=no'),
         ('-S strict=no: ',)),
        (('--mode', 'acceptance', '--skip-performance-check'),
         ('--mode acceptance: --skip-performance-check: ',)),
        (('--mode', 'screen', '--max-retries', '3'),
         ('--mode screen: --max-retries 3: ',)),
        (('--mode', 'acceptance', '--disable-hook', 'assemble_job_script'),
         ('--mode acceptance: --disable-hook assemble_job_script: ',)),
        (('--mode', 'acceptance', '-P', 'LikwidBenchCheck.working_set=16kB'),
         ('--mode acceptance: -P LikwidBenchCheck.working_set=16kB: ',)),
        (('--mode', 'screen', '-S', 'LikwidBenchCheck.repeats=1'),
         ('--mode screen: -S LikwidBenchCheck.repeats=1: ',)),
    ])
    def test_refused(self, tmp_path, args, words):
        # the whole suite's check files: only ``args`` is refused
        proc, report = reframe('-r', *args, tmp_path=tmp_path, env=WARN)
        one_line_error(proc, *words, 'nothing was run')
        assert report is None

    def test_where_sources_come_from_may_be_given(self, tmp_path):
        # the suite's every check file: -c one of them is a narrowed
        # acceptance (tests/test_verdict_modes.py)
        proc, _ = reframe('-l', '--mode', 'acceptance', '-S',
                          f'src_mirror={tmp_path}', tmp_path=tmp_path,
                          env=WARN)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr

    @pytest.mark.parametrize('args, flag', [
        (['-t', 'gpu'], '-t gpu'), (['-T', 'x'], '-T x'),
        (['-E', 'x'], '-E x'), (['--maintainer', 'x'], '--maintainer x'),
        (['--cpu-only'], '--cpu-only'), (['--gpu-only'], '--gpu-only'),
        (['--failed'], '--failed'), (['-p', '.*', '-p', 'gnu'], '-p gnu'),
        (['--skip-sanity-check'], '--skip-sanity-check'),
        (['--skip-system-check'], '--skip-system-check'),
        (['--skip-prgenv-check'], '--skip-prgenv-check'),
        (['-rn', 'X'], '-n X'), (['-rx', 'X'], '-x X'),
        (['--disable-h', 'x'], '--disable-hook x'),
        (['--job-option=--gres=gpu:1'], '-J --gres=gpu:1'),
        (['--repeat', '2'], '--repeat 2'), (['-m', 'cuda'], '-m cuda'),
        (['--distribute=all'], '--distribute all'),
        (['--exec-order', 'random'], '--exec-order random')])
    def test_every_option_not_known_harmless(self, args, flag):
        with pytest.raises(inputs.InputError,
                           match=f'acceptance: {re.escape(flag)}[ :;]'):
            preflight.check_command_line(
                ['--mode', 'acceptance', '-r', *args], {})

    def test_an_option_reframe_refuses_is_not_validated(self):
        with pytest.raises(inputs.InputError,
                           match='ReFrame cannot parse the command line: '
                                 'unrecognized arguments: --bogus: an '
                                 'acceptance or screen runs only from a '
                                 'line ReFrame reads'):
            preflight.check_command_line(
                ['--mode', 'acceptance', '-r', '--bogus'], {})

    def test_the_environment_counts_as_options(self):
        with pytest.raises(inputs.InputError,
                           match=r'-m cuda \(from the environment\)'):
            preflight.check_command_line(['--mode', 'screen', '-r'],
                                         {'RFM_USER_MODULES': 'cuda'})
        preflight.check_command_line(['--mode', 'screen', '-r'],
                                     {'RFM_WARN_AS_ERROR': 'y'})

    def test_harmless_options_and_the_modes_own(self):
        for args in (['-t', suites.SCREEN[1], '--distribute=all',
                      '--max-retries=1', '-S', 'LikwidBenchCheck.repeats=2'],
                     ['--prefix', '/tmp/x', '-v', '--report-file', 'r.json',
                      '--keep-stage-files', '-C', 'config/settings.py',
                      '--system', 'local', '-p', '.*', '--nocolor']):
            preflight.check_command_line(['--mode', 'screen', '-r', *args],
                                         {})
        preflight.check_command_line(['--mode', 'quick', '-r', '-S',
                                      'working_set=16kB', '-n', 'x'], {})
        preflight.check_command_line(['--mode', 'acceptance', '-r', '-S',
                                      'strict=yes', '-S', 'strict=yes'], {})
        with pytest.raises(inputs.InputError, match="-t gpu"):
            preflight.check_command_line(
                ['--mode', 'screen', '-r', '-t', suites.SCREEN[1], '-t',
                 'gpu'], {})


# -- the rule itself (hpcval.trust) ------------------------------------------

class TestTrustRule:

    def test_a_folder_of_ours_in_a_sticky_shared_folder_is_trusted(
            self, shared_tmp):
        (shared_tmp / 'mine').mkdir(mode=0o755)
        trust.check_tree(shared_tmp / 'mine')

    def test_a_world_writable_folder_above_is_not(self, shared_tmp):
        shared_tmp.chmod(0o777)         # no sticky bit: entries replaceable
        (shared_tmp / 'mine').mkdir(mode=0o755)
        with pytest.raises(trust.UntrustedPath, match='mode 0777'):
            trust.check_path(shared_tmp / 'mine')

    def test_a_link_of_another_user_is_not_followed(self, shared_tmp,
                                                    other_user):
        (shared_tmp / 'mine').mkdir(mode=0o755)
        link = shared_tmp / 'link'
        as_user(other_user, 'ln', '-s', str(shared_tmp / 'mine'), str(link))
        with pytest.raises(trust.UntrustedPath,
                           match=f'{link} is owned by uid'):
            trust.check_path(link)

    def test_a_link_inside_leading_to_another_users_file(self, shared_tmp,
                                                         other_user):
        theirs = shared_tmp / 'theirs.py'
        as_user(other_user, 'touch', str(theirs))
        (shared_tmp / 'mine').mkdir(mode=0o755)
        (shared_tmp / 'mine' / 'x.py').symlink_to(theirs)
        with pytest.raises(trust.UntrustedPath,
                           match=f'{theirs} is owned by uid'):
            trust.check_tree(shared_tmp / 'mine')
