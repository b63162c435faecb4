"""``hpcval site init DIR --from-slurm``: Slurm's description of a cluster
turned into a site system and its expected GPUs.

Parsed from real outputs (tests/fixtures/slurm/README.md: the
minicluster's, both forms, a production cluster's partitions, a recorded
cluster's partitions and nodes) and
their mutations (cut, another tool's, hostile names); the command itself
runs against fake ``scontrol``/``sinfo`` that print those fixtures, and,
in the last test, against the minicluster with a GPU partition, whose
system ReFrame then loads and lists the checks of per partition.
"""
import dataclasses
import os
import pathlib
import subprocess

import pytest
import yaml

from hpcval import references, site_from_slurm, slurm_describe
from hpcval.slurm_describe import SlurmOutputError
from hpcval.testing.minicluster import MiniCluster
from rfmrun import ROOT, VENV_BIN, reframe

FIX = ROOT / 'tests' / 'fixtures' / 'slurm'


def _text(name):
    return (FIX / name).read_text()


def _minicluster(nodes='minicluster_nodes.txt'):
    return slurm_describe.describe(
        'mc', _text('minicluster_partitions.txt'), _text(nodes),
        _text('minicluster_sinfo.txt'))


def test_partitions_take_their_nodes_shape_and_list_the_others():
    cluster = _minicluster()
    debug, gpu = cluster.partitions
    assert (debug.name, [n.name for n in debug.nodes]) == ('debug',
                                                           ['n1', 'n2'])
    assert (debug.shape.cpus, debug.shape.gpus, debug.shape.memory_mb) == \
        (2, 0, 1000)
    # n2 has GPUs, two sockets and more memory: listed, never averaged
    [(other, names)] = debug.others
    assert names == ('n2',) and (other.gpus, other.gpu_type, other.sockets,
                                 other.memory_mb) == (2, 'h100', 2, 2000)
    assert (gpu.shape.gpus, gpu.shape.gpu_type, gpu.others) == (2, 'h100', ())
    assert debug.default and not gpu.default
    summary = '\n'.join(site_from_slurm.summary(cluster))
    assert 'DIFFERS: 1 node(s) of another shape: 4 CPUs' in summary and \
        ': n2' in summary


def test_multi_line_form_reads_as_the_one_line_form():
    assert _minicluster('minicluster_nodes_long.txt') == _minicluster()


def test_a_production_clusters_partitions():
    parts = slurm_describe.partitions(_text('grex_partitions.txt'))
    assert len(parts) == 13
    gpu = next(p for p in parts if p['PartitionName'] == 'gpu')
    assert gpu['Nodes'] == 'g[324-325]' and gpu['TotalNodes'] == '2'
    # a value holding '=' stays whole
    assert gpu['TRESBillingWeights'] == 'CPU=2.0,Mem=0'
    # without the nodes' records, a partition of 43 nodes is not shrunk
    with pytest.raises(SlurmOutputError, match=r'partition skylake: Slurm '
                       r'counts 43 node\(s\) \(TotalNodes\), scontrol show '
                       r'node gave 0'):
        slurm_describe.describe('grex', _text('grex_partitions.txt'),
                                _text('minicluster_nodes.txt'))


@pytest.mark.parametrize('gres, want', [
    ('(null)', (0, '')), ('gpu:h100:2', (2, 'h100')),
    ('gpu:8(S:0-1)', (8, '')), ('gpu:a100:4(S:0-1),nvme:3600', (4, 'a100')),
    ('gpu_mem:16280,gpu:1', (1, '')),
    ('gpu:a100:2,gpu:v100:2', (4, 'a100+v100')),
])
def test_gres_gpu_count_and_type(gres, want):
    assert slurm_describe.gpus_of(gres, 'x', 'n1') == want


@pytest.mark.parametrize('kind, vendor', [
    ('h100', 'nvidia'), ('a100', 'nvidia'), ('tesla_v100', 'nvidia'),
    ('mi250x', 'amd'), ('MI300X', 'amd'), ('gaudi2', 'habana'), ('', ''),
    ('fpga', '')])
def test_vendor_of_a_gres_type(kind, vendor):
    assert slurm_describe.vendor(kind) == vendor


@pytest.mark.parametrize('nodes, message', [
    ('truncated_nodes.txt', r'partition debug: Slurm counts 2 node\(s\)'),
    ('wrong_tool_nodes.txt', r'line 1 is not a NodeName= record: '
                             r"'debug\* up infinite"),
])
def test_broken_outputs_are_refused(nodes, message):
    with pytest.raises(SlurmOutputError, match=message):
        _minicluster(nodes)


@pytest.mark.parametrize('old, new, message', [
    ('NodeName=n2 ', 'NodeName=n2;reboot ', "node name 'n2;reboot'"),
    ('Gres=gpu:h100:2', 'Gres=gpu:h1$(id):2', 'GPU type'),
    ('CPUTot=4 ', 'CPUTot=four ', "CPUTot='four' is not a count"),
])
def test_hostile_or_broken_node_fields_are_refused(old, new, message):
    text = _text('minicluster_nodes.txt')
    assert old in text
    with pytest.raises(SlurmOutputError, match=message.replace('$', r'\$')
                       .replace('(', r'\(').replace(')', r'\)')):
        slurm_describe.nodes(text.replace(old, new, 1))


def test_a_hostile_partition_name_is_refused():
    text = _text('minicluster_partitions.txt').replace(
        'PartitionName=gpu ', "PartitionName=gpu';x ", 1)
    with pytest.raises(SlurmOutputError, match="partition name \"gpu';x\""):
        slurm_describe.partitions(text)


def test_written_files_load(tmp_path):
    files = site_from_slurm.render(_minicluster(), 'mcsite',
                                   when='2026-11-27 19:43', host='vm')
    module = files['systems/mcsite.py']
    compile(module, 'mcsite.py', 'exec')
    assert "access=['--partition=gpu', *_ACCOUNT]" in module
    assert "devices=[{'type': 'gpu', 'num_devices': 2}]" in module
    assert '# DIFFERS: 1 node(s) of another shape' in module
    path = tmp_path / 'mcsite.yaml'
    path.write_text(files['references/mcsite.yaml'])
    references.load(str(path))
    inventory = yaml.safe_load(path.read_text())['inventory']
    assert [(e['partition'], e['gpus'], e.get('model')) for e in inventory] \
        == [('debug', 0, None), ('gpu', 2, 'h100')]
    assert inventory[1]['source'].startswith('from Slurm, unconfirmed')


def test_reframe_names_of_slurm_partitions():
    taken = set()
    names = []
    for slurm in ('agro-b', 'agro_b', '1gpu', 'gpu.big'):
        names.append(site_from_slurm.reframe_name(slurm, taken))
        taken.add(names[-1])
    assert names == ['agro_b', 'agro_b_2', 'p_1gpu', 'gpu_big']


_OUTPUTS = {'partitions': 'minicluster_partitions.txt',
            'nodes': 'minicluster_nodes.txt',
            'states': 'minicluster_sinfo.txt',
            'config': 'minicluster_config.txt',
            'mpi': 'minicluster_mpi_list.txt'}


def _fake_slurm(tmp_path, **outputs):
    """scontrol, sinfo and srun that print the minicluster's fixtures, or
    what ``outputs`` gives (a fixture's name, or bytes) by output."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    files = {}
    for key, default in _OUTPUTS.items():
        given = outputs.get(key, default)
        if isinstance(given, bytes):
            files[key] = tmp_path / f'{key}.out'
            files[key].write_bytes(given)
        else:
            files[key] = FIX / given
    (bin_dir / 'scontrol').write_text(
        '#!/bin/sh\ncase "$2" in\n'
        f'  partition) cat {files["partitions"]} ;;\n'
        f'  node) cat {files["nodes"]} ;;\n'
        f'  config) cat {files["config"]} ;;\n'
        '  *) exit 1 ;;\nesac\n')
    (bin_dir / 'sinfo').write_text(f'#!/bin/sh\ncat {files["states"]}\n')
    (bin_dir / 'srun').write_text(f'#!/bin/sh\ncat {files["mpi"]}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}')


def _bytes(name, old, new):
    """Fixture ``name`` with its first ``old`` (bytes) made ``new``."""
    data = (FIX / name).read_bytes()
    assert old in data
    return data.replace(old, new, 1)


def _init(env, *args):
    return subprocess.run([str(VENV_BIN / 'hpcval'), 'site', 'init', *args],
                          env=env, capture_output=True, text=True,
                          timeout=60)


def test_dry_run_writes_nothing(tmp_path):
    env = _fake_slurm(tmp_path, config=_bytes(
        'minicluster_config.txt', b'= minicluster\n', b'= mc\n'))
    proc = _init(env, str(tmp_path / 'site'), '--from-slurm', '--dry-run')
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / 'site').exists()
    assert "NAME = 'mc'" in proc.stdout      # Slurm's ClusterName
    assert 'references/mc.yaml (not written: --dry-run)' in proc.stdout


def test_unusable_output_exits_3_and_writes_nothing(tmp_path):
    env = _fake_slurm(tmp_path, nodes='wrong_tool_nodes.txt')
    proc = _init(env, str(tmp_path / 'site'), '--from-slurm', '--name', 'x')
    assert proc.returncode == 3
    assert 'line 1 is not a NodeName= record' in proc.stderr
    assert 'nothing written' in proc.stderr and 'Traceback' not in \
        proc.stderr
    assert not (tmp_path / 'site').exists()


def test_on_the_minicluster_reframe_lists_each_partitions_checks(tmp_path):
    """Two Slurm partitions of different shapes, one with GRES gpu: the
    system written loads, launches with pmi2, and each partition lists
    its checks."""
    from conftest import require_minicluster
    require_minicluster()
    cluster = MiniCluster(tmp_path / 'mc', dedicated=False,
                          gpu_partition=True)
    cluster.start()
    try:
        env = dict(os.environ, **cluster.env())
        proc = _init(env, str(tmp_path / 'site'), '--from-slurm', '--name',
                     'mcsite')
        assert proc.returncode == 0, proc.stderr
        # as written, with no hand edit: one two-rank job across n1 and n2
        run, report = reframe(
            '-r', '--system', 'mcsite:debug', '-n',
            'Mpi4pyPingPongCheck%placement=across_nodes', '-S',
            'max_size=1024', '-S', 'loops=100', tmp_path=tmp_path / 'run',
            env={**cluster.env(), 'HPCVAL_SITE': str(tmp_path / 'site')})
    finally:
        cluster.stop()
    [case] = [tc for r in report['runs'] for tc in r['testcases']]
    assert case['result'] == 'pass', run.stdout[-3000:]
    text = pathlib.Path(case['outputdir'], 'rfm_job.sh').read_text()
    assert '#SBATCH --ntasks=2' in text and '#SBATCH --nodes=2' in text, text
    assert 'pmi2' in text, text
    assert 'DIFFERS: 1 node(s) of another shape' in proc.stderr
    # MpiDefault=none: srun's --mpi comes from the written system, or the
    # across-node ping-pong runs as two one-rank jobs
    module = (tmp_path / 'site' / 'systems' / 'mcsite.py').read_text()
    assert module.count("**mpi(NAME, pmi='pmi2'),") == 2
    refs = yaml.safe_load(
        (tmp_path / 'site' / 'references' / 'mcsite.yaml').read_text())
    assert {e['partition']: e['gpus'] for e in refs['inventory']} == \
        {'debug': 0, 'gpu': 2}
    listed = {}
    for part in ('debug', 'gpu'):
        run, _ = reframe('-l', '--system', f'mcsite:{part}',
                         tmp_path=tmp_path / part,
                         env={'HPCVAL_SITE': str(tmp_path / 'site')})
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        listed[part] = {line.split()[1] for line in run.stdout.splitlines()
                        if line.startswith('- ')}
    assert 'Mpi4pyPingPongCheck' in listed['debug']
    assert 'BabelStreamCudaCheck' in listed['gpu']
    assert 'BabelStreamCudaCheck' not in listed['debug']


@pytest.mark.parametrize('name', ['_site', 'a b', 'x/y', ''])
def test_a_system_name_that_is_no_site_system_is_refused(name):
    with pytest.raises(SlurmOutputError, match='system name'):
        site_from_slurm.render(_minicluster(), name)


def test_a_recorded_clusters_partitions_nodes_and_states():
    cluster = slurm_describe.describe(
        'z', _text('zabbix_slurm_partitions.txt'),
        _text('zabbix_slurm_nodes.txt'))
    compute, gpu, debug = cluster.partitions
    assert (len(compute.nodes), compute.shape.cpus, compute.others) == \
        (6, 32, ())
    # scontrol's states where no sinfo is given: down, drained, and a
    # node that does not respond (IDLE*)
    assert [n for n, _ in compute.unavailable] == ['n004', 'n005', 'n006']
    assert dict(compute.unavailable)['n005'] == \
        'idle+drain: hardware maintenance scheduled [root@2024-05-03T02:15:00]'
    assert (gpu.shape.gpus, gpu.shape.gpu_type) == (4, 'a100')
    assert [n for n, _ in gpu.unavailable] == ['g002']
    # 16 and 32 CPUs in one partition: the other named, not averaged
    [(other, names)] = debug.others
    assert (debug.shape.cpus, other.cpus, names) == (32, 16, ('dbg01',))
    assert debug.state == 'INACTIVE' and debug.max_nodes == '2'
    module = site_from_slurm.render(cluster, 'zsite')['systems/zsite.py']
    assert "time_limit='30m'" in module       # MaxTime 01:00:00
    assert '# UNAVAILABLE now: g002 (idle*)' in module
    assert "features=[ft.CPU, ft.MPI, ft.MULTINODE, ft.GPU, ft.NVGPU]" in \
        module


def test_a_reason_holding_fields_changes_no_shape():
    # an admin's reason text, the last field, that looks like fields
    text = _text('zabbix_slurm_nodes.txt').replace(
        'Reason=hardware maintenance scheduled',
        'Reason=hardware CPUTot=999 Gres=gpu:h100:8', 1)
    [n005] = [n for n in slurm_describe.nodes(text) if n.name == 'n005']
    assert (n005.shape.cpus, n005.shape.gpus) == (32, 0)
    assert n005.reason.startswith('hardware CPUTot=999')


def test_a_field_given_twice_is_refused():
    text = _text('minicluster_nodes.txt').replace(
        'RealMemory=1000 ', 'RealMemory=1000 CPUTot=64 ', 1)
    with pytest.raises(SlurmOutputError, match='CPUTot= given twice'):
        slurm_describe.nodes(text)


# -- admin text, sizes and numbers (issue 48 item 4) ----------------------

def test_a_latin1_byte_in_a_reason_is_read_and_reported(tmp_path):
    env = _fake_slurm(
        tmp_path, partitions='zabbix_slurm_partitions.txt', states=b'',
        nodes=_bytes('zabbix_slurm_nodes.txt', b'maintenance scheduled',
                     b'maintenance r\xe9seau'))
    cluster = slurm_describe.from_slurm(env=env)
    compute = cluster.partitions[0]
    assert dict(compute.unavailable)['n005'].startswith(
        'idle+drain: hardware maintenance r?seau')
    assert cluster.warnings == ('scontrol show node -o: 1 place(s) whose '
                                'bytes were no UTF-8, read as ?',)
    assert 'warning: scontrol show node -o: 1 place(s)' in \
        '\n'.join(site_from_slurm.summary(cluster))


def test_a_reason_holding_a_form_feed_stays_in_its_record():
    text = _text('zabbix_slurm_nodes.txt').replace(
        'maintenance scheduled', 'maintenance\fscheduled', 1)
    [n005] = [n for n in slurm_describe.nodes(text) if n.name == 'n005']
    assert n005.reason.startswith('hardware maintenance?scheduled')


@pytest.mark.parametrize('reason', ['disk | fan', 'page\fbreak'])
def test_a_sinfo_reason_holding_a_bar_or_form_feed(reason):
    text = _text('minicluster_sinfo.txt').replace(
        'n1|debug|idle|none', f'n1|debug|drained|{reason}', 1)
    assert slurm_describe.states(text)['n1'] == (
        'drained', reason.replace('\f', '?'))


def test_more_output_than_the_most_read_is_refused(tmp_path, monkeypatch):
    env = _fake_slurm(tmp_path)
    size = len((FIX / 'minicluster_nodes.txt').read_bytes())
    monkeypatch.setattr(slurm_describe, 'MAX_OUTPUT', size - 1)
    with pytest.raises(SlurmOutputError, match=rf'scontrol show node -o: '
                       rf'more than {size - 1} bytes of output'):
        slurm_describe.run('nodes', env)
    monkeypatch.setattr(slurm_describe, 'MAX_OUTPUT', size)
    assert slurm_describe.run('nodes', env)[0] == _text(
        'minicluster_nodes.txt')


def test_a_max_time_of_5000_digits_exits_3(tmp_path):
    env = _fake_slurm(tmp_path, partitions=_bytes(
        'minicluster_partitions.txt', b'MaxTime=UNLIMITED',
        b'MaxTime=' + b'9' * 5000))
    proc = _init(env, str(tmp_path / 'site'), '--from-slurm', '--name', 'x')
    assert proc.returncode == 3, proc.stderr
    assert "partition debug: MaxTime='99999999999999999999...' is not a " \
        "value Slurm prints" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and 'unexpected' not in \
        proc.stderr
    assert not (tmp_path / 'site').exists()


@pytest.mark.parametrize('max_time, limit', [
    ('UNLIMITED', '30m'), ('00:20:00', '20m'), ('1-00:00:00', '30m'),
    ('15', '15m')])
def test_max_time_forms(max_time, limit):
    text = _text('minicluster_partitions.txt').replace(
        'MaxTime=UNLIMITED', f'MaxTime={max_time}', 1)
    cluster = slurm_describe.describe('mc', text,
                                      _text('minicluster_nodes.txt'))
    assert site_from_slurm._time_limit(cluster.partitions[0]) == limit


def test_a_node_listed_twice_is_refused():
    # n2's record replaced by a second n1: the partition count still fits
    lines = _text('minicluster_nodes.txt').split('\n')
    n2 = next(i for i, line in enumerate(lines)
              if line.startswith('NodeName=n2 '))
    lines[n2] = next(line for line in lines if line.startswith('NodeName=n1 '))
    with pytest.raises(SlurmOutputError, match=r'node\(s\) n1 listed more '
                       r'than once'):
        slurm_describe.nodes('\n'.join(lines))


# -- the PMI srun gives MPI ranks (issue 49 item 7) -----------------------

def _with_mpi(default, listed):
    return dataclasses.replace(
        _minicluster(), mpi_default=default, mpi_types=listed)


def test_the_minicluster_captures_give_pmi2_to_every_partition():
    listed = slurm_describe.mpi_types(_text('minicluster_mpi_list.txt'))
    assert listed == ('pmix', 'none', 'cray_shasta', 'pmi2', 'pmix_v4')
    default = slurm_describe.mpi_default(_text('minicluster_config.txt'))
    assert default == 'none'
    module = site_from_slurm.render(_with_mpi(default, listed),
                                    'mcsite')['systems/mcsite.py']
    # what srun reads as --mpi in every job of every partition
    scope = {}
    exec(compile(module, 'mcsite.py', 'exec'), scope)
    assert [p['env_vars'] for p in scope['system']['partitions']] == \
        [[['SLURM_MPI_TYPE', 'pmi2']]] * 2
    assert '# MPI: srun --mpi=pmi2, from the PyPI MPICH wheel' in module


def test_slurms_mpi_default_is_kept():
    config = _text('minicluster_config.txt').replace(
        'MpiDefault              = none', 'MpiDefault              = pmix', 1)
    cluster = _with_mpi(slurm_describe.mpi_default(config), ())
    assert site_from_slurm.pmi(cluster)[0] == 'pmix'


def test_no_pmi_is_written_as_the_line_to_add():
    # srun --mpi=list printed nothing usable, MpiDefault=none
    cluster = _with_mpi('none', ('none',))
    module = site_from_slurm.render(cluster, 'mcsite')['systems/mcsite.py']
    compile(module, 'mcsite.py', 'exec')
    assert '**mpi(' not in module.split('# Add to each partition')[1].split(
        '\n', 1)[1]
    assert "# NO PMI: MpiDefault=none, srun --mpi=list: none" in module
    assert "# Add to each partition: **mpi(NAME, pmi='TYPE')" in module
    assert 'warning: no PMI' in '\n'.join(site_from_slurm.summary(cluster))


# -- a built-in system's name (issue 48 item 4) ---------------------------

def test_a_built_in_systems_name_is_refused_unless_replaced(tmp_path):
    env = _fake_slurm(tmp_path)        # ClusterName = minicluster
    proc = _init(env, str(tmp_path / 'site'), '--from-slurm')
    assert proc.returncode == 3
    assert proc.stderr == (
        "hpcval site init --from-slurm: system name 'minicluster' is "
        "hpcval's built-in system minicluster: give the site's another "
        "with --name NAME, or --replace to replace the built-in one; "
        "nothing written\n")
    assert not (tmp_path / 'site').exists()
    files = site_from_slurm.render(_minicluster(), 'minicluster',
                                   replace=True)
    # the built-in figures are another cluster's: none is layered
    assert yaml.safe_load(files['references/minicluster.yaml'])['replace']


def test_a_site_reference_file_is_called_layered(tmp_path, monkeypatch):
    import io
    from hpcval import paths
    site = tmp_path / 'site'
    for kind in ('checks', 'references', 'systems'):
        (site / kind).mkdir(parents=True)
    (site / 'references' / 'minicluster.yaml').write_text(
        site_from_slurm.render(_minicluster(), 'minicluster', replace=True)[
            'references/minicluster.yaml'].replace('replace: true\n', ''))
    monkeypatch.setenv('HPCVAL_SITE', str(site))
    said = io.StringIO()
    paths.announce_replacements(said)
    assert said.getvalue() == (
        f'hpcval: site references: {site}/references/minicluster.yaml is '
        f'layered over the built-in references/minicluster.yaml\n')
