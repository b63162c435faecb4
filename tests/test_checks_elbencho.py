"""elbencho checks through real ReFrame runs.

Job scripts are written with ``--dry-run`` and read as a sysadmin would.
elbencho runs live on ``local`` where HPCVAL_ELBENCHO_MIRROR names a
source tree (or tarball) of elbencho v3.1-9 in which ``make externals``
already ran: elbencho's make clones Simple-Web-Server from gitlab.com and
FTXUI from github.com, which CI cannot reach, so without it the live run
is skipped.
"""
import math
import os
import pathlib
import subprocess

import pytest

from rfmrun import by_name, reframe

MIRROR = os.environ.get('HPCVAL_ELBENCHO_MIRROR')
CPU = 'ElbenchoCpuCheck'


def _scripts(tmp_path, pattern):
    return sorted((tmp_path / 'rfm' / 'stage').rglob(pattern))


def _job_line(script):
    return script.read_text().splitlines()[-1]


def _case(report, layout, pattern):
    [tc] = by_name(report, f'{CPU} %layout={layout} %pattern={pattern}')
    return tc


def test_local_job_scripts(tmp_path):
    proc, report = reframe('--dry-run', '--system', 'local', '-n', CPU,
                           tmp_path=tmp_path, checks=('checks/elbencho.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert len(_scripts(tmp_path, f'{CPU}_*/rfm_job.sh')) == 4
    by_case = {tuple(tc['display_name'].split()[1:3]):
               (pathlib.Path(tc['stagedir']) / 'rfm_job.sh').read_text()
               for tc in by_name(report, CPU)}

    seq = by_case[('%layout=shared_file', '%pattern=seq_1m')]
    line = seq.splitlines()[-1]
    # one process with its own threads, no MPI launcher
    assert line.split()[0].endswith('/build/elbencho'), line
    assert line.split()[1:] == [
        '-w', '-r', '-t', '1', '--iodepth', '1', '-b', '1M',
        '-s', '"${FILE_MIB}M"', '--nolive', '--jsonfile', 'elbencho.json',
        '--direct', '"$ELB_DIR/shared_file"']
    # no scratch_dir on local: said, then a fresh folder removed at exit
    assert 'the partition has no extras scratch_dir: writing to the stage' \
        in seq
    assert 'ELB_DIR=$(mktemp -d "$PWD"/hpcval-elbencho.XXXXXX)' in seq
    assert 'trap \'rm -rf "$ELB_DIR"\' EXIT' in seq
    assert 'PER_THREAD_MIB=1024' in seq

    rand = by_case[('%layout=file_per_thread', '%pattern=rand_4k')]
    assert rand.splitlines()[-1].endswith(
        '-b 4K -s "${FILE_MIB}M" --nolive --jsonfile elbencho.json --direct '
        '--rand --randamount "${RAND_MIB}M" -d -n 1 -N 1 "$ELB_DIR"')
    assert 'RAND_MIB=$(( 1024 < FILE_MIB ? 1024 : FILE_MIB ))' in rand

    [build] = _scripts(tmp_path, 'ElbenchoBuild_*/rfm_build.sh')
    text = build.read_text()
    assert 'hpcval: missing build dependencies' in text
    # no system libbacktrace (Debian) would make make clone one
    assert 'CUDA_SUPPORT=0 CUFILE_SUPPORT=0 S3_SUPPORT=0 ' \
        'BACKTRACE_SUPPORT=0' in text


def test_scratch_dir_threads_and_sizes(tmp_path):
    proc, report = reframe(
        '--dry-run', '--system', 'local', '-n', f'{CPU}.*shared_file.*seq',
        '-S', f'{CPU}.scratch_dir=$TMPDIR/io', '-S', f'{CPU}.threads=4',
        '-S', f'{CPU}.iodepth=16', '-S', f'{CPU}.file_size=2G',
        '-S', f'{CPU}.direct_io=false', tmp_path=tmp_path,
        checks=('checks/elbencho.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    [script] = _scripts(tmp_path, f'{CPU}_*/rfm_job.sh')
    text = script.read_text()
    assert 'mktemp -d "$TMPDIR/io"/hpcval-elbencho.XXXXXX' in text
    assert 'no extras scratch_dir' not in text
    # a shared file holds every thread's share: 4 x 2 GiB
    assert 'PER_THREAD_MIB=2048' in text and \
        'FILE_MIB=$((PER_THREAD_MIB * 4))' in text
    line = _job_line(script)
    assert ' -t 4 --iodepth 16 ' in line and '--direct' not in line


@pytest.mark.parametrize('setting, message', [
    (f'{CPU}.scratch_dir=/tmp;touch x', "-S scratch_dir='/tmp;touch x': "
                                        "expected a folder of letters, digits"),
    (f'{CPU}.file_size=1T', "-S file_size='1T': a size in MiB or GiB"),
    (f'{CPU}.gpu_ids=0;1', "-S gpu_ids='0;1': expected GPU numbers"),
])
def test_unsafe_values_fail_before_a_script(tmp_path, setting, message):
    proc, report = reframe('--dry-run', '--system', 'local', '-n',
                           f'{CPU}.*shared_file.*seq', '-S', setting,
                           tmp_path=tmp_path, checks=('checks/elbencho.py',))
    if report is None:      # the input policy stops the run at load
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr
        assert not _scripts(tmp_path, f'{CPU}_*/rfm_job.sh')
        return
    [tc] = by_name(report, CPU)
    assert tc['result'] == 'fail' and message in tc['fail_reason'], \
        tc['fail_reason']
    assert not _scripts(tmp_path, f'{CPU}_*/rfm_job.sh')


def test_an_image_providing_elbencho_builds_nothing_and_passes(tmp_path):
    _, report = reframe('-r', '--system', 'local', '-n',
                        f'{CPU}%layout=shared_file%pattern=seq_1m',
                        '-S', 'image=localhost/hpcval-bench:bookworm',
                        tmp_path=tmp_path, checks=('checks/elbencho.py',))
    # the check itself needs the image on this host; its build never does
    [build] = by_name(report, 'ElbenchoBuild')
    assert build['result'] == 'pass', build['fail_reason']


def test_prepared_checkout_at_another_tag(tmp_path):
    """A checkout in which `make externals` ran is copied (a clone would
    drop external/), and refused when it is not at the pinned tag."""
    tree = tmp_path / 'elbencho'
    (tree / 'external' / 'Simple-Web-Server').mkdir(parents=True)
    (tree / 'Makefile').write_text('all:\n')
    git = ['git', '-C', str(tree), '-c', 'user.name=t', '-c',
           'user.email=t@t']
    for cmd in (['init', '-q'], ['add', 'Makefile'],
                ['commit', '-q', '-m', 'x'], ['tag', 'v3.1-7']):
        subprocess.run(git + cmd, check=True)
    proc, report = reframe('-r', '--system', 'local', '-n',
                           f'{CPU}.*shared_file.*seq', '-S',
                           f'ElbenchoSource.src_mirror={tree}',
                           tmp_path=tmp_path, checks=('checks/elbencho.py',))
    [source] = by_name(report, 'ElbenchoSource')
    assert source['result'] == 'fail'
    [script] = _scripts(tmp_path, 'ElbenchoSource_*/rfm_job.sh')
    assert f'cp -a -- {tree}/. src/' in script.read_text()
    err = (pathlib.Path(source['stagedir']) / 'rfm_job.err').read_text()
    assert f'hpcval: -S src_mirror={tree} is a checkout of v3.1-7, not ' \
        f'v3.1-9' in err, err


@pytest.mark.skipif(not MIRROR, reason='set HPCVAL_ELBENCHO_MIRROR to an '
                    'elbencho v3.1-9 tree (or tarball) prepared with `make '
                    'externals`: its make clones Simple-Web-Server and FTXUI '
                    'otherwise, which needs the network')
def test_live_cpu_buffers(tmp_path):
    proc, report = reframe(
        '-r', '--system', 'local', '-n', CPU,
        '-S', f'ElbenchoSource.src_mirror={MIRROR}',
        '-S', f'{CPU}.file_size=128M', '-S', f'{CPU}.threads=2',
        '-S', f'{CPU}.rand_amount=32M', tmp_path=tmp_path,
        checks=('checks/elbencho.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    for layout in ('shared_file', 'file_per_thread'):
        for pattern in ('seq_1m', 'rand_4k'):
            tc = _case(report, layout, pattern)
            assert tc['result'] == 'pass', tc['fail_reason']
            perf = {k.rsplit(':', 1)[-1]: v
                    for k, v in tc['perfvalues'].items()}
            for name in ('write_throughput_last', 'read_iops_last',
                         'read_elapsed'):
                assert math.isfinite(perf[name][0]) and perf[name][0] > 0
