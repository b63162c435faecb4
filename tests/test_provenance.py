"""Provenance: the MPI the job ran, from the library its benchmark loads
and the launcher it started with, and the versions parsed from each
tool's real banner."""
import pathlib
import shutil
import subprocess
import sys

import pytest

from hpcval import provenance
from hpcval.parsers.nccl_tests import library_version

VENV_BIN = pathlib.Path(sys.executable).parent

# version banners as the tools print them (first two non-empty lines,
# joined by '|' as the probe keeps them)
BANNERS = [
    # the [mpi] extra's MPICH 4.3.2 wheel on this project's host
    ('MPICH Version:      4.3.2|MPICH Release date: Mon Oct  6 11:14:20 AM '
     'CDT 2025', 'MPICH 4.3.2'),
    ('HYDRA build details:|    Version:                                 '
     '4.3.2', 'MPICH (Hydra) 4.3.2'),
    # Open MPI 5 mpirun --version (e.g. the NVIDIA forums' nccl-tests
    # reports, Homebrew's open-mpi)
    ('mpirun (Open MPI) 5.0.6', 'Open MPI 5.0.6'),
    # Open MPI 4: mpiexec --version, ompi_info --version
    ('mpiexec (OpenRTE) 4.1.6', 'Open MPI 4.1.6'),
    ('Open MPI v4.1.4|http://www.open-mpi.org/community/help/',
     'Open MPI 4.1.4'),
    # Intel MPI 2021 mpirun --version
    ('Intel(R) MPI Library for Linux* OS, Version 2021.3 Build 20210601 '
     '(id: 6f90181f1)|Copyright 2003-2021, Intel Corporation.',
     'Intel MPI 2021.3'),
    ('srun: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown '
     'host', ''),
]


@pytest.mark.parametrize('banner, expected', BANNERS)
def test_mpi_banners(banner, expected):
    assert provenance.mpi_version(banner) == expected


def test_launcher_banners():
    assert provenance.launcher_version('slurm 23.02.7') == 'slurm 23.02.7'
    assert provenance.launcher_version('slurm-wlm 22.05.8') == \
        'slurm 22.05.8'
    # srun of this host without a Slurm configuration, as it prints it
    assert provenance.launcher_version(BANNERS[-1][0]) == 'version unknown'


def test_rccl_banner_gives_the_version_not_a_colon():
    assert library_version('RCCL version : 2.22.3-develop:f5b15f2\n') == \
        ('rccl', '2.22.3')
    assert provenance.nccl_version('22809') == '2.28.9'


def test_the_library_beats_the_first_mpiexec_on_path():
    # the job ran Open MPI; the [mpi] extra's MPICH mpiexec came first
    record = provenance.read(
        'mpi_library=/opt/openmpi/lib/libmpi.so.40\n'
        'mpi_banner=Open MPI v4.1.4|http://www.open-mpi.org/\n'
        'kernel=6.1\n'
        'path_mpi_banner=HYDRA build details:|    Version: 4.3.2\n'
        'launcher=/opt/openmpi/bin/mpirun\n'
        'launcher_banner=mpirun (Open MPI) 4.1.4\n')
    assert record == {'mpi_library': '/opt/openmpi/lib/libmpi.so.40',
                      'mpi': 'Open MPI 4.1.4', 'kernel': '6.1',
                      'launcher': '/opt/openmpi/bin/mpirun (Open MPI 4.1.4)'}
    # without a library, the launcher's MPI; then PATH's
    assert provenance.read('launcher_banner=mpirun (Open MPI) 5.0.3\n'
                           'path_mpi_banner=HYDRA build details:|  '
                           'Version: 4.3.2\n')['mpi'] == 'Open MPI 5.0.3'


@pytest.mark.skipif(not (VENV_BIN / 'mpichversion').exists() or
                    not shutil.which('cc'),
                    reason='needs the [mpi] extra and a C compiler')
def test_the_probe_names_the_library_a_real_program_loads(tmp_path):
    src = tmp_path / 'hello.c'
    src.write_text('#include <mpi.h>\nint main(int c, char **v) '
                   '{ MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n')
    subprocess.run([str(VENV_BIN / 'mpicc'), str(src), '-o',
                    str(tmp_path / 'hello')], check=True, timeout=120)
    # a PATH without the wheel's tools: only the library can tell
    subprocess.run(['bash', '-c', provenance.command(
        str(tmp_path / 'hello'))], cwd=tmp_path, check=True, timeout=60,
        env={'PATH': '/usr/bin:/bin'})
    record = provenance.read((tmp_path / provenance.FILE).read_text())
    assert record['mpi'] == 'MPICH ' + subprocess.run(
        [str(VENV_BIN / 'mpichversion'), '--version'], capture_output=True,
        text=True).stdout.split()[-1]
    assert record['mpi_library'].endswith('/libmpi.so.12')


def test_unsafe_names_are_not_probed():
    assert 'ldd' not in provenance.command('$(reboot)')
    assert 'launcher=' not in provenance.command('', 'srun;reboot')


def test_a_spack_stack_records_its_concretised_spec(tmp_path):
    """The job asks Spack for the spec it loads; without ``spack`` on PATH
    (this host) the probe writes nothing for it and the job goes on."""
    from hpcval.stacks import Stack
    stack = Stack(spack_spec='osu-micro-benchmarks@7.4 ^mpich')
    line = provenance.command(extra=stack.provenance_probes())
    assert "find --format '{name}{@version}" in line
    assert "'osu-micro-benchmarks@7.4 ^mpich'" in line
    subprocess.run(['bash', '-c', line], cwd=tmp_path, check=True,
                   timeout=60, env={'PATH': '/usr/bin:/bin'})
    record = provenance.read((tmp_path / provenance.FILE).read_text())
    assert 'spack' not in record and record['kernel']
    assert Stack(modules=('osu/7.4',)).provenance_probes() == []
    # what the probe's line becomes in the record
    assert provenance.read('spack=osu-micro-benchmarks@7.4%gcc@12.2.0 '
                           'arch=linux-debian12-zen2/abcdefg\n') == {
        'spack': 'osu-micro-benchmarks@7.4%gcc@12.2.0 '
                 'arch=linux-debian12-zen2/abcdefg'}
