"""The committed comparison (docs/comparison/, made by
tests/make_comparison.py): current, NVIDIA and AMD in the same rows, its
figures drawn from the reports alone, its HTML page rendered by headless
Chromium within the size and height budgets, its LaTeX compiled by
pdflatex.
"""
import csv
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

import browser
import make_comparison as mc
from hpcval import cli

PAGE_BYTES = mc.PAGE_BYTES      # the page with every figure inside
PAGE_HEIGHT = mc.PAGE_HEIGHT    # px at 1400 px wide
PASS_RGB, FAIL_RGB = (0xe3, 0xf4, 0xe3), (0xf8, 0xdc, 0xdc)
_URI = re.compile(r'data:image/png;base64,[A-Za-z0-9+/=]+')


STALE = 'is stale: run .venv/bin/python tests/make_comparison.py'


@pytest.fixture(scope='module')
def replayed(replay_reports):
    """The replays made again by the checks of today (the session's, made
    as make_comparison makes them), as make_comparison commits them:
    {file name: text}."""
    out = {}
    for system, name in mc.REPLAYED:
        path = pathlib.Path(replay_reports[system])
        out[name] = json.dumps(mc.committed(json.loads(path.read_text()),
                                            system, path.parent),
                               indent=2) + '\n'
    return out


@pytest.fixture(scope='module')
def rebuilt(tmp_path_factory, replayed):
    """The comparison made again from the committed measured inputs and
    the replays made again (the page names its inputs by file name)."""
    out = tmp_path_factory.mktemp('comparison')
    reports = tmp_path_factory.mktemp('reports')
    for name, text in replayed.items():
        (reports / name).write_text(text)
    assert cli.main(['report', *mc.report_args(out, reports)]) == 0
    return out


def test_committed_replays_are_byte_for_byte_what_the_checks_make(
        replayed):
    for name, text in replayed.items():
        assert text == (mc.REPORTS / name).read_text(), \
            f'docs/comparison/reports/{name} {STALE}'


def test_committed_comparison_is_current(rebuilt):
    """Every text file byte for byte (the figures by name: their pixels
    depend on matplotlib's and FreeType's versions)."""
    stale = STALE
    for name in ('comparison.md', 'comparison.csv', 'comparison.tex',
                 'comparison.bib'):
        assert (rebuilt / name).read_bytes() == \
            (mc.OUT / name).read_bytes(), f'docs/comparison/{name} {stale}'
    assert mc.readme() == (mc.OUT / 'README.md').read_text(), \
        f'docs/comparison/README.md {stale}'
    # the figures' pixels depend on matplotlib's and FreeType's versions:
    # the page is compared without them, the figures by name
    page = _URI.sub('data:', (rebuilt / 'comparison.html').read_text())
    assert page == _URI.sub('data:', (mc.OUT / 'comparison.html')
                            .read_text()), f'comparison.html {stale}'
    assert sorted(p.name for p in (rebuilt / 'plots').glob('*.png')) == \
        sorted(p.name for p in (mc.OUT / 'plots').glob('*.png'))


def test_mi300x_and_h200_share_rows():
    """MI300X (replayed, labelled) and H200 (measured) in the same
    BabelStream, collective and TransferBench rows."""
    rows = list(csv.DictReader(io.StringIO(
        (mc.OUT / 'comparison.csv').read_text())))
    columns = {}
    for r in rows:
        columns.setdefault((r['benchmark'], r['test'], r['metric']),
                           set()).add(r['system'])
    for bench, metric in (('babelstream', 'copy'),
                          ('nccl_tests', 'busbw_inplace_largest'),
                          ('transferbench', 'avg_bw')):
        shared = [key for key, cols in columns.items()
                  if key[0] == bench and key[2] == metric
                  and {'h200x2', 'mi300x (replay)'} <= cols]
        assert shared, f'no {bench} {metric} row holds both systems'
    md = (mc.OUT / 'comparison.md').read_text()
    assert 'BabelStreamCudaCheck \\(h100, h200x2\\); BabelStreamHipCheck ' \
           '\\(mi300x \\(replay\\)\\)' in md


def test_figures_come_from_the_reports_alone():
    """The replays' output folders are gone (they were made in a temporary
    folder): their curves, heat maps and per-GPU bars come from the
    plot data their reports carry."""
    for _, name in mc.REPLAYED:
        report = json.loads((mc.REPORTS / name).read_text())
        for run in report['runs']:
            for tc in run['testcases']:
                assert not os.path.exists(tc.get('outputdir') or '')
    names = {p.name for p in (mc.OUT / 'plots').glob('*.png')}
    for expected in ('curve-nccl_tests-all_reduce-in_place.png',
                     'heatmap-transferbench-mi300x-replay-'
                     'transferbenchcheck-p2p.png',
                     'bars-babelstream-per-gpu-mi300x-replay-'
                     'babelstreamhipcheck.png'):
        assert expected in names


def _need(tool, package):
    if shutil.which(tool) is None:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'CI=true and {tool} is missing (Debian {package}; '
                        f'bootstrap.sh --tests installs it)')
        pytest.skip(f'{tool} (Debian {package}) not installed')


def test_page_renders_in_chromium(tmp_path):
    _need('chromium', 'chromium')
    from PIL import Image
    page = mc.OUT / 'comparison.html'
    assert page.stat().st_size < PAGE_BYTES
    layout = browser.layout(page, tmp_path)
    assert 3000 < layout['height'] < PAGE_HEIGHT
    # nothing wider than the window: no table or figure cut at the edge
    assert layout['width'] <= browser.WIDTH
    png = browser.screenshot(page, tmp_path / 'page.png', layout['height'])
    image = Image.open(png).convert('RGB')
    assert image.size == (browser.WIDTH, layout['height'])
    assert len(layout['images']) >= 8
    for x, y, w, h, natural in layout['images']:
        assert x + w <= browser.WIDTH and natural > 0
        figure = image.crop((int(x), int(y), int(x + w), int(y + h)))
        grey = figure.convert('L')
        extrema = grey.getextrema()
        dark = sum(n for v, n in enumerate(grey.histogram()) if v < 200)
        assert extrema[1] - extrema[0] > 100, f'blank figure at y={y}'
        assert dark > 0.01 * w * h, f'almost nothing drawn at y={y}'
    colours = {rgb for _, rgb in image.getcolors(maxcolors=1 << 24)}
    # no column here is judged against references made for its system
    # (h200x2 ran as --system local; replays reproduce, never pass)
    assert PASS_RGB not in colours, 'a cell is coloured pass'


def _pdflatex(tex, workdir):
    proc = subprocess.run(['pdflatex', '-interaction=nonstopmode',
                           '-halt-on-error', tex.name], cwd=workdir,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert tex.with_suffix('.pdf').stat().st_size > 10_000
    pages = re.search(r'Output written on \S+ \((\d+) pages?',
                      proc.stdout.replace('\n', ''))
    return int(pages[1])


def test_latex_compiles_with_figures_and_tables(tmp_path):
    """pdflatex compiles the committed document; every page, rendered by
    pdftoppm, has something on it; the PDF holds every figure of the page
    (pdfimages), the systems table, the benchmark tables and the
    bibliography (pdftotext)."""
    _need('pdflatex', 'texlive-latex-base')
    _need('pdftoppm', 'poppler-utils')
    from PIL import Image
    tex = tmp_path / 'comparison.tex'
    shutil.copy(mc.OUT / 'comparison.tex', tex)
    shutil.copytree(mc.OUT / 'plots', tmp_path / 'plots')
    _pdflatex(tex, tmp_path)
    # twice: the second run resolves every \\cite and \\ref
    pages, log = _pdflatex(tex, tmp_path), (tmp_path / 'comparison.log')
    assert not re.search(r'(Citation|Reference) .* undefined',
                         log.read_text(errors='replace'))
    source = tex.read_text()
    keys = set(re.findall(r'\\cite\{([^}]+)\}', source))
    bib = (mc.OUT / 'comparison.bib').read_text()
    assert keys and all(f'{{{k},' in bib for k in keys), keys
    floats = source.count(r'\begin{figure}')
    assert floats == len(list((mc.OUT / 'plots').glob('*.png')))
    assert source.count(r'\caption{') == source.count(r'\label{') >= \
        floats + 8
    assert 'Figure: ' not in source         # captions say what is shown
    pdf = tmp_path / 'comparison.pdf'
    pngs = list((mc.OUT / 'plots').glob('*.png'))
    listing = subprocess.run(['pdfimages', '-list', str(pdf)],
                             capture_output=True, text=True, check=True)
    images = [line.split() for line in listing.stdout.splitlines()[2:]]
    # page num type ...: one 'image' row per figure (its alpha: 'smask')
    assert sum(1 for i in images if i[2] == 'image') >= len(pngs) >= 8
    subprocess.run(['pdftoppm', '-r', '30', '-png', str(pdf),
                    str(tmp_path / 'page')], check=True)
    rendered = sorted(tmp_path.glob('page-*.png'))
    assert len(rendered) == pages
    coloured = 0
    for path in rendered:
        page = Image.open(path).convert('RGB')
        low, high = page.convert('L').getextrema()
        assert high - low > 100, f'{path.name} is blank'
        coloured += len(page.getcolors(maxcolors=1 << 20) or ()) > 200
    assert coloured >= 3, 'no page of figures'
    text = subprocess.run(['pdftotext', '-layout', str(pdf), '-'],
                          capture_output=True, text=True, check=True).stdout
    assert 'Systems: where, when and with what' in text
    assert 'Figures' in text and 'References' in text
    for doc in ('Pearson', 'Advanced Micro Devices',
                'National Renewable Energy Laboratory'):
        assert doc in text
    assert text.count('Table ') >= 8


def test_latex_of_unicode_names_compiles(tmp_path):
    """A system, test and unit outside ASCII: written as LaTeX, not
    passed through to break the compile."""
    _need('pdflatex', 'texlive-latex-base')
    report = json.loads(sorted(mc.H200.glob('*.json'))[0].read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            tc['system'] = 'Zürich–Ωmega ☃ 東京 & 100%'
            for vals in (tc.get('perfvalues') or {}).values():
                vals[4] = 'µs' if vals[4] == 'us' else vals[4]
    path = tmp_path / 'unicode.json'
    path.write_text(json.dumps(report))
    out = tmp_path / 'out'
    assert cli.main(['report', str(path), '--format', 'tex', '--out',
                     str(out)]) == 0
    tex = out / 'comparison.tex'
    assert tex.read_text().isascii()
    assert 'Z' in tex.read_text() and r'\&' in tex.read_text()
    assert _pdflatex(tex, out) >= 1


PLOTS = mc.ROOT / 'tests' / 'fixtures' / 'reports' / 'plots'


def _table(paths, **kw):
    from hpcval.publish import comparison, results
    loaded = results.load(paths)
    assert loaded.problems == []
    return loaded, comparison.build(loaded.samples, cases=loaded.cases, **kw)


def _cell(table, test, metric, column):
    [row] = [r for r in table.rows if r.test == test and r.metric == metric]
    return table.cells[(row, column)]


def test_a_failed_run_fails_the_cell_and_is_counted():
    """Three real local runs, two of which failed the 4 MiB bandwidth
    bound: the mean passes nothing, the cell says 1 of 3 runs passed."""
    from hpcval.publish import formats
    _, table = _table(sorted(PLOTS.glob('local-*.json')))
    cell = _cell(table, 'on_node, numpy arrays', 'bandwidth_4MiB',
                 'local@vm')
    assert (cell.n, cell.runs, cell.passed_runs) == (3, 3, 1)
    assert cell.verdict == 'fail'
    assert '1 of 3 runs passed' in formats.measured(cell)
    # a metric every run passed is not failed by another metric's failure
    assert _cell(table, 'on_node, numpy arrays', 'latency_8B',
                 'local@vm').verdict == 'pass'


def test_a_run_without_figures_still_counts(tmp_path):
    """A run that failed sanity has no figure: its column still shows the
    measurement's rows, failed, 'no figure (0 of 1 runs passed)'."""
    from hpcval.publish import formats
    report = json.loads(sorted(PLOTS.glob('local-*.json'))[0].read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            if tc['display_name'].startswith('BabelStreamCpuCheck'):
                tc.update(result='failure', perfvalues={},
                          system='siteb', fail_phase='sanity')
    path = tmp_path / 'sanity-failed.json'
    path.write_text(json.dumps(report))
    _, table = _table([path, sorted(PLOTS.glob('local-*.json'))[1]])
    cell = _cell(table, 'CPU, one node', 'copy', 'siteb')
    assert cell.values == [] and cell.verdict == 'fail'
    assert formats.measured(cell) == 'no figure (0 of 1 runs passed)'
    # its CSV line still says when and from which report, the value NaN
    [line] = [x for x in formats.csv_lines(table) if x['system'] == 'siteb'
              and x['metric'] == 'copy']
    assert (line['value'], line['source']) == ('NaN', 'sanity-failed.json')
    assert re.fullmatch(r'\d{4}-\d\d-\d\d', line['date'])


def test_repeats_share_one_row(tmp_path):
    """``--repeat 2`` names its runs %.repeat_no=0 and 1: one row, n=2."""
    report = json.loads(sorted(PLOTS.glob('local-*.json'))[1].read_text())
    tcs = [tc for run in report['runs'] for tc in run['testcases']
           if tc['display_name'].startswith('BabelStreamCpuCheck')]
    [tc] = tcs
    twin = json.loads(json.dumps(tc))
    for n, t in enumerate((tc, twin)):
        t['display_name'] += f' %.repeat_no={n}'
    report['runs'][0]['testcases'].append(twin)
    path = tmp_path / 'repeat.json'
    path.write_text(json.dumps(report))
    _, table = _table([path])
    rows = [r for r in table.rows if r.metric == 'copy']
    assert [r.test for r in rows] == ['CPU, one node']
    assert table.cells[(rows[0], 'local@vm')].n == 2


def test_per_node_columns():
    _, table = _table(sorted(PLOTS.glob('*.json')), per_node=True)
    assert table.columns == ['local@vm [vm]', 'minicluster [n1,n2]',
                             'minicluster [n1]']
    assert cli.main(['report', *map(str, sorted(PLOTS.glob('*.json'))),
                     '--per-node', '--format', 'csv']) == 0


def _outputs(folder):
    """{name: text} of every output of a report folder, the page without
    its embedded PNGs (base64 can spell anything)."""
    out = {}
    for path in sorted(folder.rglob('*')):
        if path.is_file() and path.suffix in ('.md', '.csv', '.tex', '.bib',
                                              '.html', '.svg'):
            out[str(path.relative_to(folder))] = _URI.sub(
                'data:', path.read_text())
    return out


def test_no_output_names_an_internal_file(rebuilt):
    """The documents are cited by author and title, never by the names of
    the project's copies of them."""
    outputs = _outputs(rebuilt)
    assert any(name.endswith('.svg') for name in outputs)
    for name, text in outputs.items():
        assert not re.search('seed', name, re.I), name
        found = re.search(r'.{0,60}seed.{0,60}', text, re.I)
        assert found is None, (name, found and found[0])


def test_a_replayed_cell_is_never_marked_pass(rebuilt):
    rows = list(csv.DictReader(io.StringIO(
        (rebuilt / 'comparison.csv').read_text())))
    replayed = [r for r in rows if r['system'].endswith('(replay)')]
    assert replayed and {r['kind'] for r in replayed} == {'replay'}
    assert not [r for r in replayed if r['judgement'] == 'pass']
    assert {r['judgement'] for r in replayed} >= {
        'reproduces the published figure'}
    md = (rebuilt / 'comparison.md').read_text()
    assert 'reproduces the published figure' in md


def test_no_cell_is_judged_against_another_systems_references(rebuilt):
    """The H200 node ran as ``--system local`` (local.yaml: a CI VM's
    floors) and is shown as h200x2: none of its cells is marked pass."""
    rows = list(csv.DictReader(io.StringIO(
        (rebuilt / 'comparison.csv').read_text())))
    h200 = [r for r in rows if r['system'] == 'h200x2']
    referenced = [r for r in h200 if r['reference'] != 'NaN']
    assert referenced, 'the H200 runs carried references: test is void'
    assert {r['judgement'] for r in referenced} == {'not judged'}


def test_a_label_other_than_the_system_is_not_judged(tmp_path):
    """The same real report: as its own system, judged; shown as another
    system, not judged (its bounds are local.yaml's)."""
    from hpcval.publish import comparison
    path = sorted(PLOTS.glob('local-*.json'))[0]
    _, own = _table([path])
    _, other = _table([('elsewhere', path)])
    own_verdicts = {c.verdict for c in own.cells.values()}
    assert own_verdicts & {comparison.PASS, comparison.FAIL}
    for (row, col), cell in other.cells.items():
        assert cell.verdict not in (comparison.PASS,), (row, col)
        if cell.reference is not None and not cell.failed_runs:
            assert cell.verdict == comparison.NOT_ITS_OWN
            assert cell.judged_by == 'local'


def test_every_source_is_cited_in_full(rebuilt):
    from hpcval.publish import formats, sources
    md = (rebuilt / 'comparison.md').read_text()
    page = (rebuilt / 'comparison.html').read_text()
    tex = (rebuilt / 'comparison.tex').read_text()
    bib = (rebuilt / 'comparison.bib').read_text()
    assert '## Sources' in md and 'id="sources"' in page
    for doc in sources.DOCUMENTS:
        assert doc.url in md and doc.url in page
        assert rf'\bibitem{{{doc.key}}}' in tex and doc.url in bib
        assert str(doc.year) in bib and doc.title.split(':')[0] in bib
        # the table or column that shows its figures names it
        assert formats.md_text(doc.short) in md, doc.short
    assert 'doi = {10.1145/3624062.3624203}' in bib


def test_whole_node_figures_say_their_gpus_and_per_gpu():
    """TransferBench's aggregate of a 2-GPU H200 node beside an 8-GPU
    MI300X node: each cell says its GPU count and the per-GPU figure."""
    md = (mc.OUT / 'comparison.md').read_text()
    [line] = [x for x in md.splitlines() if 'aggregate_gpu_bw' in x]
    cells = line.split(' | ')
    [h200] = [c for c in cells if '2 GPUs' in c]
    [mi300x] = [c for c in cells if '8 GPUs' in c]
    for cell, gpus in ((h200, 2), (mi300x, 8)):
        whole, per_gpu = re.findall(r'(\d+\.\d+)[^|]*?; (\d+\.\d+) per GPU',
                                    cell)[0]
        assert float(per_gpu) == pytest.approx(float(whole) / gpus, rel=2e-3)


def test_differences_are_flagged_only_beyond_both_spreads(tmp_path):
    """Three real local runs shown as 'a', the same with BabelStream's
    copy doubled as 'b' (n=3 each), one doubled run as 'c' (n=1): only
    copy differs between a and b; c is never flagged."""
    from hpcval.publish import formats
    runs = sorted(PLOTS.glob('local-*.json'))
    inputs = [('a', p) for p in runs]
    for i, path in enumerate(runs):
        for label in ('b', 'c')[:1 + (i == 0)]:
            report = json.loads(path.read_text())
            # another session: copies of one session are one session
            report['session_info']['uuid'] = f'{label}{i}'
            for run in report['runs']:
                for tc in run['testcases']:
                    for key, vals in (tc.get('perfvalues') or {}).items():
                        if key.endswith(':copy'):
                            vals[0] *= 2
            doubled = tmp_path / f'{label}{i}.json'
            doubled.write_text(json.dumps(report))
            inputs.append((label, doubled))
    _, table = _table(inputs)
    flagged = {}
    for row in table.rows:
        shown = formats.Shown(table, row)
        for col, cell in zip(table.columns, shown.cells):
            if cell is not None and 'differs from' in shown.measured(cell):
                flagged[(row.metric, col)] = shown.measured(cell)
    assert set(flagged) == {('copy', 'a'), ('copy', 'b')}, flagged
    assert flagged[('copy', 'a')].endswith('; differs from b')


#: the tidy CSV's schema: column -> a check of its text (a number that
#: is not there is NaN, never empty: polars types a column by its first
#: hundred lines)
_NUMBER = re.compile(r'-?\d+(\.\d+)?([eE][-+]?\d+)?|NaN|inf')
SCHEMA = {
    'table': str.strip, 'system': str.strip,
    'kind': {'measured', 'replay', 'quoted'}.__contains__,
    'date': re.compile(r'\d{4}-\d\d-\d\d').fullmatch,
    'benchmark': str.strip, 'version': str.strip, 'test': str.strip,
    'scope': {'', 'per GPU', 'per GPU pair', 'per node'}.__contains__,
    'gpu_model': str.strip,
    'gpus': re.compile(r'\d+|NaN').fullmatch,
    'nodes': re.compile(r'\d+|NaN').fullmatch, 'metric': str.strip,
    'unit': str.strip, 'better': {'higher', 'lower', 'unknown'}.__contains__,
    'statistic': {'mean', 'min', 'max', 'published'}.__contains__,
    'value': _NUMBER.fullmatch, 'n': re.compile(r'\d+').fullmatch,
    'spread': _NUMBER.fullmatch, 'reference': _NUMBER.fullmatch,
    'lower_bound': _NUMBER.fullmatch, 'upper_bound': _NUMBER.fullmatch,
    'judgement': str.strip, 'references_of': lambda v: True,
    'note': lambda v: True, 'runs': re.compile(r'\d+').fullmatch,
    'passed_runs': re.compile(r'\d+').fullmatch, 'checks': lambda v: True,
    'source': str.strip, 'citation': lambda v: True}


def _tidy_rows():
    with open(mc.OUT / 'comparison.csv', newline='') as fp:
        reader = csv.DictReader(fp)
        assert tuple(reader.fieldnames) == tuple(SCHEMA)
        return list(reader)


def test_the_csv_is_one_tidy_table():
    """One header, one line per table x system x test x metric x
    statistic, every value of its column's type; measured, replayed and
    quoted figures marked apart, each quoted or replayed one cited."""
    rows = _tidy_rows()
    for i, row in enumerate(rows, 2):
        for key, ok in SCHEMA.items():
            assert ok(row[key]), f'line {i}, {key}: {row[key]!r}'
    keys = [(r['table'], r['system'], r['test'], r['metric'],
             r['statistic']) for r in rows]
    assert len(keys) == len(set(keys))
    assert {r['kind'] for r in rows} == {'measured', 'replay', 'quoted'}
    for r in rows:
        assert bool(r['citation']) == (r['kind'] != 'measured'), r
    bib = (mc.OUT / 'comparison.bib').read_text()
    assert all(f'{{{r["citation"]},' in bib for r in rows if r['citation'])
    nccl = [r for r in rows if r['benchmark'] == 'nccl_tests'
            and r['kind'] != 'quoted']
    assert nccl and all(r['version'] and r['gpus'] and r['nodes']
                        for r in nccl)
    h200 = {(r['gpus'], r['nodes']) for r in nccl if r['system'] == 'h200x2'}
    mi300x = {(r['gpus'], r['nodes']) for r in nccl
              if r['system'] == 'mi300x (replay)'}
    assert h200 == {('2', '1')} and mi300x == {('8', '1')}


NUMERIC = ('gpus', 'nodes', 'value', 'n', 'spread', 'reference',
           'lower_bound', 'upper_bound', 'runs', 'passed_runs')


@pytest.mark.parametrize('library', ['pandas', 'polars'])
def test_the_csv_loads_as_one_dataframe(library):
    """Read with no options, every numeric column is typed numeric, the
    dates parse, and each metric has one unit."""
    frames = pytest.importorskip(library)
    frame = frames.read_csv(mc.OUT / 'comparison.csv')
    assert tuple(frame.columns) == tuple(SCHEMA)
    assert len(frame) == len(_tidy_rows())
    if library == 'polars':
        numeric = {k for k, t in frame.schema.items() if t.is_numeric()}
        dates = frame['date'].str.to_date()
        units = frame.group_by('metric').agg(frames.col('unit').n_unique())
        assert units['unit'].max() == 1
    else:
        numeric = {k for k in frame.columns
                   if frames.api.types.is_numeric_dtype(frame[k])}
        dates = frames.to_datetime(frame['date'], format='%Y-%m-%d')
        assert frame.groupby('metric')['unit'].nunique().max() == 1
    assert numeric == set(NUMERIC)
    assert len(dates) == len(frame)


def test_the_csv_says_what_each_line_ran_on():
    """Every line names its version, its source and its GPU model; the
    measured ones their reports and the model their nodes recorded."""
    rows = _tidy_rows()
    models = {(r['system'], r['gpu_model']) for r in rows
              if r['kind'] == 'measured'}
    assert ('h200x2', 'NVIDIA H200') in models
    assert ('h100', 'NVIDIA H100 80GB HBM3') in models
    for r in rows:
        assert r['version'] and r['source'] and r['gpu_model'], r
        if r['kind'] == 'measured':
            assert r['source'].endswith('.json') or 'more reports' in \
                r['source'], r


def _table_lines(md):
    """The '|' lines of the runs' benchmark tables (before the published
    ones)."""
    runs = ('\n' + md).split('\n## ')[1]
    return [line for line in runs.splitlines() if line.startswith('|')]


def test_the_markdown_tables_rebuild_from_the_csv():
    from hpcval.publish import formats
    tables = formats.tables_from_csv(_tidy_rows())
    assert tables[0].title == mc.TITLE
    rebuilt = formats.to_markdown(tables[0])
    committed = (mc.OUT / 'comparison.md').read_text()
    assert _table_lines(rebuilt) == _table_lines(committed)
    assert len(_table_lines(committed)) > 100


def test_no_figure_draws_a_bound_its_column_was_not_judged_by(tmp_path):
    """The plot data: every reference line a figure draws is that
    column's own (a pass/fail or a replay's published figure); the h100
    and h200x2 runs, judged by local.yaml, draw none."""
    from hpcval.publish import comparison, plots
    table, samples = mc.runs_table(tmp_path)
    # the figures that draw references: BabelStream's bars and the small
    # multiples (curves and heat maps draw none)
    drawn = plots.Plotted()
    drawn.add(plots.babelstream_kernels(samples, tmp_path, table=table))
    for bench in ('nccl_tests', 'transferbench'):
        drawn.add(plots.benchmark_multiples(table, bench, tmp_path))
    assert drawn.references, 'no reference drawn: the test is void'
    cells = {}
    for (row, col), cell in table.cells.items():
        cells.setdefault((col, row.metric), []).append(cell)
    for figure, col, metric, _ in drawn.references:
        assert not col.startswith(('h100', 'h200x2')), (figure, col)
        assert any(comparison.drawn_reference(c) is not None
                   for c in cells[(col, metric.split(' ')[0])]), \
            (figure, col, metric)
    not_judged = [c for c in table.cells.values()
                  if c.verdict == comparison.NOT_ITS_OWN]
    assert not_judged and all(comparison.drawn_reference(c) is None
                              for c in not_judged)


_ABSOLUTE = re.compile(r'(?<![\w.:/])/(?:home|root|tmp|work|usr|opt|var|'
                       r'scratch|mnt|srv)/')


def test_no_absolute_path_and_no_replay_dated_by_its_regeneration():
    for path in sorted(mc.OUT.rglob('*')):
        if path.suffix in ('.md', '.csv', '.html', '.tex', '.bib', '.json'):
            found = _ABSOLUTE.search(_URI.sub('', path.read_text()))
            assert found is None, (path.name, found)
    from hpcval.publish import sources
    for system, name in mc.REPLAYED:
        report = json.loads((mc.REPORTS / name).read_text())
        year = sources.REPLAYED_FROM[system].year
        times = [report['session_info']['time_start_unix']] + [
            tc['job_completion_time_unix'] for run in report['runs']
            for tc in run['testcases'] if tc['job_completion_time_unix']]
        assert {time.gmtime(t).tm_year for t in times} == {year}
    page = (mc.OUT / 'comparison.html').read_text()
    assert '<td>2024, Advanced Micro Devices (2024)</td>' in page
    assert '<td>2025, National Renewable Energy Laboratory (2025)</td>' \
        in page
