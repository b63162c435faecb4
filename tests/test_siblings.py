"""One node's GPUs and links compared with each other (the peer rule,
hpcval.peers, through hpcval.benchmarks.siblings), on real outputs
mutated: the AMD
MI300X guide's TransferBench p2p matrix (56 GPU links), the 2 x H200
TransferBench and per-GPU BabelStream 5.0 captures."""
import pathlib

import pytest

from hpcval.benchmarks import siblings as sib
from hpcval.benchmarks.babelstream import gpu_groups
from hpcval.benchmarks.transferbench import link_groups
from hpcval.inputs import InputError
from hpcval.parsers.babelstream import parse_babelstream
from hpcval.parsers.transferbench import parse_a2a, parse_p2p
from mi300x_guide import guide_outputs

H200 = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / 'h200x2'
LINK_FACTOR, GPU_FACTOR = 1.6, 1.1      # the checks' defaults
# the guide's p2p unidirectional row of GPU 02 (GB/s to CPU 00..GPU 07)
ROW = 'GPU 02 -> 54.52 37.48 46.19 46.18 N/A 46.29 46.54'


class siblings:
    """The failures of ``compare``, as the benchmark's words."""
    check_factor = staticmethod(sib.check_factor)

    @staticmethod
    def compare(groups, factor):
        return sib.failures(sib.compare(groups, factor))


@pytest.fixture(scope='module')
def guide():
    return guide_outputs()


def babelstream(which, scale=1.0, kernel='Triad'):
    out = {}
    for gpu in (0, 1):
        text = (H200 / f'{which}_babelstream50_cuda_gpu{gpu}.txt').read_text()
        result = parse_babelstream(text)
        if gpu == 1 and scale != 1.0:
            line = next(line for line in text.splitlines()
                        if line.startswith(kernel + ' '))
            mbs = line.split()[1]
            text = text.replace(line, line.replace(
                mbs, f'{float(mbs) * scale:.3f}'))
            result = parse_babelstream(text)
        out[f'vm.gpu{gpu}'] = result
    return out


class TestLinks:
    def test_the_guide_p2p_matrix_passes(self, guide):
        assert siblings.compare(link_groups(parse_p2p(guide['p2p'])),
                                LINK_FACTOR) == []

    def test_one_link_at_60_percent_of_its_siblings_fails_naming_it(
            self, guide):
        # GPU 02 -> GPU 01 (bidirectional) at 60% of its 55 siblings
        # (45.9-46.5 GB/s): above a floor of 0.75 x a lower reference, not
        # above its siblings
        text = guide['p2p'].replace(ROW, ROW.replace('46.18', '27.74'))
        failures = siblings.compare(link_groups(parse_p2p(text)),
                                    LINK_FACTOR)
        assert failures == [
            'link GPU 02 -> GPU 01 (bidir): bidir 27.74 GB/s is 60% of '
            'its 55 siblings\' median 46.23 (bound >= 28.8937 GB/s, x1.6)']

    def test_the_guide_a2a_matrix_passes(self, guide):
        assert siblings.compare(link_groups(parse_a2a(guide['a2a'])),
                                LINK_FACTOR) == []

    @pytest.mark.parametrize('which', ['check', 'hand'])
    def test_two_h200_links_pass(self, which):
        # the two directions of one NVLink pair differ by up to 1.37x in
        # these healthy captures (1.46 in the validation runs): 1.6 leaves room
        text = (H200 / 'transferbench' / f'{which}_tb152_p2p.txt').read_text()
        assert siblings.compare(link_groups(parse_p2p(text)),
                                LINK_FACTOR) == []


class TestGpus:
    @pytest.mark.parametrize('which', ['check', 'hand'])
    def test_healthy_h200_gpus_pass(self, which):
        assert siblings.compare(gpu_groups(babelstream(which)),
                                GPU_FACTOR) == []

    def test_one_gpu_at_85_percent_of_its_sibling_fails_naming_it(self):
        failures = siblings.compare(
            gpu_groups(babelstream('check', scale=0.85)), GPU_FACTOR)
        assert len(failures) == 1, failures
        assert failures[0].startswith('GPU 1: triad 3.38707e+06 MB/s is 85% '
                                      'of its 1 siblings\' median 3.97945e+06')

    def test_a_gpu_at_95_percent_passes(self):
        # the detection limit: 1/1.1, 9.1% below the siblings' median
        assert siblings.compare(
            gpu_groups(babelstream('check', scale=0.95)), GPU_FACTOR) == []


def test_the_factor_must_be_above_one():
    for bad in (1.0, 0.5, 2.5, float('inf'), float('nan')):
        with pytest.raises(InputError, match='sibling_factor'):
            siblings.check_factor(bad)
    siblings.check_factor(1.1)


def test_no_false_alarm_in_the_h200_validation_runs():
    """The lent H200 node's 18 healthy runs (baselines and healthy runs of
    tests/fixtures/captured/h200x2/validation): every per-GPU BabelStream
    kernel and every p2p link against its sibling, through the rule."""
    import json
    runs = sorted((H200 / 'validation' / 'reports').glob('*.json'))
    runs = [p for p in runs if 'loaded' not in p.name]
    compared = {'gpu': 0, 'link': 0}
    for path in runs:
        for run in json.loads(path.read_text())['runs']:
            for tc in run['testcases']:
                values = {k.rsplit(':', 1)[-1]: v[0]
                          for k, v in (tc.get('perfvalues') or {}).items()}
                name = tc['display_name']
                if name.startswith('BabelStreamCudaCheck'):
                    groups = {k: {g: (f'GPU {g}', values[f'{k}@gpu{g}'],
                                      'MB/s') for g in (0, 1)}
                              for k in ('copy', 'mul', 'add', 'triad', 'dot')
                              if f'{k}@gpu1' in values}
                    factor, kind = GPU_FACTOR, 'gpu'
                elif name.startswith('TransferBenchCudaCheck %preset=p2p'):
                    groups = {d: {pair: (pair, values[f'{d}_{pair}'], 'GB/s')
                                  for pair in ('gpu00_to_gpu01',
                                               'gpu01_to_gpu00')}
                              for d in ('uni', 'bidir')
                              if f'{d}_gpu01_to_gpu00' in values}
                    factor, kind = LINK_FACTOR, 'link'
                else:
                    continue
                assert siblings.compare(groups, factor) == [], (path, name)
                compared[kind] += 2 * len(groups)
    assert compared['gpu'] >= 90 and compared['link'] >= 36, compared
