"""Replays: the real check on the real system, its execution replaced by a
copy of a recording, data never run (docs/replay.md); never a measurement."""
import fnmatch
import os
import re
import shlex
import shutil
import stat

from hpcval.inputs import InputError, checked_path

TAG = 'replay'
EXCERPT_TAG = 'excerpt'
#: partition extra that config/replay.py sets
FLAG = 'replay'
STDOUT, STDERR, EXIT_CODE, EXCERPT = ('stdout', 'stderr', 'exit_code',
                                      'excerpt.txt')
#: what every recording may hold; benchmarks add what their parsers read
RECORDED = (STDOUT, STDERR, EXIT_CODE, EXCERPT)
#: names ReFrame gives its own files in a stage directory
_RESERVED = 'rfm_'
_MAX_NOTE_BYTES = 4096


def active(test):
    """True on a partition of config/replay.py; refused on a real one."""
    part = test.current_partition
    if part is not None and part.extras.get(FLAG):
        return True
    if test.replay_dir:
        raise InputError(f'-S replay_dir={test.replay_dir}: replays run '
                         f'with -C config/replay.py (this configuration '
                         f'submits real jobs); see docs/replay.md')
    return False


def recording_name(test):
    """``TransferBenchCheck%preset=a2a``: class name and own parameters."""
    cls = type(test)
    info = cls.get_variant_info(test.variant_num, recurse=False)
    return cls.__name__ + ''.join(
        f'%{name}={cls.raw_params[name].format(value)}'
        for name, value in info['params'].items())


def find_recording(test):
    """The recording folder of ``test``; skips the test when there is none."""
    if not test.replay_dir:
        raise InputError('config/replay.py runs nothing: give -S '
                         'replay_dir=DIR, a folder of recordings '
                         '(docs/replay.md)')
    root = checked_path(test.replay_dir, 'replay_dir')
    folder = os.path.join(root, recording_name(test))
    test.skip_if(not os.path.lexists(folder),
                 f'replay: no recording {recording_name(test)} in {root}')
    if os.path.islink(folder) or not os.path.isdir(folder):
        raise InputError(f'replay: {folder}: a recording is a folder, not a '
                         f'symbolic link or a file')
    return checked_path(folder, 'replay_dir')


def _open_regular(path, what):
    """A read descriptor of ``path``, a regular file and not a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise InputError(f'replay: {what} {path}: cannot be read as a '
                         f'plain file ({err.strerror}; symbolic links are '
                         f'refused)') from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f'replay: {what} {path}: not a plain file')
    return fd


def _read(folder, name, limit=_MAX_NOTE_BYTES):
    path = os.path.join(folder, name)
    if not os.path.lexists(path):
        return None
    with os.fdopen(_open_regular(path, 'recording file'), 'rb') as fp:
        data = fp.read(limit + 1)
    if len(data) > limit:
        raise InputError(f'replay: {path}: more than {limit} bytes')
    return data.decode('utf-8', errors='replace').strip()


def label(test):
    """Tag and describe ``test`` as the replay of its recording."""
    folder = find_recording(test)
    test.replay_recording = folder
    excerpt = _read(folder, EXCERPT)
    test.tags |= {TAG} | ({EXCERPT_TAG} if excerpt else set())
    test.replay_excerpt = ' '.join((excerpt or '').split())
    what = f'an EXCERPT ({test.replay_excerpt})' if excerpt else 'an output'
    test.descr = (f'REPLAY of {what} recorded in {folder}, judged as on '
                  f'{test.current_system.name}; not a measurement. '
                  f'{test.descr}').strip()


def skip_fixture(test, what):
    """A source or build fixture in a replay: labelled, does nothing."""
    test.tags |= {TAG}
    test.descr = f'REPLAY: {what}'
    return [f'echo "hpcval REPLAY: {what}"']


def _exit_code(folder):
    text = _read(folder, EXIT_CODE)
    if text is None:
        return 0
    if not re.fullmatch('[0-9]{1,3}', text) or int(text) > 255:
        raise InputError(f'{folder}/{EXIT_CODE}: {text!r} is not an exit '
                         f'status (0-255)')
    return int(text)


def _matches(rel, pattern):
    parts, pats = rel.split('/'), pattern.split('/')
    return len(parts) == len(pats) and all(
        fnmatch.fnmatchcase(p, q) for p, q in zip(parts, pats))


def recording_files(test, folder):
    """Relative paths of the files in ``folder``, each one the check reads."""
    allowed = RECORDED + tuple(test.replay_inputs())
    found, todo = [], ['']
    while todo:
        sub = todo.pop()
        with os.scandir(os.path.join(folder, sub)) as entries:
            for entry in entries:
                rel = f'{sub}{entry.name}'
                if entry.is_dir(follow_symlinks=False):
                    todo.append(f'{rel}/')
                    continue
                if not entry.is_file(follow_symlinks=False):
                    raise InputError(f'replay: {folder}/{rel}: symbolic '
                                     f'links and special files are refused')
                if rel.startswith(_RESERVED) or not any(
                        _matches(rel, pat) for pat in allowed):
                    raise InputError(
                        f'replay: {folder}/{rel}: not a file '
                        f'{type(test).__name__} reads (a recording holds '
                        f'{", ".join(allowed)}); nothing in a recording may '
                        f'replace what ReFrame or the check writes')
                found.append(rel)
    return sorted(found)


def _copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with os.fdopen(_open_regular(src, 'recording file'), 'rb') as fin:
        try:
            fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                         os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            raise InputError(f'replay: {src} would replace {dst}') from None
        with os.fdopen(fd, 'wb') as fout:
            shutil.copyfileobj(fin, fout)


def stage(test):
    """Replace what the job runs by the recording's checked files, printed."""
    folder = test.replay_recording
    banner = (f'hpcval REPLAY of {folder} on {test.current_system.name}: '
              f'recorded output, nothing was run; not a measurement')
    files = recording_files(test, folder)
    for rel in files:
        _copy(os.path.join(folder, rel), os.path.join(test.stagedir, rel))
    code = _exit_code(folder)
    test.prerun_cmds = [f'# {banner}', f'echo {shlex.quote(banner)}']
    test.executable = 'cat'
    test.executable_opts = [STDOUT if STDOUT in files else os.devnull]
    test.postrun_cmds = [f'cat {STDERR} >&2'] if STDERR in files else []
    if code:
        test.postrun_cmds.append(f'exit {code}')
