"""Source acquisition through real ReFrame runs of the BabelStream CPU check.

CI has no copy of BabelStream, so the failure paths are exercised there and
the build path runs where HPCVAL_BABELSTREAM_MIRROR names a local copy of
the upstream repository (a git clone, bare or not, holding tag v5.0).
"""
import os
import subprocess

import pytest

from rfmrun import by_name, reframe

MIRROR = os.environ.get('HPCVAL_BABELSTREAM_MIRROR')
RUN = ('-r', '--system', 'local', '-n', 'BabelStreamCpuCheck')
# the check's own file only: the others' loading is most of a failing run
CHECKS = ('checks/babelstream.py',)


def _failure(proc, report, name):
    [tc] = by_name(report, name)
    assert tc['result'] == 'fail', proc.stdout[-2000:]
    return tc['fail_reason'] or ''


def test_shell_metacharacters_are_rejected(tmp_path):
    planted = tmp_path / 'pwned'
    proc, report = reframe(*RUN, '-S', f'src_mirror=/tmp;touch {planted}',
                           tmp_path=tmp_path, checks=CHECKS)
    # refused when ReFrame creates the tests: the run stops, naming it
    assert proc.returncode != 0 and report is None
    assert "-S src_mirror='/tmp;touch" in proc.stderr
    assert 'only letters, digits' in proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert not planted.exists()


def test_missing_mirror_is_named(tmp_path):
    proc, report = reframe(*RUN, '-S', f'src_mirror={tmp_path}/nowhere',
                           tmp_path=tmp_path, checks=CHECKS)
    reason = _failure(proc, report, 'BabelStreamSource')
    assert f'{tmp_path}/nowhere does not exist' in reason


def test_mirror_without_the_pinned_tag_fails_the_fetch(tmp_path):
    repo = tmp_path / 'other'
    repo.mkdir()
    subprocess.run(['git', 'init', '-q', str(repo)], check=True)
    proc, report = reframe(*RUN, '-S', f'src_mirror={repo}',
                           tmp_path=tmp_path, checks=CHECKS)
    reason = _failure(proc, report, 'BabelStreamSource')
    assert 'fetching the source failed' in reason


def test_mirror_that_is_not_babelstream_fails_the_build(tmp_path):
    tree = tmp_path / 'tree'
    tree.mkdir()
    (tree / 'README').write_text('not BabelStream\n')
    proc, report = reframe(*RUN, '-S', f'src_mirror={tree}',
                           tmp_path=tmp_path, checks=CHECKS)
    [build] = by_name(report, 'BabelStreamBuild')
    assert build['result'] == 'fail'
    assert build['fail_phase'].startswith('compile')


def test_prebuilt_dir_without_the_executable_is_named(tmp_path):
    empty = tmp_path / 'bin'
    empty.mkdir()
    proc, report = reframe(*RUN, '-S', f'prebuilt_dir={empty}',
                           tmp_path=tmp_path, checks=CHECKS)
    reason = _failure(proc, report, 'BabelStreamBuild')
    assert f'prebuilt_dir: no executable omp-stream in {empty}' in reason


@pytest.mark.skipif(not MIRROR, reason='set HPCVAL_BABELSTREAM_MIRROR to a '
                                       'local copy of UoB-HPC/BabelStream')
def test_build_from_mirror_then_run_prebuilt(tmp_path):
    proc, report = reframe(*RUN, '-S', f'src_mirror={MIRROR}',
                           '--keep-stage-files', tmp_path=tmp_path / 'build',
                           checks=CHECKS)
    assert proc.returncode == 0, proc.stdout[-3000:]
    [tc] = by_name(report, 'BabelStreamCpuCheck')
    assert tc['result'] == 'pass'
    copy_bw = next(v for k, v in tc['perfvalues'].items()
                   if k.endswith(':copy'))
    assert copy_bw[0] > 0

    [build] = by_name(report, 'BabelStreamBuild')
    bindir = os.path.join(build['stagedir'], 'build')

    proc, report = reframe(*RUN, '-S', f'prebuilt_dir={bindir}',
                           tmp_path=tmp_path / 'prebuilt',
                           checks=CHECKS)
    assert proc.returncode == 0, proc.stdout[-3000:]
    [tc] = by_name(report, 'BabelStreamCpuCheck')
    assert tc['result'] == 'pass'
