"""Replays: what hpcval says about a recorded output on a given system.

A replay runs the real check class on the real system definition (its
name, partitions, features, devices and references) with only the
execution replaced: ``config/replay.py`` marks every partition with the
extra ``replay`` (and gives it the local scheduler and launcher, no
access options, no modules), the source and build fixtures do nothing
there, and the run stage copies the recording into the stage directory
instead of running the benchmark.  Sanity and performance then run as in a
real run.  See docs/replay.md.

A recording is a folder ``<replay_dir>/<test>`` where ``<test>`` is the
test's class name and parameters (``TransferBenchCheck%preset=a2a``,
``BabelStreamHipCheck``):

- ``stdout``, ``stderr``: the run's standard output and error (optional);
- ``exit_code``: the run's exit status, a number (optional, default 0);
- ``excerpt.txt``: present when the recording is a quoted excerpt, not a
  whole output; one line saying what was left out.  The benchmark then
  skips the completeness checks that need what is missing (nccl-tests'
  footer and device list, BabelStream's one output per GPU) and judges
  what is there; the test is tagged ``excerpt`` as well;
- any other file: copied into the stage directory under its own name
  (BabelStream's ``stream.<host>.gpu<N>.out``, TransferBench's config file).

Replays are never taken for measurements: the test is tagged ``replay``
(the report reader keys on it), its description starts with REPLAY, and
the job script and the first line of its standard output say so.
"""
import os
import shlex

from hpcval.inputs import InputError, checked_path

TAG = 'replay'
EXCERPT_TAG = 'excerpt'
#: partition extra that config/replay.py sets
FLAG = 'replay'
STDOUT, STDERR, EXIT_CODE, EXCERPT = ('stdout', 'stderr', 'exit_code',
                                      'excerpt.txt')


def active(test):
    """True on a partition of config/replay.py.  ``-S replay_dir`` on a
    real partition is refused: the job would go to the real scheduler."""
    part = test.current_partition
    if part is not None and part.extras.get(FLAG):
        return True

    if test.replay_dir:
        raise InputError(f'-S replay_dir={test.replay_dir}: replays run '
                         f'with -C config/replay.py (this configuration '
                         f'submits real jobs); see docs/replay.md')
    return False


def recording_name(test):
    """The class name and the test's own parameters, as in its display
    name without spaces and fixtures: ``TransferBenchCheck%preset=a2a``."""
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
    test.skip_if(not os.path.isdir(folder),
                 f'replay: no recording {recording_name(test)} in {root}')
    return checked_path(folder, 'replay_dir')


def _read(folder, name):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8', errors='replace') as fp:
        return fp.read().strip()


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
    if not text.isdigit() or int(text) > 255:
        raise InputError(f'{folder}/{EXIT_CODE}: {text!r} is not an exit '
                         f'status (0-255)')
    return int(text)


def stage(test):
    """Replace what the job runs: copy the recording, print its output."""
    folder = test.replay_recording
    quoted = shlex.quote(folder)
    banner = (f'hpcval REPLAY of {folder} on {test.current_system.name}: '
              f'recorded output, nothing was run; not a measurement')
    stdout = os.path.join(folder, STDOUT)
    stderr = os.path.join(folder, STDERR)
    test.prerun_cmds = [f'# {banner}', f'cp -R -- {quoted}/. .',
                        f'echo {shlex.quote(banner)}']
    test.executable = 'cat'
    test.executable_opts = [shlex.quote(stdout if os.path.isfile(stdout)
                                        else os.devnull)]
    test.postrun_cmds = ([f'cat {shlex.quote(stderr)} >&2']
                         if os.path.isfile(stderr) else [])
    code = _exit_code(folder)
    if code:
        test.postrun_cmds.append(f'exit {code}')
