"""The job scripts each system gets: what its operators document.

One ``--dry-run`` of every check per system (Lmod over empty modulefiles,
account abc123); the tests read the generated scripts as a system engineer
would: scheduler directives, nodes and tasks, GPU binding, modules, the
launcher line and the environment.
"""
import pytest

import systems
from lmodenv import ACCOUNT, system_env
from rfmrun import reframe

SYSTEMS = [mod.system['name'] for mod in systems.ALL]


@pytest.fixture(scope='session')
def dry_runs(dry_run):
    """The session's dry run of every check per system (conftest)."""
    return dry_run


def script(stage, pattern):
    """The one job script whose test directory matches ``pattern``."""
    found = sorted(stage.glob(f'{pattern}/rfm_job.sh'))
    assert len(found) == 1, (pattern, found)
    return found[0].read_text()


def assert_lines(text, lines):
    """Every one of ``lines`` is a whole line of the script."""
    missing = [line for line in lines if line not in text.splitlines()]
    assert not missing, f'missing lines {missing} in:\n{text}'


def launch_line(text, launcher):
    [line] = [ln for ln in text.splitlines() if ln.startswith(launcher)]
    return line


@pytest.mark.parametrize('system', [s for s in SYSTEMS
                                    if s != 'minicluster'])
def test_dry_run_of_every_check_succeeds(dry_runs, system):
    proc, report, stage = dry_runs(system)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report['session_info']['num_cases'] > 0
    assert list(stage.rglob('rfm_job.sh'))


def _by_collective(stage, check):
    """{collective: script} of a collectives check's two variants."""
    out = {}
    for path in stage.glob(f'{check}_*/rfm_job.sh'):
        text = path.read_text()
        coll = 'all_reduce' if 'all_reduce_perf' in text else 'all_gather'
        out[coll] = text
    return out


def test_frontier_one_rank_per_gcd_across_nodes(dry_runs):
    _, _, stage = dry_runs('frontier')
    text = _by_collective(stage / 'batch' / 'rocm',
                          'RcclTestsMultiNodeCheck')['all_reduce']
    assert_lines(text, (
        '#SBATCH --nodes=2', '#SBATCH --ntasks=16',
        '#SBATCH --ntasks-per-node=8', '#SBATCH --cpus-per-task=7',
        '#SBATCH --partition=batch',
        f'#SBATCH --account={ACCOUNT}', '#SBATCH --time=0:30:0',
        'module load rocm', 'module load craype-accel-amd-gfx90a',
        'module load rccl-net-plugin', 'export NCCL_NET=OFI',
        'export FI_MR_CACHE_MONITOR=kdreg2',
        'export NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3',
        # each rank sees only its closest GCD, as device 0
        'export NCCL_TESTS_DEVICE=0'))
    assert 'alt_read' not in text
    srun = launch_line(text, 'srun')
    assert srun.startswith('srun --cpus-per-task=7 --gpus-per-task=1 '
                           '--gpu-bind=closest ')
    assert srun.endswith('all_reduce_perf -b 8 -e 8G -f 2 -g 1 -n 20 '
                         '-w 5 -c 1')


def test_frontier_single_node_rccl_has_no_network_plugin(dry_runs):
    _, _, stage = dry_runs('frontier')
    text = _by_collective(stage / 'batch' / 'rocm',
                          'RcclTestsNodeCheck')['all_reduce']
    assert '#SBATCH --nodes=1' in text
    # the OFI plugin does not initialise on one node
    assert 'NCCL_NET' not in text and 'rccl-net-plugin' not in text
    srun = launch_line(text, 'srun')
    assert '--gpus-per-task=8' in srun and srun.endswith('-g 8 -n 20 -w 5 -c 1')


def test_frontier_babelstream_uses_each_ranks_only_gpu(dry_runs):
    _, _, stage = dry_runs('frontier')
    text = script(stage / 'batch' / 'rocm', 'BabelStreamHipCheck_*')
    assert '#SBATCH --ntasks-per-node=8' in text
    srun = launch_line(text, 'srun')
    assert '--gpus-per-task=1 --gpu-bind=closest bash -c' in srun
    assert 'hip-stream --device 0 -s 268435456 -n 50' in srun


def test_perlmutter_gpu_nodes(dry_runs):
    _, _, stage = dry_runs('perlmutter')
    text = _by_collective(stage / 'gpu' / 'cuda',
                          'NcclTestsMultiNodeCheck')['all_gather']
    assert_lines(text, (
        '#SBATCH --constraint=gpu', '#SBATCH --qos=regular',
        '#SBATCH --gpus-per-node=4', f'#SBATCH --account={ACCOUNT}',
        '#SBATCH --nodes=2', '#SBATCH --ntasks-per-node=4',
        '#SBATCH --cpus-per-task=32', 'module load cudatoolkit',
        'module load craype-accel-nvidia80',
        # NERSC: no per-task isolation (it breaks CUDA IPC)
        'export CUDA_VISIBLE_DEVICES=3,2,1,0',
        'export FI_MR_CACHE_MONITOR=userfaultfd'))
    assert 'NCCL_TESTS_DEVICE' not in text
    assert '--gpu-bind=none' in launch_line(text, 'srun')
    stream = script(stage / 'gpu' / 'cuda', 'BabelStreamCudaCheck_*')
    assert 'cuda-stream --device "$r" ' in stream


def test_perlmutter_cpu_nodes_ask_for_no_gpu(dry_runs):
    _, _, stage = dry_runs('perlmutter')
    text = script(stage / 'cpu' / 'PrgEnv-gnu', 'BabelStreamCpuCheck_*')
    assert '#SBATCH --constraint=cpu' in text
    assert 'gpus' not in text
    assert 'export OMP_NUM_THREADS=128' in text


def test_summit_lsf_and_jsrun_resource_sets(dry_runs):
    _, _, stage = dry_runs('summit')
    text = _by_collective(stage / 'batch' / 'cuda',
                          'NcclTestsMultiNodeCheck')['all_reduce']
    assert_lines(text, (
        '#BSUB -nnodes 2', '#BSUB -W 30', '#BSUB -q batch',
        f'#BSUB -P {ACCOUNT}', 'module load spectrum-mpi',
        'module load cuda/11.0.3', 'export NCCL_TESTS_DEVICE=0'))
    assert '#SBATCH' not in text and '--account' not in text
    assert launch_line(text, 'jsrun').startswith(
        'jsrun -n 12 -r 6 -a 1 -g 1 -c 7 ')


def test_kestrel_takes_whole_gpu_nodes(dry_runs):
    _, _, stage = dry_runs('kestrel')
    text = _by_collective(stage / 'gpu-h100' / 'cuda',
                          'NcclTestsMultiNodeCheck')['all_reduce']
    assert_lines(text, (
        '#SBATCH --exclusive', '#SBATCH --mem=0',
        '#SBATCH --gres=gpu:h100:4', f'#SBATCH --account={ACCOUNT}',
        '#SBATCH --time=0:30:0', '#SBATCH --ntasks-per-node=4',
        'module load cuda', 'export NCCL_SOCKET_IFNAME=hsn0,hsn1'))


def test_mi300x_box_runs_mpirun_on_the_host(dry_runs):
    _, _, stage = dry_runs('mi300x')
    stream = script(stage / 'default' / 'rocm', 'BabelStreamHipCheck_*')
    assert '#SBATCH' not in stream
    assert launch_line(stream, 'mpirun').startswith(
        'mpirun -np 8 --bind-to numa bash -c')
    assert 'export NCCL_HOME=${ROCM_PATH:-/opt/rocm}' in stream
    rccl = _by_collective(stage / 'default' / 'rocm',
                          'RcclTestsNodeCheck')['all_reduce']
    # the guide's command line
    assert 'all_reduce_perf -b 8 -e 8G -f 2 -g 8' in rccl


def test_account_is_optional_and_validated(tmp_path):
    env = system_env(tmp_path / 'modulefiles')
    env.pop('HPCVAL_ACCOUNT')
    proc, _ = reframe('--dry-run', '--system', 'frontier', '-n',
                      'Mpi4pyPingPongCheck', tmp_path=tmp_path, env=env,
                      checks=('checks/mpi4py_pingpong.py',))
    assert proc.returncode == 0, proc.stdout[-2000:]
    [text] = [p.read_text() for p in (tmp_path / 'rfm' / 'stage')
              .rglob('Mpi4pyPingPongCheck_*/rfm_job.sh') if 'nodes=1' in
              p.read_text()]
    assert '--account' not in text

    env['HPCVAL_ACCOUNT'] = 'abc; rm -rf ~'
    proc, _ = reframe('-l', '--system', 'frontier', tmp_path=tmp_path,
                      env=env)
    assert proc.returncode != 0
    assert "systems/frontier.py: HPCVAL_ACCOUNT='abc; rm -rf ~'" in \
        proc.stdout + proc.stderr


# -- the reference audit ----------------------------------------------------

def test_every_check_that_runs_somewhere_has_references_there(dry_runs):
    """Each check a system runs has an entry in that system's file: a
    figure with its source, or an explicit absence saying why none."""
    from hpcval import paths, references
    by_system = references.load_dir(paths.references_dir())
    missing = []
    for system in SYSTEMS:
        if system in ('local', 'minicluster'):
            continue            # laptop floors and Slurm plumbing
        _, report, _ = dry_runs(system)
        # NodeHealthCheck passes or fails on the node's health and logs
        # no figure: there is nothing to reference
        checks = {tc['name'].split()[0] for run in report['runs']
                  for tc in run['testcases'] if not tc.get('fixture')} - \
            {'NodeHealthCheck'}
        named = {ref.check for ref in by_system[system]}
        missing += [f'{system}: {c}' for c in sorted(checks - named)]
    assert not missing, 'checks without references: ' + ', '.join(missing)


def test_reference_table_in_docs_is_current():
    from hpcval import paths, references
    from rfmrun import ROOT
    current = references.markdown(
        references.load_dir(paths.references_dir()))
    assert (ROOT / 'docs' / 'reference-table.md').read_text() == current, \
        'run: hpcval references --markdown > docs/reference-table.md'


def test_gaudi2_runs_hl_qual_in_synapseai_and_mpi_once(dry_runs):
    _, _, stage = dry_runs('gaudi2')
    text = script(stage / 'default' / 'synapseai', 'HlQualMemoryCheck*')
    assert 'export PATH=/opt/habanalabs/qual/gaudi2/bin:$PATH' in text
    assert text.count('export __python_cmd=python3') == 1
    assert launch_line(text, '/opt/habanalabs').endswith(
        'hl_qual -gaudi2 -c all -rmod parallel -mb -memOnly')
    # CPU benchmarks run once per partition, not again in SynapseAI
    assert not list((stage / 'default' / 'synapseai')
                    .glob('Mpi4pyPingPongCheck*'))
    ping = script(stage / 'default' / 'gnu', 'Mpi4pyPingPongCheck_*')
    assert launch_line(ping, 'mpirun') == \
        'mpirun -np 2 python3 -m mpi4py.bench pingpong -a numpy -n 4194304'


def test_cuda_arch_override_reaches_every_cuda_build(tmp_path):
    """``-S cuda_arch`` is one UpstreamBuild variable: each CUDA build that
    names an architecture takes it, and an unsafe value is refused."""
    env = system_env(tmp_path / 'modulefiles')
    names = ('-n', 'NcclTestsNodeCheck', '-n', 'BabelStreamCudaCheck',
             '-n', 'TransferBenchCudaCheck', '-n', 'CommScopeCudaCheck')
    arch = [a for build in ('NcclTestsBuild', 'BabelStreamBuild',
                            'TransferBenchBuild', 'CommScopeBuild')
            for a in ('-S', f'{build}.cuda_arch=sm_70')]
    proc, _ = reframe('--dry-run', '--system', 'perlmutter', *names, *arch,
                      tmp_path=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    builds = {p.parent.name.split('_')[0]: p.read_text() for p in
              (tmp_path / 'rfm' / 'stage').rglob('*Build_*/rfm_build.sh')}
    assert 'NVCC_GENCODE="-gencode=arch=compute_70,code=sm_70"' in \
        builds['NcclTestsBuild']
    assert '-DCUDA_ARCH=sm_70' in builds['BabelStreamBuild']
    assert '-arch=sm_70' in builds['TransferBenchBuild']
    assert '-DCMAKE_CUDA_ARCHITECTURES=70' in builds['CommScopeBuild']

    bad = tmp_path / 'bad'
    proc, report = reframe('--dry-run', '--system', 'perlmutter', *names[:2],
                           '-S', 'NcclTestsBuild.cuda_arch=sm_70;id',
                           tmp_path=bad, env=env)
    # refused when ReFrame creates the build, before anything is written
    assert proc.returncode != 0 and report is None
    assert "-S cuda_arch='sm_70;id'" in proc.stderr
    assert 'NcclTestsBuild' in proc.stderr and 'Traceback' not in proc.stderr
