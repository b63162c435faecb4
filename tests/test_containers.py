"""Checks run from a container image through ReFrame's container_platform
(hpcval.benchmarks.container).

What a system and ``-S image`` may say is checked without running
anything; then likwid-bench runs from the image bootstrap.sh --tests
builds (a Debian bookworm root with Debian's likwid, imported into
Podman) through Podman on this host and through Slurm on the minicluster,
each with the image's digest in its provenance.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import require_minicluster
from hpcval.benchmarks import container
from hpcval.inputs import InputError
from hpcval.layouts import SystemConfigError, validate_system
from rfmrun import by_name, one_case, reframe

IMAGE = 'localhost/hpcval-bench:bookworm'
LIKWID = ('checks/likwid_bench.py',)
PEAKFLOPS = 'LikwidBenchCheck%kernel=peakflops'
PEAKFLOPS_CASE = 'LikwidBenchCheck %kernel=peakflops'
DIGEST = 'sha256:' + 'ab' * 32
MIRROR = os.environ.get('HPCVAL_BABELSTREAM_MIRROR')


def _inspect(fmt):
    return subprocess.run(['podman', 'image', 'inspect', '--format', fmt,
                           '--', IMAGE], capture_output=True, text=True,
                          timeout=60)


def _need_image():
    """Skip without Podman or bootstrap's image; fail under CI=true, where
    bootstrap.sh --tests made both and a skip would hide the only runs."""
    why = 'no podman (bootstrap.sh --tests installs it)' \
        if not shutil.which('podman') else \
        f'no image {IMAGE} (bootstrap.sh --tests builds it)' \
        if _inspect('{{.Id}}').returncode != 0 else ''
    if why and os.environ.get('CI') == 'true':
        pytest.fail(f'CI=true, and {why}')
    if why:
        pytest.skip(why)


@pytest.mark.parametrize('ref', [
    IMAGE, 'nvcr.io/nvidia/pytorch:24.05-py3', f'docker://rocm/rccl@{DIGEST}',
    '/scratch/images/nccl-tests.sif', 'registry.example.org:5000/hpc/osu:7.4',
])
def test_image_references_are_accepted(ref):
    assert container.checked_image(ref) == ref


@pytest.mark.parametrize('ref', [
    'img;touch /tmp/x', '--privileged', 'img\n', 'two words', '$(id)',
    'img`id`', 'img:tag@sha256:short', "img'",
])
def test_unsafe_image_references_are_refused(ref):
    with pytest.raises(InputError, match=r'-S image=.*an image'):
        container.checked_image(ref)


@pytest.mark.parametrize('extras, named', [
    ({'container_options': {'Podman': ['--ulimit=nofile=1:1;id']}},
     "'--ulimit=nofile=1:1;id' is not an option"),
    ({'container_options': {'Podman': '--runtime=runc'}},
     'container_options.Podman must be a list'),
    ({'container_images': {'LikwidBenchCheck': 'x y'}},
     'container_images.LikwidBenchCheck'),
    ({'container_images': ['img']}, 'container_images must map'),
])
def test_a_system_names_its_container_settings_well(extras, named):
    system = {'partitions': [{'name': 'p', 'extras': extras}]}
    with pytest.raises(SystemConfigError) as err:
        validate_system(system, 'systems/site.py',
                        container.validate_extras)
    assert "systems/site.py: partition 'p': extras" in str(err.value)
    assert named in str(err.value)


def test_podman_options_of_a_system():
    assert container.podman_options('runc', 20000, 32768) == [
        '--runtime=runc', '--ulimit=nofile=20000:20000',
        '--ulimit=nproc=32768:32768']
    assert container.podman_options() == []


def test_the_record_gives_the_digest_and_a_pinned_reference_its_own():
    text = ('container_runtime=podman version 4.3.1\n'
            f'image_id={DIGEST}\nimage_digest=not a digest\n')
    assert container.read_record(text, IMAGE) == {
        'image': IMAGE, 'container_runtime': 'podman version 4.3.1',
        'image_id': DIGEST}
    pinned = f'docker://rocm/rccl@{DIGEST}'
    assert container.read_record('', pinned)['image_digest'] == DIGEST


def _script(case):
    with open(f'{case["stagedir"]}/rfm_job.sh', encoding='utf-8') as fp:
        return fp.read()


def test_likwid_runs_from_the_image_with_its_digest(tmp_path):
    _need_image()
    proc, report = reframe('-r', '--system', 'local', '-n', PEAKFLOPS,
                           '-S', f'image={IMAGE}', '-S', 'repeats=2',
                           '--keep-stage-files', tmp_path=tmp_path,
                           checks=LIKWID)
    assert proc.returncode == 0, proc.stdout[-3000:]
    case = one_case(report, PEAKFLOPS_CASE)
    prov = case['hpcval_provenance']
    assert prov['image'] == IMAGE
    assert prov['image_digest'] == _inspect('{{.Digest}}').stdout.strip()
    assert prov['image_id'] == 'sha256:' + _inspect('{{.Id}}').stdout.strip()
    assert prov['container_runtime'].startswith('podman version')
    # both repeats in the image, with this host's runtime and limits
    runs = [ln for ln in _script(case).splitlines()
            if ln.startswith('podman run')]
    assert len(runs) == 2
    # run by the id the job recorded, never by the tag
    assert all(' "$hpcval_image_id" likwid-bench -t peakflops_' in ln
               for ln in runs)
    script = _script(case)
    assert script.index('hpcval_image_id=$(podman image inspect') < \
        script.index('\npodman run')
    for opt in container.host_podman_options():
        assert f' {opt} ' in runs[0]


@pytest.fixture
def mpich_image(tmp_path):
    """The test image with the [mpi] extra's MPICH 4.3.2 (this venv's
    mpichversion and its libraries) copied in: an image with an MPI of
    its own."""
    _need_image()
    venv = pathlib.Path(sys.executable).parent.parent
    context = tmp_path / 'mpich-context'
    context.mkdir()
    shutil.copy(venv / 'bin' / 'mpichversion', context)
    shutil.copy(venv / 'lib' / 'libmpi.so.12', context)
    shutil.copytree(venv / 'lib' / 'mpich', context / 'mpich')
    yield from _built_image(context, 'localhost/hpcval-test-mpi:mpich', (
        'COPY mpichversion /usr/local/bin/mpichversion\n'
        'COPY libmpi.so.12 /usr/local/lib/libmpi.so.12\n'
        'COPY mpich /usr/local/lib/mpich\n'))


def _built_image(context, image, lines):
    """``image`` built from IMAGE and ``lines`` in ``context``, yielded,
    then removed; its tag made unique, since another suite on the host
    shares Podman's image store."""
    image = f'{image}-{uuid.uuid4().hex[:8]}'
    (context / 'Containerfile').write_text(f'FROM {IMAGE}\n{lines}')
    subprocess.run(['podman', 'build', '--quiet', '--tag', image,
                    str(context)], check=True, capture_output=True,
                   timeout=300)
    yield image
    subprocess.run(['podman', 'rmi', '--force', image], capture_output=True,
                   timeout=120)


def test_a_podman_run_records_the_images_mpi_and_runs_by_its_id(
        mpich_image, tmp_path):
    proc, report = reframe('-r', '--system', 'local', '-n', PEAKFLOPS,
                           '-S', f'image={mpich_image}', '--keep-stage-files',
                           tmp_path=tmp_path, checks=LIKWID)
    assert proc.returncode == 0, proc.stdout[-3000:]
    case = one_case(report, PEAKFLOPS_CASE)
    prov = case['hpcval_provenance']
    image_id = subprocess.run(['podman', 'image', 'inspect', '--format',
                               '{{.Id}}', '--', mpich_image],
                              capture_output=True, text=True,
                              timeout=60).stdout.strip()
    assert prov['image_id'] == f'sha256:{image_id}'
    # the image's MPI (mpichversion in the image), not the host's
    assert prov['image_mpi'] == 'MPICH 4.3.2' and prov['mpi'] == 'MPICH 4.3.2'
    runs = [ln for ln in _script(case).splitlines()
            if ln.startswith('podman run')]
    assert runs and all('"$hpcval_image_id" likwid-bench' in ln
                        for ln in runs)
    assert mpich_image not in ' '.join(runs)


def test_a_missing_image_fails_naming_it(tmp_path):
    _need_image()
    missing = 'localhost/hpcval-no-such-image:none'
    proc, report = reframe('-r', '--system', 'local', '-n', PEAKFLOPS,
                           '-S', f'image={missing}', tmp_path=tmp_path,
                           checks=LIKWID)
    case = one_case(report, PEAKFLOPS_CASE)
    assert case['result'] == 'fail'
    assert f'image {missing}: no digest recorded on the node' in \
        case['fail_reason']
    assert 'image not known' in case['fail_reason']


def test_an_unsafe_image_stops_the_run(tmp_path):
    planted = tmp_path / 'pwned'
    proc, report = reframe('-r', '--system', 'local', '-n', PEAKFLOPS,
                           '-S', f'image=x;touch {planted}',
                           tmp_path=tmp_path, checks=LIKWID)
    assert proc.returncode != 0 and report is None
    assert "-S image='x;touch" in proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert not planted.exists()


def test_gpu_ranks_get_the_gpus_and_their_rank(tmp_path):
    # the minicluster's launch-path partition declares 2 GPUs per node: the
    # job scripts are written as for a GPU node (nothing runs: dry run)
    proc, report = reframe('--dry-run', '--system', 'minicluster', '-n',
                           'BabelStreamCudaCheck', '-S', f'image={IMAGE}',
                           tmp_path=tmp_path, checks=('checks/babelstream.py',),
                           env={'HPCVAL_MINICLUSTER_LAUNCH_GPUS': '2'})
    assert proc.returncode == 0, proc.stdout[-3000:]
    [case] = by_name(report, 'BabelStreamCudaCheck')
    # the benchmark's launch line (the provenance record before it asks
    # the image for its stack with a podman run of its own)
    [line] = [ln for ln in _script(case).splitlines()
              if ln.startswith('srun ') and ' podman run ' in ln]
    assert '--device=nvidia.com/gpu=all' in line
    assert "'--env=SLURM_*'" in line and '--env=CUDA_VISIBLE_DEVICES' in line
    # the image holds the benchmark: nothing fetched, nothing built
    [build] = by_name(report, 'BabelStreamBuild')
    with open(f'{build["stagedir"]}/rfm_build.sh', encoding='utf-8') as fp:
        assert 'the image provides cuda-stream: nothing to build' in fp.read()


@pytest.fixture(scope='module')
def babelstream_image(tmp_path_factory):
    """An image over bootstrap's holding the omp-stream the suite built
    from HPCVAL_BABELSTREAM_MIRROR (a copy of UoB-HPC/BabelStream)."""
    if not MIRROR:
        pytest.skip('set HPCVAL_BABELSTREAM_MIRROR to a local copy of '
                    'UoB-HPC/BabelStream')
    _need_image()
    tmp = tmp_path_factory.mktemp('babelstream-image')
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'BabelStreamCpuCheck', '-S', f'src_mirror={MIRROR}',
                           '--keep-stage-files', tmp_path=tmp / 'build',
                           checks=('checks/babelstream.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    [build] = by_name(report, 'BabelStreamBuild')
    context = tmp / 'context'
    context.mkdir()
    shutil.copy(os.path.join(build['stagedir'], 'build', 'omp-stream'),
                context)
    yield from _built_image(context, 'localhost/hpcval-test-babelstream:omp',
                            'COPY omp-stream /usr/local/bin/omp-stream\n')


def _babelstream_from(image, system, tmp_path, env=None):
    proc, report = reframe('-r', '--system', system, '-n',
                           'BabelStreamCpuCheck', '-S', f'image={image}',
                           '--keep-stage-files', tmp_path=tmp_path,
                           checks=('checks/babelstream.py',), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    case = one_case(report, 'BabelStreamCpuCheck')
    assert case['hpcval_provenance']['image'] == image
    digest = subprocess.run(['podman', 'image', 'inspect', '--format',
                             '{{.Digest}}', '--', image], capture_output=True,
                            text=True, timeout=60).stdout.strip()
    assert case['hpcval_provenance']['image_digest'] == digest
    assert case['perfvalues']
    line = next(ln for ln in _script(case).splitlines()
                if ' podman run ' in ln)
    assert ' "$hpcval_image_id" omp-stream ' in line
    assert '--env=OMP_NUM_THREADS' in line
    return case


def test_babelstream_cpu_from_an_image_the_suite_built(babelstream_image,
                                                       tmp_path):
    _babelstream_from(babelstream_image, 'local', tmp_path)


def test_babelstream_cpu_image_through_slurm(babelstream_image, minicluster,
                                             tmp_path):
    require_minicluster()
    case = _babelstream_from(babelstream_image, 'minicluster', tmp_path,
                             env=minicluster.env())
    assert case['scheduler'] == 'slurm'


SITEGPU = '''\
"""sitegpu: a site's GPU nodes running nccl-tests from an Apptainer image."""
from hpcval import features as ft
from hpcval.sitesystem import environ, processor, slurm_partition

system = {
    'name': 'sitegpu', 'descr': 'a site GPU cluster', 'hostnames': [],
    'modules_system': 'nomod',
    'partitions': [slurm_partition(
        'gpu', 'GPU nodes', ['--partition=gpu'], ['cuda'],
        [ft.GPU, ft.NVGPU, ft.MPI], processor('x86_64', 64, 1, 2),
        devices=[{'type': 'gpu', 'arch': 'sm_90', 'num_devices': 4}],
        container_platforms=[{'type': 'Apptainer', 'default': True}],
        extras={'container_images': {'NcclTestsSource': 'SIF'}})],
}
environments = [environ('cuda', 'sitegpu', features=[ft.CUDA])]
'''


def _sitegpu_dry_run(tmp_path, sif, *args):
    site = tmp_path / 'site'
    (site / 'systems').mkdir(parents=True)
    (site / 'systems' / 'sitegpu.py').write_text(SITEGPU.replace('SIF', sif))
    return reframe('--dry-run', '--system', 'sitegpu', '-n',
                   'NcclTestsNodeCheck%collective=all_reduce', *args,
                   tmp_path=tmp_path, checks=('checks/nccl_tests.py',),
                   env={'HPCVAL_SITE': str(site)})


def test_a_site_names_its_image_per_system(tmp_path):
    """A site's partition runs nccl-tests from its Apptainer image: --nv,
    the SIF's sha256 on the node, nothing fetched or built (dry run)."""
    sif = '/scratch/images/nccl-tests.sif'
    proc, report = _sitegpu_dry_run(tmp_path, sif)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [case] = by_name(report, 'NcclTestsNodeCheck')
    lines = _script(case).splitlines()
    [run] = [ln for ln in lines if ' apptainer exec ' in ln]
    assert run.startswith('srun ')
    assert run.count(' -B') == 1 and ' --nv ' in run
    assert run.endswith(f'{sif} all_reduce_perf -b 8 -e 8G -f 2 -g 4 -n 20 '
                        f'-w 5 -c 1')
    assert any(f'sha256sum -- {sif}' in ln for ln in lines)
    [source] = by_name(report, 'NcclTestsSource')
    with open(f'{source["stagedir"]}/rfm_job.sh', encoding='utf-8') as fp:
        assert 'the image provides it: nothing to fetch' in fp.read()


def test_apptainer_refuses_an_unpinned_reference(tmp_path):
    ref = 'docker://nvcr.io/nvidia/pytorch:24.05-py3'
    proc, report = _sitegpu_dry_run(tmp_path, '/scratch/x.sif',
                                    '-S', f'image={ref}')
    [case] = by_name(report, 'NcclTestsNodeCheck')
    assert case['result'] == 'fail'
    assert (f'-S image={ref}: Apptainer runs a SIF file or a reference '
            f'pinned by @sha256:') in case['fail_reason']


def test_through_slurm_on_the_minicluster(minicluster, tmp_path):
    require_minicluster()
    _need_image()
    proc, report = reframe('-r', '--system', 'minicluster', '-n', PEAKFLOPS,
                           '-S', f'image={IMAGE}', '--keep-stage-files',
                           tmp_path=tmp_path, checks=LIKWID,
                           env=minicluster.env())
    assert proc.returncode == 0, proc.stdout[-3000:]
    case = one_case(report, PEAKFLOPS_CASE)
    assert case['scheduler'] == 'slurm' and case['jobid']
    prov = case['hpcval_provenance']
    assert prov['image_digest'] == _inspect('{{.Digest}}').stdout.strip()
    assert any(ln.startswith('podman run') and '"$hpcval_image_id"' in ln
               for ln in _script(case).splitlines())
    assert prov['image_id'] == 'sha256:' + _inspect('{{.Id}}').stdout.strip()
