"""A busy AMD GPU whose graphics clock is stuck far below its maximum
(hpcval.health.amd reads the clocks, hpcval.health.judge judges them), on
the real amd-smi and rocm-smi outputs of tests/fixtures/health/amd/
SOURCE.md, each mutated where no real output has the defect.  The fault
replayed: ROCm/legacy-rocm-build#4414, "[Issue]: MI300X SCLK stuck
around 60MHz under full load" (never above 70 MHz; about 2100 when
healthy), https://github.com/ROCm/legacy-rocm-build/issues/4414."""
import json

from hpcval.health import judge
from test_health_vendors import (MI100, ROCM, ROCM_MI100, RX6600,
                                 RX_METRIC, RX_STATIC, _edited, _stage)


def _mi100(clocks):
    """The four real MI100s, each at 100% use, with the sclk of
    ``clocks`` and its maximum, 1502 MHz (the MI100's peak engine clock;
    the telegraf query prints no range)."""
    doc = json.loads(ROCM_MI100)
    for n, mhz in enumerate(clocks):
        card = doc[f'card{n}']
        card['GPU use (%)'] = '100'
        card['sclk clock speed:'] = f'({mhz}Mhz)'
        card['Valid sclk range'] = '300Mhz - 1502Mhz'
    return json.dumps(doc, indent=4) + '\n'


def test_real_outputs_at_rest_pass(tmp_path):
    """Idle GPUs clock down: the RX 6600 at 800 of 2750 MHz (1% use),
    the MI210 at 800 of 1700 MHz (0%) fail nothing."""
    rec = _stage(tmp_path, 'amd-smi', RX_STATIC + RX_METRIC,
                 samples=RX_METRIC * 3)
    assert judge.failures(rec, RX6600) == []
    assert rec.samples['0'].max_mhz == 2750
    other = tmp_path / 'rocm'
    other.mkdir()
    assert judge.failures(_stage(other, 'rocm-smi', ROCM), None) == []


def test_a_busy_gpu_stuck_at_59_mhz_fails_alone(tmp_path):
    """The MI210's rocm-smi -a at 100% use, sclk 59 MHz (#4414's)."""
    stuck = _edited(_edited(ROCM, 'card0', 'GPU use (%)', '100'),
                    'card0', 'sclk clock speed:', '(59Mhz)')
    # no inventory: this card's rocm-smi names it GENERIC RM IMAGE
    assert judge.failures(_stage(tmp_path, 'rocm-smi', stuck), None) == [
        ('GPU 0', 'graphics clock 59 MHz at 100% use before the benchmark, '
                  '3% of its maximum 1700 MHz'),
        ('GPU 0', 'graphics clock 59 MHz at 100% use after the benchmark, '
                  '3% of its maximum 1700 MHz')]


def test_amd_smi_samples_stuck_during_the_benchmark(tmp_path):
    """The RX 6600's metric at 100% gfx activity: 60 MHz fails, 2600
    passes; its idle snapshots around the run fail nothing."""
    busy = _edited(RX_METRIC, 0, 'usage', 'gfx_activity', 'value', 100)

    def at(mhz):
        return _edited(busy, 0, 'clock', 'gfx_0', 'clk', 'value', mhz)
    rec = _stage(tmp_path, 'amd-smi', RX_STATIC + RX_METRIC,
                 samples=at(60) * 3)
    assert judge.failures(rec, RX6600) == [
        ('GPU 0', 'graphics clock 60 MHz at most in 3 of 3 samples at '
                  '90%+ use during the benchmark, 2% of its maximum 2750 '
                  'MHz')]
    (tmp_path / 'b').mkdir()
    rec = _stage(tmp_path / 'b', 'amd-smi', RX_STATIC + RX_METRIC,
                 samples=at(60) + at(2600) + at(60))
    assert judge.failures(rec, RX6600) == []


def test_half_speed_fails_only_beside_a_faster_sibling(tmp_path):
    """600 of 1502 MHz (40%): a fault when the other GPUs, as busy, run
    at 1400; all four at 600 is a node-wide limit, not one GPU's."""
    rec = _stage(tmp_path, 'rocm-smi', _mi100([1400, 600, 1400, 1400]))
    assert judge.failures(rec, MI100) == [
        ('GPU 1', 'graphics clock 600 MHz at 100% use before the benchmark, '
                  '40% of its maximum 1502 MHz'),
        ('GPU 1', 'graphics clock 600 MHz at 100% use after the benchmark, '
                  '40% of its maximum 1502 MHz')]
    (tmp_path / 'b').mkdir()
    rec = _stage(tmp_path / 'b', 'rocm-smi', _mi100([600] * 4))
    assert judge.failures(rec, MI100) == []
