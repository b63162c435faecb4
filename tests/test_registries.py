"""A benchmark declares what it is where it lives; the one registry left
outside it (the vendor words that publishing strips to share a row across
vendors) must know every check."""
import collections
import pytest
import reframe as rfm

from hpcval import features as ft
from hpcval import inputs, suites
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.publish import measures
from rfmrun import check_modules

VENDOR_ENVIRONS = {ft.CUDA: 'nvidia', ft.ROCM: 'amd'}


def _leaves():
    return [(stem, obj) for stem, module in check_modules('registry')
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, rfm.RegressionTest)
            and obj.__module__ == module.__name__
            and not obj.__name__.startswith('_')]


LEAVES = _leaves()


def _vendor(cls):
    environs = ' '.join(cls.valid_prog_environs)
    vendors = {v for env, v in VENDOR_ENVIRONS.items()
               if f'+{env}' in environs.split()}
    return vendors.pop() if len(vendors) == 1 else None


def test_every_check_is_found():
    assert len(LEAVES) >= 20, LEAVES


def test_vendor_variants_share_their_row():
    """NVIDIA and AMD leaves of one benchmark file publish as shared rows
    (measures.kind strips their vendor words: Cuda, Hip, Nccl, ...): each
    NVIDIA leaf shares its row with one AMD leaf.  A leaf whose vendor word
    measures does not know gets a row of its own, and fails here."""
    by_file = collections.defaultdict(lambda: collections.defaultdict(set))
    for stem, cls in LEAVES:
        vendor = _vendor(cls)
        if vendor is None:
            assert measures.kind(cls.__name__) == cls.__name__, cls
        else:
            by_file[stem][vendor].add(measures.kind(cls.__name__))
    for stem, kinds in by_file.items():
        if len(kinds) == 2:
            assert kinds['nvidia'] == kinds['amd'], (stem, dict(kinds))


@pytest.mark.parametrize('stem,cls', LEAVES,
                         ids=[c.__name__ for _, c in LEAVES])
def test_every_variable_has_an_input_policy(stem, cls):
    policy = inputs.policy_of(cls)
    missing = [v for v in inputs.hpcval_variables(cls) if v not in policy]
    assert not missing, f'{cls.__name__}: no input_policy for {missing}'


def test_suites_are_tags_the_benchmarks_declare():
    for mode in suites.MODES[:2]:
        assert mode['options'][0] == '-t', mode
    assert ParsedBenchmark.suites is not None
