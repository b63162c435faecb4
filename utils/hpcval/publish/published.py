"""The published-reference view: seed tables from references/ alone."""
from dataclasses import dataclass, field

from hpcval import references, units

from hpcval.publish import comparison, sources

SANDIA = sources.SANDIA_POSTER.short
MI300X = sources.MI300X_GUIDE.short
DOCUMENT = {SANDIA: sources.SANDIA_POSTER, MI300X: sources.MI300X_GUIDE}

#: seed system name -> (hpcval system, the partition its tests run in)
SYSTEMS = {'Frontier': ('frontier', 'batch'), 'Summit': ('summit', 'batch'),
           'Perlmutter': ('perlmutter', 'gpu'),
           'MI300X': ('mi300x', 'default')}


@dataclass(frozen=True)
class At:
    """The reference a test with attributes ``where`` is judged against."""
    check: str
    metric: str
    where: dict = field(default_factory=dict)
    partition: str = ''          # '': the system's partition in SYSTEMS


def at(check, metric, partition='', **where):
    return At(check, metric, where, partition)


@dataclass(frozen=True)
class SeedRow:
    benchmark: str               # check file stem, as hpcval's tables group
    label: str                   # the seed's column label
    cells: dict                  # seed system name -> At, or why no figure


@dataclass(frozen=True)
class SeedTable:
    source: str
    number: int
    caption: str
    unit: str                    # the seed's unit, in hpcval spelling
    rows: tuple
    notes: tuple = ()

    @property
    def title(self):
        return f'{self.source}, Table {self.number}: {self.caption}'


CPU_ONLY = 'CPU-only system that hpcval does not define'
_CPU_ONLY = dict.fromkeys(('Trinity', 'Sawtooth', 'Eagle'), CPU_ONLY)
_OLCF_NERSC = ('Frontier', 'Summit', 'Perlmutter')
NOT_SLOWEST = ('a faster link kind than the slowest: the check reports the '
               'slowest GPU pair only')
SUMMIT_CROSS = ('no GPU placement across POWER9 sockets: OsuCudaCheck '
                'on_node pairs GPUs 0 and 1 of one socket (the Socket column)')

_COPY, _LAT = 'copy', 'latency_8B'
_OSU_SOCKET = dict(benchmark='osu_latency', placement='same_socket')
_OSU_CROSS = dict(benchmark='osu_latency', placement='cross_socket')
_OSU_GPU = dict(benchmark='osu_latency', placement='on_node')
_CS = {'Frontier': 'CommScopeHipCheck', 'Summit': 'CommScopeCudaCheck',
       'Perlmutter': 'CommScopeCudaCheck'}
# GPU-pair link kinds of a node (the poster's Figs. 2, 3; Frontier's C and
# D share one bandwidth column)
_LINK_KINDS = {'Frontier': 4, 'Summit': 2, 'Perlmutter': 1}


def _comm_scope(metric, **others):
    """A Comm|Scope row: each system's ``metric`` unless ``others`` says."""
    return {name: others.get(name, at(check, metric))
            for name, check in _CS.items()}


def _link_kinds(label, metric, kinds, slowest):
    """Comm|Scope GPU-pair rows, one per link kind column."""
    return tuple(
        SeedRow('comm_scope', f'{label}, {kind}', {
            name: at(_CS[name], metric) if last == kind else NOT_SLOWEST
            for name, last in slowest.items()
            if kinds.index(kind) < _LINK_KINDS[name]})
        for kind in kinds)


def _tb(preset, metric):
    return {'MI300X': at('TransferBenchCheck', metric, preset=preset)}


def _gemm(gemm):
    return {'MI300X': at('RocblasBenchCheck', 'gflops', gemm=gemm)}


def _stream(kernel):
    return {'MI300X': at('BabelStreamHipCheck', kernel, array_size=268435456,
                         num_times=50)}


TABLES = (
    SeedTable(SANDIA, 2, 'BabelStream COPY bandwidths (GB/s).', 'GB/s', (
        SeedRow('babelstream', 'CPU', {**dict.fromkeys(
            _OLCF_NERSC, at('BabelStreamCpuCheck', _COPY)), **_CPU_ONLY}),
        SeedRow('babelstream', 'GPU', {
            'Frontier': at('BabelStreamHipCheck', _COPY),
            'Summit': at('BabelStreamCudaCheck', _COPY),
            'Perlmutter': at('BabelStreamCudaCheck', _COPY)}),
    )),
    SeedTable(SANDIA, 3, 'MPI latencies. Column subheadings indicate the '
              'communication domain.', 'us', (
        SeedRow('osu', 'On-Socket, Socket', {**dict.fromkeys(
            _OLCF_NERSC, at('OsuCpuCheck', _LAT, **_OSU_SOCKET)),
            **_CPU_ONLY}),
        SeedRow('osu', 'On-Socket, Node', {
            'Summit': at('OsuCpuCheck', _LAT, **_OSU_CROSS),
            'Perlmutter': at('OsuCpuCheck', _LAT, 'cpu', **_OSU_CROSS),
            **_CPU_ONLY}),
        SeedRow('osu', 'GPU → GPU, Socket', {
            'Summit': at('OsuCudaCheck', _LAT, **_OSU_GPU)}),
        SeedRow('osu', 'GPU → GPU, Node', {
            'Frontier': at('OsuRocmCheck', _LAT, **_OSU_GPU),
            'Summit': SUMMIT_CROSS,
            'Perlmutter': at('OsuCudaCheck', _LAT, **_OSU_GPU)}),
    ), ('the poster does not state the message size; hpcval reads its '
        'latency at 8 B',)),
    SeedTable(SANDIA, 4, 'Intranode transfer bandwidths (GB/s). Host/GPU is '
              'mean of host-to-device and device-to-host', 'GB/s', (
        SeedRow('comm_scope', 'Host/GPU, A',
                _comm_scope('host_gpu_bandwidth')),
        *_link_kinds('GPU/GPU', 'gpu_gpu_bandwidth', ('A', 'B', 'C,D'),
                     {'Frontier': 'C,D', 'Summit': 'B', 'Perlmutter': 'A'}),
    ), ('the poster prints Summit\'s row without a name (between Frontier '
        'and Perlmutter); column Host/GPU B has no figure for any system',)),
    SeedTable(SANDIA, 5, 'GPU control and transfer latencies.', 'us', (
        SeedRow('comm_scope', 'Kernel', _comm_scope('kernel_launch')),
        SeedRow('comm_scope', 'Sync', _comm_scope('device_sync')),
        SeedRow('comm_scope', 'Host/GPU', _comm_scope('host_gpu_latency')),
        *_link_kinds('GPU → GPU', 'gpu_gpu_latency', ('A', 'B', 'C', 'D'),
                     {'Frontier': 'C', 'Summit': 'B', 'Perlmutter': 'A'}),
    )),
    SeedTable(MI300X, 1, 'Average, Pass/Fail Bandwidth in GB/s for '
              'TransferBench All-to-All Benchmarking', 'GB/s', (
        SeedRow('transferbench', 'a2a Avg Bandwidth', _tb('a2a', 'avg_bw')),
    )),
    SeedTable(MI300X, 2, 'Average, Pass/Fail Bandwidth in GB/s for '
              'TransferBench Peer-to-Peer Benchmarking', 'GB/s', (
        SeedRow('transferbench', 'p2p Avg Unidirectional Copy (GPU->GPU)',
                _tb('p2p', 'uni_gpu_to_gpu')),
        SeedRow('transferbench', 'P2p Avg Bidirectional Copy (GPU<->GPU)',
                _tb('p2p', 'bidir_gpu_to_gpu')),
    )),
    SeedTable(MI300X, 3, 'Average, Pass/Fail Bandwidth in GB/s for '
              'TransferBench Benchmarking', 'GB/s', (
        SeedRow('transferbench', 'Test 1', _tb('config', 'test1')),
        SeedRow('transferbench', 'Test 2', _tb('config', 'test2')),
        SeedRow('transferbench', 'Test 3 – 0 to 1',
                _tb('config', 'test3_transfer0')),
        SeedRow('transferbench', 'Test 3 – 1 to 0',
                _tb('config', 'test3_transfer1')),
        SeedRow('transferbench', 'Test 4', _tb('config', 'test4')),
        SeedRow('transferbench', 'Test 6', _tb('config', 'test6')),
    ), ('Test 5 is N/A in the guide: CPU-only, not to be used to validate '
        'GPU performance',)),
    SeedTable(MI300X, 4, 'Average, Pass/Fail Bandwidth in GB/s for RCCL '
              'Benchmarking', 'GB/s', (
        SeedRow('nccl_tests', 'all_reduce', {
            'MI300X': at('RcclTestsNodeCheck', 'busbw_inplace_largest',
                         collective='all_reduce', max_bytes='8G')}),
    ), ('in-place bus bandwidth at 8 GB messages on 8 GPUs',)),
    SeedTable(MI300X, 5, 'Average, Pass/Fail Bandwidth in TFLOPS for GEMM '
              'Benchmarking', 'GFLOP/s', (
        SeedRow('rocblas_bench', 'FP32 4kx4kx4k', _gemm('fp32')),
        SeedRow('rocblas_bench', 'Strided BF16, BS 5, 1kx2kx512',
                _gemm('f16_strided')),
        SeedRow('rocblas_bench', 'Strided Int8, BS5, 1kx2kx512',
                _gemm('i8_strided')),
    ), ('the guide\'s header says TFLOPS, but its figures are '
        'rocblas-bench\'s GFLOP/s (its example prints 97190.6 for FP32)',
        'the guide\'s "BF16" command passes --a_type h (fp16): hpcval runs '
        'it as gemm=f16_strided')),
    SeedTable(MI300X, 6, 'Average, Pass/Fail Memory Bandwidth in MB/s for '
              'BabelStream Benchmarking', 'MB/s', tuple(
        SeedRow('babelstream', label, _stream(label.lower()))
        for label in ('Copy', 'Mul', 'Add', 'Triad', 'Dot'))),
)


def find(by_system, system, partition, spec):
    """The Reference of ``spec`` judging ``system``/``partition``, or None."""
    chosen = None
    for ref in by_system.get(system, []):
        if ref.metric == spec.metric and references.applies(
                ref, [spec.check], partition, spec.where):
            chosen = ref
    return chosen if chosen is not None and chosen.value is not None \
        else None


def _cell(ref, unit):
    # no round trip through the base unit (7.7 us would read 7.699999...)
    scale = 1.0 if ref.unit == unit else units.convert(1.0, ref.unit, unit)
    value = ref.value * scale
    return comparison.Cell(
        values=[value],
        reference=comparison.Reference(value, ref.lower, ref.upper),
        verdict=comparison.PUBLISHED,
        spread=None if ref.spread is None else ref.spread * scale)


def _table(seed, by_system):
    table = comparison.Table(seed.title, [], [], {}, list(seed.notes))
    table.sources = [DOCUMENT[seed.source]]
    for srow in seed.rows:
        for name, spec in srow.cells.items():
            if not isinstance(spec, At):
                continue
            system, partition = SYSTEMS[name]
            ref = find(by_system, system, spec.partition or partition, spec)
            if ref is None:
                table.notes.append(
                    f'{system}, {srow.label}: references/{system}.yaml has '
                    f'no figure for {spec.check} {spec.metric}')
                continue
            row = comparison.Row(srow.benchmark, srow.label, spec.metric,
                                 seed.unit)
            if row not in table.rows:
                table.rows.append(row)
            if system not in table.columns:
                table.columns.append(system)
            table.cells[(row, system)] = _cell(ref, seed.unit)
    by_reason = {}
    for _, name, label, why in unreferenced((seed,)):
        by_reason.setdefault(why, []).append(f'{name} {label}')
    for reason, cells in by_reason.items():
        table.notes.append(f'not shown ({reason}): {"; ".join(cells)}')
    return table


def tables(by_system):
    """The seed tables as hpcval Tables built from ``by_system``."""
    return [_table(seed, by_system) for seed in TABLES]


def unreferenced(seeds=TABLES):
    """(title, system, column, why) of each seed cell without reference."""
    return [(seed.title, name, srow.label, spec)
            for seed in seeds for srow in seed.rows
            for name, spec in srow.cells.items() if not isinstance(spec, At)]


def unreferenced_markdown():
    """The list docs/references.md publishes (a test keeps it current)."""
    lines = ['| seed table | system | cell | why no hpcval reference |',
             '|---|---|---|---|']
    lines += [f'| {title.split(":")[0]} | {name} | {label} | {why} |'
              for title, name, label, why in unreferenced()]
    return '\n'.join(lines) + '\n'
