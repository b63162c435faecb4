"""The documents whose figures the comparison publishes or replays."""
import datetime
from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    key: str               # BibTeX key
    kind: str              # BibTeX entry type
    authors: tuple
    title: str
    venue: str             # conference, series or publisher
    publisher: str
    year: int
    url: str
    doi: str = ''
    note: str = ''

    @property
    def short(self):
        """'Pearson et al. (2023)', 'AMD (2024)'."""
        first = self.authors[0].split(',')[0]
        more = ' et al.' if len(self.authors) > 1 else ''
        return f'{first}{more} ({self.year})'

    def text(self):
        """One line: authors, title, venue, publisher, year, DOI/URL."""
        parts = [', '.join(map(_natural, self.authors)), f'"{self.title}"',
                 self.venue, self.publisher, str(self.year),
                 self.doi and f'doi:{self.doi}', self.url, self.note]
        return '. '.join(p for p in parts if p) + '.'


def _natural(author):
    """'Pearson, Carl' -> 'Carl Pearson'; an organisation as it is."""
    last, _, first = author.partition(', ')
    return f'{first} {last}' if first else author


SANDIA_POSTER = Document(
    key='pearson2023microbenchmarks', kind='misc',
    authors=('Pearson, Carl', 'Siefert, Christopher M.',
             'Olivier, Stephen L.', 'Prokopenko, Andrey',
             'Fuller, Timothy J.', 'Hu, Jonathan'),
    title='Latency and Bandwidth Microbenchmarks of Six US Department of '
          'Energy Systems in the TOP500',
    venue='Poster, IEEE Cluster 2023 (Poster Lightning Talks)',
    publisher='Sandia National Laboratories', year=2023,
    url='https://carlpearson.net/publication/20231113_siefert_pmbs',
    doi='10.1145/3624062.3624203',
    note='The DOI is that of the companion paper (Siefert et al., SC-W '
         '2023 PMBS workshop, ACM), which gives the same measurements')

MI300X_GUIDE = Document(
    key='amd2024mi300xvalidation', kind='manual',
    authors=('Advanced Micro Devices',),
    title='AMD Instinct MI300X System Validation Guide: Performance '
          'benchmarking',
    venue='AMD Instinct documentation', publisher='Advanced Micro Devices',
    year=2024,
    url='https://instinct.docs.amd.com/projects/system-acceptance/en/'
        'latest/')

KESTREL_BENCHMARK = Document(
    key='nrel2025esifhpc4', kind='manual',
    authors=('National Renewable Energy Laboratory',),
    title='ESIF-HPC-4 Benchmark Suite: AI-ML GPU-GPU Collective Test',
    venue='NREL ESIF-HPC-4 procurement benchmarks (draft release)',
    publisher='National Renewable Energy Laboratory', year=2025,
    url='https://github.com/NREL/ESIFHPC4')

DOCUMENTS = (SANDIA_POSTER, MI300X_GUIDE, KESTREL_BENCHMARK)

#: the document each replayed system's recordings come from
REPLAYED_FROM = {'mi300x': MI300X_GUIDE, 'kestrel': KESTREL_BENCHMARK}


def utc_date(ts):
    """The UTC date of unix time ``ts``; 'undated' for none or nonsense."""
    try:
        return datetime.datetime.fromtimestamp(
            ts, datetime.timezone.utc).strftime('%Y-%m-%d')
    except (TypeError, ValueError, OverflowError, OSError):
        return 'undated'


def date_of(case):
    """A run's date: a replay carries its document's, not the replay day."""
    if case.replay:
        doc = REPLAYED_FROM.get(case.system)
        return f'{doc.year}, {doc.short}' if doc else 'undated (a replay)'
    return utc_date(case.time)


def cited(tables):
    """The documents ``tables`` cite, in DOCUMENTS order."""
    used = {d.key for t in tables for d in getattr(t, 'sources', ())}
    return [d for d in DOCUMENTS if d.key in used]


_BIB_ESCAPE = {'&': r'\&', '%': r'\%', '#': r'\#', '_': r'\_', '{': r'\{',
               '}': r'\}', '$': r'\$'}


def _bib(text):
    return ''.join(_BIB_ESCAPE.get(ch, ch) for ch in text)


def bibtex(documents):
    """A BibTeX file of ``documents``."""
    out = []
    for d in documents:
        fields = [('author', ' and '.join(
                      _bib(a) if ',' in a else '{' + _bib(a) + '}'
                      for a in d.authors)),
                  ('title', '{' + _bib(d.title) + '}'),
                  ('howpublished' if d.kind == 'misc' else 'organization',
                   _bib(d.venue)),
                  ('publisher', _bib(d.publisher)), ('year', str(d.year)),
                  ('url', d.url), ('doi', d.doi), ('note', _bib(d.note))]
        body = ',\n'.join(f'  {k} = {{{v}}}' for k, v in fields if v)
        out.append(f'@{d.kind}{{{d.key},\n{body}\n}}')
    return '\n\n'.join(out) + '\n'
