"""The published-reference view reproduces the seed tables cell by cell.

The numbers are parsed here from the seed texts themselves (Sandia poster:
tab-separated rows; MI300X guide: RST grid tables) and every number the
references-only tables show must equal the seed's exactly, value and
spread.  Every numeric seed cell is either shown or named in UNREFERENCED.
"""
import re

import pytest
import yaml

from hpcval import references

from hpcval.publish import comparison, published
from hpcval.references import ReferenceFileError
from rfmrun import ROOT

DOCUMENTS = ROOT / 'tests' / 'fixtures' / 'documents'
SANDIA_SEED = [DOCUMENTS / 'sandia-cluster2023-poster.txt']
MI300X_SEED = [DOCUMENTS / 'amd-mi300x-validation-guide.txt']

# The poster's header lines are mangled by the PDF extraction (split words,
# Greek and Cyrillic look-alike letters), so its column labels are written
# here as the poster prints them, in its column order.
SANDIA_COLUMNS = {
    2: ['CPU', 'GPU'],
    3: ['On-Socket, Socket', 'On-Socket, Node', 'GPU → GPU, Socket',
        'GPU → GPU, Node'],
    4: ['Host/GPU, A', 'Host/GPU, B', 'GPU/GPU, A', 'GPU/GPU, B',
        'GPU/GPU, C,D'],
    5: ['Kernel', 'Sync', 'Host/GPU', 'GPU → GPU, A', 'GPU → GPU, B',
        'GPU → GPU, C', 'GPU → GPU, D'],
}
SANDIA_ROWS = ['Frontier', 'Summit', 'Perlmutter', 'Trinity', 'Sawtooth',
               'Eagle']
_CPU = ('Trinity', 'Sawtooth', 'Eagle')

# Seed cells with a number and no hpcval reference (published.TABLES says
# why; docs/references.md lists them).
UNREFERENCED = {
    *((2, s, 'CPU') for s in _CPU),
    *((3, s, c) for s in _CPU for c in ('On-Socket, Socket',
                                        'On-Socket, Node')),
    (3, 'Summit', 'GPU → GPU, Node'),
    (4, 'Frontier', 'GPU/GPU, A'), (4, 'Summit', 'GPU/GPU, A'),
    (4, 'Frontier', 'GPU/GPU, B'),
    (5, 'Frontier', 'GPU → GPU, A'), (5, 'Summit', 'GPU → GPU, A'),
    (5, 'Frontier', 'GPU → GPU, B'), (5, 'Frontier', 'GPU → GPU, D'),
}

_FIGURE = re.compile(r'^([\d,]+(?:\.\d+)?)\s*±\s*(\d+(?:\.\d+)?)'
                     r'(?:\^\{?\d\}?)?$')


def _number(text):
    return float(text.replace(',', ''))


def _sandia_figure(text):
    text = text.strip()
    if text in ('', 'N/A'):
        return None

    match = _FIGURE.match(text)
    assert match, f'unreadable Sandia Cluster 2023 poster cell {text!r}'
    return _number(match.group(1)), _number(match.group(2))


def sandia_cells():
    """{(table, system, column label): (value, spread)} of Sandia Cluster 2023 poster."""
    lines = open(SANDIA_SEED[0], encoding='utf-8').read().splitlines()
    cells = {}
    for number, columns in SANDIA_COLUMNS.items():
        end = next(i for i, line in enumerate(lines)
                   if line.startswith(f'Table {number}:'))
        rows, i = [], end - 1
        while not lines[i].strip():
            i -= 1
        while '±' in lines[i]:
            rows.insert(0, lines[i].split('\t'))
            i -= 1
        for name, fields in zip(SANDIA_ROWS, rows):
            # Table 4 prints Summit's row without its name
            assert fields[0] in (name, ''), (number, fields)
            for label, text in zip(columns, fields[1:]):
                figure = _sandia_figure(text)
                if figure:
                    cells[(number, name, label)] = figure
    # Table 3, footnote 1: Sawtooth's two On-Socket measurements are the
    # same, printed once across both columns
    cells[(3, 'Sawtooth', 'On-Socket, Node')] = \
        cells[(3, 'Sawtooth', 'On-Socket, Socket')]
    return cells


def _grid_rows(lines, start):
    """Rows (lists of cell texts) of the RST grid table after ``start``."""
    i = next(j for j in range(start, len(lines))
             if lines[j].strip().startswith('+'))
    rows, current, body = [], None, False
    for line in lines[i:]:
        line = line.strip()
        if not line.startswith(('+', '|')):
            break
        if line.startswith('+'):
            if current and body:
                rows.append([' '.join(c.split()) for c in current])
            body = body or '=' in line
            current = None
            continue
        parts = line.strip('|').split('|')
        current = current or [''] * len(parts)
        current = [a + ' ' + b.strip() for a, b in zip(current, parts)]
    return rows


def mi300x_cells():
    """{(table, 'MI300X', row label): (value, None)} of AMD MI300X validation guide."""
    lines = open(MI300X_SEED[0], encoding='utf-8').read().splitlines()
    cells = {}
    for i, line in enumerate(lines):
        match = re.match(r'\.\. table:: \*\*Table (\d+):?\*\*', line)
        if not match:
            continue
        for label, value in _grid_rows(lines, i + 1):
            label = label.replace('\\*', '*')
            if value != 'N/A':
                cells[(int(match.group(1)), 'MI300X', label)] = \
                    (_number(value), None)
    return cells


@pytest.fixture(scope='module')
def by_system():
    return references.load_dir(str(ROOT / 'references'))


@pytest.fixture(scope='module')
def shown(by_system):
    """{(source, table, seed system, row label): Cell} of the view."""
    reverse = {hp: name for name, (hp, _) in published.SYSTEMS.items()}
    out = {}
    for seed, table in zip(published.TABLES, published.tables(by_system)):
        for (row, column), cell in table.cells.items():
            out[(seed.source, seed.number, reverse[column], row.test)] = cell
    return out


def _seed(source):
    cells = sandia_cells() if source == published.SANDIA else mi300x_cells()
    return {(source, *key): figure for key, figure in cells.items()}


@pytest.mark.parametrize('source', [published.SANDIA, published.MI300X])
def test_every_shown_number_is_the_seed_number(shown, source):
    seed = _seed(source)
    mine = {k: c for k, c in shown.items() if k[0] == source}
    assert mine
    for key, cell in mine.items():
        assert key in seed, f'{key}: shown, but the seed has no such cell'
        value, spread = seed[key]
        assert cell.values == [value], key
        assert cell.spread == spread, key
        assert cell.verdict == comparison.PUBLISHED
        assert cell.reference.reference == value


@pytest.mark.parametrize('source', [published.SANDIA, published.MI300X])
def test_every_seed_number_is_shown_or_named_unreferenced(shown, source):
    seed = set(_seed(source))
    listed = {(s.source, s.number, name, row.label)
              for s in published.TABLES if s.source == source
              for row in s.rows for name, spec in row.cells.items()
              if not isinstance(spec, published.At)}
    expected = {(published.SANDIA, *key) for key in UNREFERENCED} \
        if source == published.SANDIA else set()
    assert listed == expected
    shown_here = {k for k in shown if k[0] == source}
    assert not shown_here & listed
    assert seed == shown_here | listed, (
        f'missing: {seed - shown_here - listed}, '
        f'not in the seed: {(shown_here | listed) - seed}')


def test_tables_are_titled_and_ordered_as_the_seeds(by_system):
    texts = {published.SANDIA: open(SANDIA_SEED[0]).read(),
             published.MI300X: open(MI300X_SEED[0]).read()}

    def squash(text):       # PDF line breaks and hyphenation
        return re.sub(r'[\s*\-]', '', text)

    tables = published.tables(by_system)
    assert [t.title.split(':')[0] for t in tables] == [
        *(f'{published.SANDIA}, Table {n}' for n in (2, 3, 4, 5)),
        *(f'{published.MI300X}, Table {n}' for n in range(1, 7))]
    for seed, table in zip(published.TABLES, tables):
        assert squash(seed.caption) in squash(texts[seed.source])
        order = SANDIA_COLUMNS.get(seed.number) \
            if seed.source == published.SANDIA else None
        labels = [row.test for row in table.rows]
        if order:
            assert labels == [c for c in order if c in labels]
        assert set(table.columns) <= {hp for hp, _ in
                                      published.SYSTEMS.values()}


def test_every_seed_reference_is_in_the_view(by_system):
    """Every figure taken from Sandia Cluster 2023 poster or 000 appears in a table, and
    every Sandia figure carries its spread."""
    used = set()
    for seed in published.TABLES:
        for row in seed.rows:
            for name, spec in row.cells.items():
                if isinstance(spec, published.At):
                    system, part = published.SYSTEMS[name]
                    ref = published.find(by_system, system,
                                         spec.partition or part, spec)
                    assert ref is not None, (seed.title, name, row.label)
                    used.add(id(ref))
    for system, refs in by_system.items():
        for ref in refs:
            if ref.rule == 'sandia-spread':
                assert ref.spread is not None, (system, ref.check, ref.metric)
            if ref.rule in ('sandia-spread', 'guide-minimum'):
                assert id(ref) in used, (system, ref.check, ref.where,
                                         ref.metric)


def test_missing_reference_is_a_note_not_a_crash(by_system):
    trimmed = dict(by_system, summit=[])
    tables = published.tables(trimmed)
    assert 'summit' not in tables[0].columns
    assert any('references/summit.yaml has no figure for '
               'BabelStreamCpuCheck copy' in n for n in tables[0].notes)


def test_docs_list_the_unreferenced_cells():
    text = (ROOT / 'docs' / 'references.md').read_text()
    assert published.unreferenced_markdown() in text, \
        'paste published.unreferenced_markdown() into docs/references.md'


def _local_with(tmp_path, **metric):
    data = yaml.safe_load((ROOT / 'references' / 'local.yaml').read_text())
    data['entries'][0]['metrics']['latency_8B'].update(metric)
    path = tmp_path / 'local.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def test_spread_is_loaded_and_validated(tmp_path):
    [ref] = [r for r in references.load(_local_with(tmp_path, spread=0.25))
             if r.metric == 'latency_8B']
    assert ref.spread == 0.25
    for bad, message in ((-0.1, 'must be >= 0'),
                         (float('nan'), 'must be a finite number'),
                         ('wide', 'must be a finite number')):
        with pytest.raises(ReferenceFileError,
                           match=rf'latency_8B\.spread: {message}'):
            references.load(_local_with(tmp_path, spread=bad))
    with pytest.raises(ReferenceFileError, match='a spread needs a value'):
        references.load(_local_with(tmp_path, spread=0.1, value=None))
