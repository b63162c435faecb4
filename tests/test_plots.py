"""hpcval.publish.plots on real run reports: three local runs and a minicluster run
(tests/fixtures/reports/plots, their outputs not kept, as a report from
another site), and the replays of the seeds' example outputs for mi300x,
kestrel and local (tests/replays.py), whose outputs ReFrame kept.  Every
figure is checked as an image (size, not blank) and as SVG (parses, holds
the labels it must)."""
import dataclasses
import pathlib
import shutil
import xml.etree.ElementTree as ET

import msgspec
import pytest
from matplotlib import image as mpimg

from hpcval.publish import comparison, plots, results
from hpcval.parsers.nccl_tests import parse_nccl_tests
from hpcval.publish.plots.common import passed
from mutate import cut_after
from rfmrun import ROOT

REPORTS = ROOT / 'tests' / 'fixtures' / 'reports' / 'plots'
H200 = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2'
SVG = '{http://www.w3.org/2000/svg}'


@pytest.fixture(scope='module')
def replay_paths(replay_reports):
    """{system: report path}: conftest's session fixture (one set of
    replays for every module that reads them)."""
    return replay_reports


@pytest.fixture(scope='module')
def loaded(replay_paths):
    files = sorted(map(str, REPORTS.glob('*.json'))) + \
        list(replay_paths.values())
    got = results.load(files, on_error='reject')
    assert not got.problems
    return got


@pytest.fixture(scope='module')
def table(loaded):
    return comparison.build(loaded.samples)


def _row(table, test_prefix, metric):
    [row] = [r for r in table.rows
             if r.test.startswith(test_prefix) and r.metric == metric]
    return row


def _png(path, height=None):
    """The image as an array; checks it is a real, not blank, picture."""
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    assert 300 <= w <= 2500 and 300 <= h <= 1500, (path, img.shape)
    if height is not None:
        assert h == height
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05, f'{path} is (nearly) blank'
    assert (gray < 0.9).mean() > 0.01, f'{path} has almost nothing drawn'
    return img


def _svg_text(path):
    """All text of the SVG (it is kept as text, not paths)."""
    root = ET.parse(path).getroot()
    assert root.tag == f'{SVG}svg'
    return ' '.join(t for el in root.iter() for t in (el.text,) if t)


def _pairs(plotted):
    files = list(plotted)
    pngs = [f for f in files if f.endswith('.png')]
    assert len(files) == 2 * len(pngs)
    for png in pngs:
        assert pathlib.Path(png[:-4] + '.svg') in map(pathlib.Path, files)
    return pngs


def test_metric_bars_across_columns(table, tmp_path):
    row = _row(table, 'on_node, numpy arrays', 'latency_8B')
    plotted = plots.metric_bars(table, row, tmp_path)
    [png] = _pairs(plotted)
    assert pathlib.Path(png).name == \
        'bars-mpi4py_pingpong-on_node-numpy-arrays-latency_8b.png'
    _png(png, height=480)
    text = _svg_text(png[:-4] + '.svg')
    # three local runs, one minicluster run; lower is better for a time
    for label in ('local@vm', 'n=3', 'minicluster', 'n=1', 'lower is better',
                  'reference', 'pass band', 'latency_8B (us)'):
        assert label in text, label
    assert plotted.skipped == []


def test_replay_columns_are_labelled(table, tmp_path):
    row = _row(table, 'CPU', 'triad')
    cols = [c for c in table.columns if (row, c) in table.cells]
    # the VM's own runs, then the replays of the CPU fixture (local and the
    # four systems whose seeds hold no example output)
    assert cols[0] == 'local@vm' and 'local (replay)' in cols
    assert all(c.endswith(' (replay)') for c in cols[1:])
    [png] = _pairs(plots.metric_bars(table, row, tmp_path))
    _png(png)
    text = _svg_text(png[:-4] + '.svg')
    assert 'local (replay)' in text and 'recorded output' in text
    assert 'higher is better' in text


def test_all_metric_bars_select_and_per_link_metrics(table, tmp_path):
    plotted = plots.all_metric_bars(table, tmp_path,
                                    select='transferbench.*a2a')
    pngs = _pairs(plotted)
    # the averages and the weakest link are drawn; the 56 GPU pairs of the
    # 8-GPU a2a matrix, and each one's ratio to its siblings, are left to
    # the heat map
    assert sorted(pathlib.Path(p).name.rsplit('-', 1)[-1] for p in pngs) == \
        ['aggregate_cpu_bw.png', 'aggregate_gpu_bw.png', 'avg_bw.png',
         'min_link_bw.png']
    assert plotted.skipped == ['112 per-GPU-pair TransferBench metrics have '
                               'no bar chart: the heat maps show them']


def test_collective_curves_from_kept_outputs(loaded, tmp_path):
    plotted = plots.collective_curves(loaded.samples, tmp_path)
    pngs = _pairs(plotted)
    assert sorted(pathlib.Path(p).name for p in pngs) == [
        'curve-nccl_tests-all_gather-in_place.png',
        'curve-nccl_tests-all_reduce-in_place.png']
    for png in pngs:
        _png(png, height=500)
    text = _svg_text(str(tmp_path /
                         'curve-nccl_tests-all_reduce-in_place.svg'))
    # both replays: mi300x's rccl-tests to 8 GiB, kestrel's nccl-tests to 4G
    for label in ('mi300x (replay)', 'kestrel (replay)', 'RcclTestsNodeCheck',
                  'NcclTestsMultiNodeCheck', '1K', '1M', '1G',
                  'message size (bytes)'):
        assert label in text, label
    assert plotted.skipped == []


def test_curve_ends_at_the_tables_largest_size_value(loaded):
    """The curve is the same output the check judged: its last point is
    the busbw_inplace_largest the report holds."""
    from hpcval.publish.plots.common import unique_cases
    from hpcval.publish.plots.curves import _collect
    curves, _ = _collect(unique_cases(loaded.samples), 'in_place')
    [run] = curves['all_reduce'][('mi300x (replay)', 'RcclTestsNodeCheck')]
    [sample] = [s for s in loaded.samples
                if s.case.check == 'RcclTestsNodeCheck'
                and s.metric == 'busbw_inplace_largest']
    assert run[max(run)] == sample.value
    assert max(run) == 8 * 2**30


def test_transferbench_heatmaps(loaded, tmp_path):
    plotted = plots.transferbench_heatmaps(loaded.samples, tmp_path)
    pngs = _pairs(plotted)
    names = sorted(pathlib.Path(p).name for p in pngs)
    assert names == [
        'heatmap-transferbench-mi300x-replay-transferbenchcheck-a2a.png',
        'heatmap-transferbench-mi300x-replay-transferbenchcheck-p2p.png']
    for png in pngs:
        _png(png)
    # the config run has no matrix: no heat map, no message
    assert plotted.skipped == []
    text = _svg_text(str(tmp_path / names[0].replace('.png', '.svg')))
    [link] = [s for s in loaded.samples
              if '%preset=a2a' in s.case.test
              and s.metric == 'gpu03_to_gpu05']
    assert f'{link.value:.1f}' in text
    for label in ('GPU 00', 'GPU 07', 'destination', 'source', 'GB/s'):
        assert label in text


def test_babelstream_kernels(loaded, table, tmp_path):
    plotted = plots.babelstream_kernels(loaded.samples, tmp_path, table=table)
    names = sorted(pathlib.Path(p).name for p in _pairs(plotted))
    assert names == ['bars-babelstream-kernels-cpu.png',
                     'bars-babelstream-kernels-gpu.png',
                     'bars-babelstream-per-gpu-mi300x-replay-'
                     'babelstreamhipcheck.png']
    for name in names:
        _png(tmp_path / name)
    per_gpu = _svg_text(str(tmp_path / names[2].replace('.png', '.svg')))
    # AMD MI300X validation guide prints two of the eight GPUs' tables
    assert 'GPU 0' in per_gpu and 'GPU 1' in per_gpu
    assert 'GPU 2' not in per_gpu
    for kernel in ('copy', 'mul', 'add', 'triad', 'dot'):
        assert kernel in per_gpu


def test_babelstream_from_a_table_alone(table, tmp_path):
    """A table keeps no output folders: no per-GPU figure."""
    plotted = plots.babelstream_kernels(table, tmp_path)
    assert sorted(pathlib.Path(p).name for p in _pairs(plotted)) == [
        'bars-babelstream-kernels-cpu.png', 'bars-babelstream-kernels-gpu.png']


def _h200_case(loaded, folder, check, params, capture):
    """A case of the checks' real run on 2x H200 (--system local, see
    tests/fixtures/captured/h200x2/README.md), its captured output kept as
    ReFrame keeps a passed case's stdout."""
    folder.mkdir()
    shutil.copy(H200 / capture, folder / 'rfm_job.out')
    test = ' '.join([check, *(f'%{k}={v}' for k, v in params)])
    return msgspec.structs.replace(
        loaded.cases[0], source='h200x2 capture', check=check, test=test,
        params=params, system='local', hostname='h200x2',
        partition='default', environ='cuda',
        result='pass', replay=False, outputdir=str(folder),
        stdout='rfm_job.out',
        benchmark='nccl_tests' if 'Nccl' in check else 'transferbench')


def test_measured_h200_outputs_beside_replays(loaded, tmp_path):
    nccl = _h200_case(loaded, tmp_path / 'nccl', 'NcclTestsNodeCheck',
                      (('collective', 'all_reduce'),),
                      'check_nccl2196_all_reduce_g2.txt')
    p2p = _h200_case(loaded, tmp_path / 'p2p', 'TransferBenchCudaCheck',
                     (('preset', 'p2p'),), 'transferbench/check_tb152_p2p.txt')
    cases = [nccl, p2p] + [s.case for s in loaded.samples]
    curves = plots.collective_curves(cases, tmp_path / 'out')
    text = _svg_text(str(tmp_path / 'out' /
                         'curve-nccl_tests-all_reduce-in_place.svg'))
    assert 'local@h200x2, NcclTestsNodeCheck (n=1)' in text
    assert 'mi300x (replay), RcclTestsNodeCheck (n=1)' in text
    heat = plots.transferbench_heatmaps(cases, tmp_path / 'out')
    [png] = [p for p in heat
             if p.endswith('local-h200x2-transferbenchcudacheck-p2p.png')]
    _png(png)
    text = _svg_text(png[:-4] + '.svg')
    # on NVIDIA TransferBench runs no CPU-executed GPU pair: N/A, grey
    assert 'N/A' in text and '154' in text and 'GPU 01' in text
    assert curves.skipped == heat.skipped == []


def _moved(samples, outdir, plot_data=True):
    """The samples as a report from elsewhere: output folders not here;
    without ``plot_data``, as a report made before checks stored it."""
    cases = {}
    for s in samples:
        if s.case not in cases:
            cases[s.case] = msgspec.structs.replace(
                s.case, outputdir=outdir and f'{outdir}/{len(cases)}',
                extras=s.case.extras if plot_data else {
                    k: v for k, v in s.case.extras.items()
                    if k != 'plot_data'})
    return [msgspec.structs.replace(s, case=cases[s.case]) for s in samples]


def test_a_report_from_elsewhere_draws_every_figure(loaded, tmp_path):
    """The report carries its figures' data: with its output folders on
    another machine, the curves, heat maps and per-GPU bars are drawn."""
    samples = _moved(loaded.samples, '/nonexistent/site-b/output')
    curves = plots.collective_curves(samples, tmp_path)
    heat = plots.transferbench_heatmaps(samples, tmp_path)
    stream = plots.babelstream_kernels(samples, tmp_path)
    assert len(_pairs(curves)) == 2 and len(_pairs(heat)) == 2
    assert len(_pairs(stream)) == 3
    assert curves.skipped == heat.skipped == stream.skipped == []


@pytest.mark.parametrize('outdir', ['/nonexistent/site-b/output', None])
def test_missing_outputs_give_messages(loaded, tmp_path, outdir):
    samples = _moved(loaded.samples, outdir, plot_data=False)
    curves = plots.collective_curves(samples, tmp_path)
    heat = plots.transferbench_heatmaps(samples, tmp_path)
    stream = plots.babelstream_kernels(samples, tmp_path)
    assert list(curves) == []
    # the cross-system BabelStream bars need no kept output, and the heat
    # maps fall back on the GPU pairs among the report's metrics
    assert len(list(stream)) == 4 and len(_pairs(heat)) == 2
    assert 'GPU pairs of the report' in _svg_text(heat.files[1])
    why = 'is not on this machine' if outdir else 'names no kept output'
    for plotted, test in ((curves, 'RcclTestsNodeCheck %collective='
                                   'all_reduce'),
                          (curves, 'NcclTestsMultiNodeCheck %collective='
                                   'all_gather'),
                          (stream, 'BabelStreamHipCheck')):
        [msg] = [m for m in plotted.skipped if m.startswith(test)]
        assert why in msg and '@' in msg, msg


def test_damaged_kept_output_gives_a_message(loaded, tmp_path):
    [case] = {s.case for s in loaded.samples
              if s.case.check == 'RcclTestsNodeCheck'}
    copy = tmp_path / 'copy'
    shutil.copytree(case.outputdir, copy)
    out = copy / case.stdout
    out.write_text(cut_after(out.read_text(), '# nThread'))
    broken = msgspec.structs.replace(case, outputdir=str(copy), extras={})
    plotted = plots.collective_curves([broken], tmp_path)
    assert list(plotted) == []
    [msg] = plotted.skipped
    assert 'does not parse' in msg and 'no result table header' in msg
    # the original is intact and parses
    parse_nccl_tests(pathlib.Path(case.outputdir, case.stdout).read_text(),
                     require_footer=False)


def test_refuses_to_overwrite(table, tmp_path):
    row = _row(table, 'CPU', 'copy')
    [png] = _pairs(plots.metric_bars(table, row, tmp_path))
    before = pathlib.Path(png).read_bytes()
    with pytest.raises(FileExistsError, match=pathlib.Path(png).name):
        plots.metric_bars(table, row, tmp_path)
    assert pathlib.Path(png).read_bytes() == before
    [again] = _pairs(plots.metric_bars(table, row, tmp_path, force=True))
    assert again == png


def test_same_stem_in_one_call_gets_a_counter(table, tmp_path):
    from hpcval.publish.plots.common import Plotted, new_figure, save
    plotted = Plotted()
    for _ in range(2):
        fig = new_figure(4, 3)
        fig.add_subplot().plot([1, 2], [1, 2])
        save(fig, tmp_path, 'same', plotted)
    assert [pathlib.Path(f).name for f in plotted] == [
        'same.png', 'same.svg', 'same-2.png', 'same-2.svg']


def test_slug():
    assert plots.slug('bars', 'OsuCpuCheck %benchmark=osu_bw', 'a/b c') == \
        'bars-osucpucheck-benchmark-osu_bw-a-b-c'
    assert plots.slug('../..', '') == 'figure'
    assert len(plots.slug('x' * 500)) == 120


def test_a_failed_run_is_named_and_not_drawn(loaded):
    case = next(c for c in loaded.cases if c.result == 'pass')
    failed = msgspec.structs.replace(case, result='fail')
    skipped = msgspec.structs.replace(case, result='skip')
    why = []
    assert list(passed([case, failed, skipped], why)) == [case]
    # a skipped run ran nothing: no message for it
    assert len(why) == 1
    assert why[0].startswith(f'{case.test} @{case.system}:')
    assert why[0].endswith(': result fail; its output is not plotted')



def _overlapping_labels(fig):
    """(label, label or panel) pairs whose drawn extents overlap: two x
    tick labels of one panel, or a tick label and another panel."""
    renderer = fig.canvas.get_renderer()
    panels = {ax: ax.get_tightbbox(renderer)
              for ax in fig.axes if ax.axison}
    out = []
    for ax in panels:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i, a in enumerate(boxes):
            out += [(labels[i].get_text(), labels[j].get_text())
                    for j in range(i + 1, len(boxes))
                    if a.overlaps(boxes[j])]
            out += [(labels[i].get_text(), other.get_title())
                    for other, box in panels.items()
                    if other is not ax and a.overlaps(box)]
    return out


@pytest.fixture(scope='module')
def committed(tmp_path_factory):
    """The committed comparison's table (docs/comparison, made by
    tests/make_comparison.py from the reports it keeps)."""
    import make_comparison
    table, _ = make_comparison.runs_table(tmp_path_factory.mktemp('out'))
    return table


@pytest.fixture(scope='module')
def committed_figures(committed, tmp_path_factory):
    """{stem: figure, drawn, not written}: the committed comparison's
    small multiples (a 1-GPU column beside 2- and 8-GPU ones: the longest
    tick labels) and a bar chart of the same columns."""
    from hpcval.publish.plots import bars
    figs = {}
    [row] = [r for r in committed.rows if r.benchmark == 'nccl_tests'
             and r.test == 'all_reduce, single process'
             and r.metric == 'busbw_inplace_largest']
    out = tmp_path_factory.mktemp('unwritten')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bars, 'save', lambda fig, outdir, stem, *_, **__:
                      figs.setdefault(stem, fig))
        for bench in ('nccl_tests', 'transferbench'):
            plots.benchmark_multiples(committed, bench, out)
        plots.metric_bars(committed, row, out)
    for fig in figs.values():
        fig.canvas.draw()
    return figs


def test_committed_multiples_have_no_overlapping_labels(committed_figures):
    """Measured after drawing, with matplotlib's own text extents."""
    assert list(committed_figures) == [
        'multiples-nccl_tests', 'multiples-transferbench',
        'bars-nccl_tests-all_reduce-single-process-busbw_inplace_largest']
    for stem, fig in committed_figures.items():
        assert _overlapping_labels(fig) == [], stem


def _bars_at(ax):
    return sorted(round(p.get_x() + p.get_width() / 2)
                  for p in ax.patches if p.get_height() > 0)


def test_a_figure_0_by_definition_has_a_note_not_a_bar(committed,
                                                      committed_figures,
                                                      tmp_path):
    """The bus bandwidth of the one-GPU h100 column: none by definition,
    as the tables say (comparison.vacuous), so no 0 bar."""
    busbw = {ax.get_title(): ax for fig in committed_figures.values()
             for ax in fig.axes if ax.axison and 'busbw' in ax.get_title()}
    assert len(busbw) == 11
    for title, ax in busbw.items():
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks[0].startswith('h100\n'), title
        assert ticks[0].endswith('\nnone by\ndefinition'), title
        assert 'definition' not in ' '.join(ticks[1:]), title
        assert 0 not in _bars_at(ax) and _bars_at(ax), title
    # the times of the same one-GPU runs are measured: drawn
    [times] = [ax for ax in committed_figures['multiples-nccl_tests'].axes
              if ax.get_title().startswith('all_gather, single process:\n'
                                           'time_inplace_smallest')]
    assert 0 in _bars_at(times)

    # a row of nothing but such figures is not drawn at all
    alone = dataclasses.replace(committed, cells={
        k: c for k, c in committed.cells.items() if k[1] == 'h100'})
    alone.sort()
    plotted = plots.all_metric_bars(alone, tmp_path, select='nccl.*busbw')
    assert plotted.files == [] and len(plotted.skipped) == 10
    assert all('0 by definition' in m for m in plotted.skipped)
