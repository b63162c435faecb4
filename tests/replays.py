"""ReFrame run reports made by replaying the seeds' example outputs through
the checks (config/replay.py, hpcval.replay, docs/replay.md).

The outputs are cut from the seed documents at test time (tests/seedtext.py
and the extractors of the parser tests); nothing of their text is copied
here.  Only mi300x (AMD MI300X validation guide) and kestrel (NREL Kestrel collective benchmark) have example outputs;
frontier, summit, perlmutter and gaudi2 have none in the seeds: they (and
``local``) replay the shared CPU fixtures recorded on an x86 VM, which
exercise their checks, references and labels, not their speed.
"""
import pathlib

import seedtext
from rfmrun import ROOT, reframe
from test_parser_babelstream import per_gpu
from mi300x_guide import EXAMPLE_CFG, guide_outputs

SEEDS = ROOT / 'tests' / 'fixtures' / 'documents'
MI300X = SEEDS / 'amd-mi300x-validation-guide.txt'
KESTREL = SEEDS / 'nrel-kestrel-collective-benchmark.txt'
CPU_FIXTURES = ROOT / 'tests' / 'fixtures' / 'captured' / 'vm'
REPLAY_CONFIG = ROOT / 'config' / 'replay.py'

KESTREL_EXCERPT = ('NREL Kestrel collective benchmark quotes the result table only: no device '
                   'list, no "Avg bus bandwidth" footer')


def mi300x_recordings():
    """{recording name: {file: text}} of the MI300X guide's examples."""
    guide = guide_outputs()
    stream = seedtext.rst_output(MI300X, ':mark:`BabelStream`',
                                 ':mark:`Dot 3927179.117')
    gpus = {}
    for n, text in enumerate(per_gpu(stream)):
        gpus[f'stream.guidenode.gpu{n}.out'] = text
        gpus[f'stream.guidenode.gpu{n}.err'] = ''
    return {
        'TransferBenchCheck%preset=a2a': {'stdout': guide['a2a']},
        'TransferBenchCheck%preset=p2p': {'stdout': guide['p2p']},
        'TransferBenchCheck%preset=config': {'stdout': guide['cfg'],
                                             'example.cfg': EXAMPLE_CFG},
        'RcclTestsNodeCheck%collective=all_reduce': {
            'stdout': seedtext.rst_output(MI300X, '# nThread 1 nGpus 8',
                                          '# Avg bus bandwidth')},
        'RocblasBenchCheck%gemm=fp32': {'stdout': guide['gemm']},
        'RocblasBenchCheck%gemm=f16_strided': {'stdout': guide['h']},
        'RocblasBenchCheck%gemm=i8_strided': {'stdout': guide['i8_r']},
        'BabelStreamHipCheck': {
            **gpus, 'excerpt.txt': f'AMD MI300X validation guide prints {len(gpus) // 2} of the '
                                   f'8 GPUs\' tables (". . ." elides the rest)'},
    }


def kestrel_recordings(excerpt=True):
    return {
        f'NcclTestsMultiNodeCheck%collective={name}': {
            'stdout': seedtext.fenced_block(KESTREL, f'### {title} reference'),
            **({'excerpt.txt': KESTREL_EXCERPT} if excerpt else {})}
        for name, title in (('all_reduce', 'AllReduce'),
                            ('all_gather', 'AllGather'))
    }


def local_recordings():
    out = CPU_FIXTURES / 'babelstream_v5.0_omp_n20_s33554432.txt'
    return {'BabelStreamCpuCheck': {'stdout': out.read_text()}}


def cpu_fixture_recordings():
    """The shared CPU fixtures (BabelStream OpenMP, OSU latency and
    bandwidth, two ranks), recorded on the 2-core x86 VM: what frontier,
    summit, perlmutter and gaudi2 can replay, since their seeds hold no
    example output.  Their verdicts say nothing about those machines; the
    replays exercise each system's checks, references and labels."""
    osu = {bench: (CPU_FIXTURES / f'osu74_{bench[4:]}_2ranks.txt').read_text()
           for bench in ('osu_latency', 'osu_bw')}
    return {
        **local_recordings(),
        **{f'OsuCpuCheck%benchmark={bench}%placement=same_socket':
           {'stdout': text} for bench, text in osu.items()},
    }


#: system -> (recordings, check files, -S settings the recorded runs used)
SYSTEMS = {
    'mi300x': (mi300x_recordings,
               ['checks/transferbench.py', 'checks/rocblas_bench.py',
                'checks/nccl_tests.py', 'checks/babelstream.py'],
               # the guide prints one run of each GEMM
               ['RocblasBenchCheck.repetitions=1']),
    # NREL Kestrel collective benchmark's run: 64 GPUs on 16 nodes, -e 4G
    'kestrel': (kestrel_recordings, ['checks/nccl_tests.py'],
                ['NcclTestsMultiNodeCheck.num_nodes=16',
                 'NcclTestsMultiNodeCheck.max_bytes=4G']),
    'local': (local_recordings, ['checks/babelstream.py'],
              ['BabelStreamCpuCheck.num_times=20']),
    **{system: (cpu_fixture_recordings,
                ['checks/babelstream.py', 'checks/osu.py'],
                ['BabelStreamCpuCheck.num_times=20'])
       for system in ('frontier', 'summit', 'perlmutter', 'gaudi2')},
}
#: systems whose seeds have no example output to replay (they replay the
#: shared CPU fixtures instead)
NOT_RECORDED = ('frontier', 'summit', 'perlmutter', 'gaudi2')


def write_recordings(folder, recordings):
    """One folder per recording under ``folder``; returns ``folder``."""
    for name, files in recordings.items():
        (folder / name).mkdir(parents=True)
        for filename, text in files.items():
            (folder / name / filename).write_text(text)
    return folder


def replay(system, recordings, checks, settings, workdir):
    """One ``reframe -C config/replay.py -r`` over ``recordings``;
    returns (process, report)."""
    workdir = pathlib.Path(workdir)
    rec = write_recordings(workdir / 'recordings', recordings)
    args = ['-r', '--system', system, '-S', f'replay_dir={rec}']
    for name in recordings:
        args += ['-n', name]
    for setting in settings:
        args += ['-S', setting]
    return reframe(*args, tmp_path=workdir, checks=checks, timeout=300,
                   env={'RFM_CONFIG_FILES': str(REPLAY_CONFIG)})


def make_replay_reports(workdir, systems=SYSTEMS):
    """Replay the recorded outputs of ``systems`` (default: all), one
    ReFrame run per system; returns {system: path of its JSON run
    report}."""
    reports = {}
    for system in systems:
        recordings, checks, settings = SYSTEMS[system]
        folder = pathlib.Path(workdir) / system
        proc, report = replay(system, recordings(), checks, settings, folder)
        if report is None:
            raise RuntimeError(f'replay on {system} wrote no report:\n'
                               f'{proc.stdout[-3000:]}{proc.stderr[-3000:]}')
        reports[system] = str(folder / 'report.json')
    return reports
