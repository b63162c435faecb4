"""Provenance: the MPI the job ran, from the library its benchmark loads
and the launcher it started with, and the versions parsed from each
tool's real banner."""
import pathlib
import shutil
import subprocess
import sys

import pytest

from hpcval import provenance, records
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


# -- every node of a job ------------------------------------------------------

NVIDIA_SMI = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / \
    'h100_health' / 'nvidia-smi'


def _node_record(tmp_path, node, output, exit_code=0):
    """What node_probe() appends on ``node`` where nvidia-smi prints the
    real ``output`` (a fake tool on PATH that prints it, whatever it is
    asked)."""
    bin_dir = tmp_path / f'bin-{node}'
    bin_dir.mkdir()
    tool = bin_dir / 'nvidia-smi'
    tool.write_text(f'#!/bin/sh\ncat {output}\nexit {exit_code}\n')
    tool.chmod(0o755)
    env = {'PATH': f'{bin_dir}:/usr/bin:/bin', 'SLURMD_NODENAME': node}
    subprocess.run(['bash', '-c', provenance.node_probe('')], cwd=tmp_path,
                   env=env, check=True, timeout=60)
    return (tmp_path / provenance.FILE).read_text()


def test_each_node_records_its_gpus_identity(tmp_path):
    """A real H100 query (driver 580.159.04) on n1 and the same output
    with another driver planted on n2: each node's UUID, serial, VBIOS
    and driver, by node."""
    real = NVIDIA_SMI / 'query_idle.csv'
    planted = tmp_path / 'other_driver.csv'
    planted.write_text(real.read_text().replace('580.159.04', '580.95.05'))
    _node_record(tmp_path, 'n1', real)
    text = _node_record(tmp_path, 'n2', planted)
    record = provenance.read(text)
    n1, n2 = record['nodes']['n1'], record['nodes']['n2']
    assert n1['gpu_uuid'] == 'GPU-5cec1e9f-080f-51a8-14e6-8ec0aa0c921e'
    assert n1['gpu_serial'] == '1752624014320'
    assert n1['vbios'] == '96.00.DA.00.0C' and n1['gpus'] == '1'
    assert (n1['driver'], n2['driver']) == ('580.159.04', '580.95.05')
    assert records.of_node(record, 'n2')['driver'] == '580.95.05'
    # a node without an entry has the job's (first node's) keys
    assert 'nodes' not in records.of_node(record, 'n9')


@pytest.mark.parametrize('name', ['bogus_field.txt', 'competitor.txt'])
def test_a_tool_that_prints_no_table_is_named_not_trusted(tmp_path, name):
    record = provenance.read(_node_record(tmp_path, 'n1', NVIDIA_SMI / name,
                                          exit_code=2))
    node = record['nodes']['n1']
    assert node['identity'].startswith('nvidia-smi: ')
    assert 'gpu_uuid' not in node and 'gpus' not in node


def test_a_forged_node_name_is_dropped():
    record = provenance.read('@n1 kernel=6.1\n@../etc kernel=x\n'
                             '@n2;rm kernel=y\n@n2 kernel=6.2\n')
    assert sorted(record['nodes']) == ['n1', 'n2']


def test_the_verdict_says_nodes_gpus_and_what_differs(tmp_path):
    """The real H200 run (tests/fixtures/reports/h200x2) with a per-node
    record planted for two nodes that differ in their driver."""
    import json
    src = pathlib.Path(__file__).parent / 'fixtures' / 'reports' / \
        'h200x2' / 'nccl-transferbench-babelstream.json'
    report = json.loads(src.read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            if tc.get('hpcval_provenance'):
                tc['job_nodelist'] = ['n1', 'n2']
                tc['hpcval_provenance']['nodes'] = {
                    'n1': {'driver': '580.159.04', 'gpus': '2',
                           'gpu_uuid': 'GPU-a,GPU-b'},
                    'n2': {'driver': '580.95.05', 'gpus': '2',
                           'gpu_uuid': 'GPU-c,GPU-d'}}
    path = tmp_path / 'two.json'
    path.write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, '-m', 'hpcval.cli', 'verdict',
                           str(path), '--format', 'text'],
                          capture_output=True, text=True, timeout=120)
    assert '2 nodes, 4 GPUs' in proc.stdout, proc.stdout
    assert 'DIFFERS between nodes: driver: n1 580.159.04, n2 580.95.05' \
        in proc.stdout
    assert 'gpu_uuid' not in proc.stdout.split('DIFFERS')[1].split('\n')[0]


def test_a_fleets_odd_node_is_named_not_every_node(tmp_path):
    """The same real H200 run with 20 nodes planted, n13 on another
    driver: the line counts the common driver and names n13 alone."""
    import json
    src = pathlib.Path(__file__).parent / 'fixtures' / 'reports' / \
        'h200x2' / 'nccl-transferbench-babelstream.json'
    report = json.loads(src.read_text())
    nodes = [f'n{i}' for i in range(1, 21)]
    for run in report['runs']:
        for tc in run['testcases']:
            if tc.get('hpcval_provenance'):
                tc['job_nodelist'] = nodes
                tc['hpcval_provenance']['nodes'] = {
                    n: {'driver': '580.95.05' if n == 'n13' else
                        '580.159.04', 'gpus': '2'} for n in nodes}
    path = tmp_path / 'fleet.json'
    path.write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, '-m', 'hpcval.cli', 'verdict',
                           str(path), '--format', 'text'],
                          capture_output=True, text=True, timeout=120)
    assert 'DIFFERS between nodes: driver: 580.159.04 on 19 nodes; ' \
        '580.95.05 on n13\n' in proc.stdout, proc.stdout
