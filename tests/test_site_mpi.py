"""A site system declares its MPI and PMI (hpcval.sitesystem.mpi): every
build and run job of the MPI ping-pong and the OSU checks loads the site's
MPI module, and srun gets the PMI through SLURM_MPI_TYPE.  Job scripts of
real ReFrame dry runs, with Debian's Lmod over an empty modulefile (what
the module holds is the site's; the real run over a real MPI module is in
test_site_stacks.py, and PMI-2 under real Slurm in test_minicluster.py)."""

import pytest

from lmodenv import lmod_env
from rfmrun import reframe

SITECLUSTER = '''\
"""sitecluster: a site's Slurm cluster with its own Open MPI over PMIx."""
from hpcval import features as ft
from hpcval.sitesystem import environ, mpi, processor, slurm_partition

system = {
    'name': 'sitecluster', 'descr': 'a site cluster', 'hostnames': [],
    'modules_system': 'lmod',
    'partitions': [slurm_partition(
        'cpu', 'CPU nodes', ['--partition=batch'], ['gnu'],
        [ft.CPU, ft.MPI, ft.MULTINODE], processor('x86_64', 8, 1, 2),
        **mpi('sitecluster', pmi=PMI, modules=['openmpi/4.1.6']))],
}
environments = [environ('gnu', 'sitecluster', cc='mpicc', cxx='mpicxx',
                        ftn='mpif90', features=[ft.OPENMP])]
'''


def _site(tmp_path, pmi="'pmix'"):
    site = tmp_path / 'site'
    (site / 'systems').mkdir(parents=True)
    (site / 'systems' / 'sitecluster.py').write_text(
        SITECLUSTER.replace('PMI', pmi))
    modules = tmp_path / 'modulefiles'
    (modules / 'openmpi').mkdir(parents=True)
    (modules / 'openmpi' / '4.1.6.lua').write_text('-- the site MPI\n')
    return {**lmod_env(modules), 'HPCVAL_SITE': str(site)}


@pytest.fixture(scope='module')
def scripts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('sitempi')
    proc, _ = reframe('--dry-run', '--system', 'sitecluster', '-n',
                      'Mpi4pyPingPongCheck|OsuCpuCheck.*osu_latency',
                      tmp_path=tmp,
                      env=_site(tmp), checks=('checks/mpi4py_pingpong.py',
                                              'checks/osu.py'))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    stage = tmp / 'rfm' / 'stage' / 'sitecluster' / 'cpu' / 'gnu'
    found = {p.parent.name: p.read_text()
             for p in stage.rglob('rfm_*.sh')}
    assert found, list(stage.rglob('*'))
    return found


def _of(scripts, prefix):
    return {k: v for k, v in scripts.items() if k.startswith(prefix)}


@pytest.mark.parametrize('check', ['Mpi4pyPingPongCheck', 'OsuCpuCheck',
                                   'OsuBuild'])
def test_every_mpi_job_loads_the_site_mpi(scripts, check):
    jobs = _of(scripts, check)
    assert jobs, sorted(scripts)
    for name, text in jobs.items():
        assert 'module load openmpi/4.1.6' in text, (name, text)
        assert 'export SLURM_MPI_TYPE=pmix' in text, (name, text)


def test_ranks_start_under_srun_with_that_pmi(scripts):
    for name, text in _of(scripts, 'Mpi4pyPingPongCheck').items():
        load = text.index('module load openmpi/4.1.6')
        run = text.index('srun ')
        assert load < run and text.index('SLURM_MPI_TYPE=pmix') < run, text


@pytest.mark.parametrize('pmi, message', [
    ("'pmi3'", "mpi(pmi='pmi3'): not an srun --mpi type"),
    ("'pmix; rm -rf ~'", 'not an srun --mpi type'),
])
def test_a_bad_pmi_is_named(tmp_path, pmi, message):
    proc, _ = reframe('-l', '--system', 'sitecluster', tmp_path=tmp_path,
                      env=_site(tmp_path, pmi),
                      checks=('checks/mpi4py_pingpong.py',))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and message in out, out[-2000:]
    assert 'systems/sitecluster.py' in out and 'Traceback' not in out


def test_a_bad_module_name_is_named(tmp_path):
    env = _site(tmp_path)
    path = tmp_path / 'site' / 'systems' / 'sitecluster.py'
    path.write_text(path.read_text().replace("'openmpi/4.1.6'",
                                             "'openmpi/4.1.6 $(id)'"))
    proc, _ = reframe('-l', '--system', 'sitecluster', tmp_path=tmp_path,
                      env=env, checks=('checks/mpi4py_pingpong.py',))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and 'is not a module name' in out, out
