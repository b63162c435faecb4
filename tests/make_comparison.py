"""Regenerates docs/comparison/: the cross-vendor comparison made from the
seeds' published figures (references/), the seeds' example outputs
replayed through the checks (MI300X, Kestrel) and the project's own real
runs on 2x H200 (tests/fixtures/reports/h200x2) and seven quick runs on
one H100 (tests/fixtures/reports/h100_quick).

    .venv/bin/python tests/make_comparison.py

Replays the recordings (about 10 s), stores their run reports under
docs/comparison/reports/, then runs ``hpcval report`` with ARGS.
tests/test_publication.py checks that the committed files are what this
makes.
"""
import datetime
import json
import pathlib
import shutil
import sys
import tempfile
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from rfmrun import ROOT  # noqa: E402

OUT = ROOT / 'docs' / 'comparison'
REPORTS = OUT / 'reports'
H200 = ROOT / 'tests' / 'fixtures' / 'reports' / 'h200x2'
# seven prebuilt quick runs on one H100 (its README): a column of n = 7
H100 = ROOT / 'tests' / 'fixtures' / 'reports' / 'h100_quick'
H100_RUNS = (*(f'prebuilt{i}.json' for i in range(1, 7)),
             'calibrated_prebuilt.json')
#: the replayed systems: (system, report file under REPORTS)
REPLAYED = (('mi300x', 'mi300x-replay.json'),
            ('kestrel', 'kestrel-replay.json'))
TITLE = 'GPU systems compared: measured, replayed and published figures'
#: what tests/test_publication.py asks of the page at 1,400 px wide
PAGE_BYTES = 2 * 2**20
PAGE_HEIGHT = 30_000
#: what each measured column is (the page's facts say the rest)
MEASURED = {
    'h200x2': ('the checks run for real on a lent 2x NVIDIA H200 node, '
               '`reframe -r --system local`',
               'tests/fixtures/reports/h200x2/*.json'),
    'h100': ('seven quick-suite runs on a lent one-GPU NVIDIA H100 node, '
             '`reframe --mode quick --system local`',
             'tests/fixtures/reports/h100_quick/*.json'),
}


def report_args(out, reports=REPORTS):
    """``hpcval report`` arguments that make the page under ``out`` (the
    page names its inputs by file name only)."""
    return [*(f'h200x2={p}' for p in sorted(H200.glob('*.json'))),
            *(f'h100={H100 / name}' for name in H100_RUNS),
            *(str(reports / name) for _, name in REPLAYED),
            '--with-published', '--plots', '--format', 'md,csv,html,tex',
            '--title', TITLE, '--out', str(out), '--force']


def replay_reports(workdir):
    """{file name: fresh replay report path} of REPLAYED."""
    import replays
    made = replays.make_replay_reports(workdir, [s for s, _ in REPLAYED])
    return {name: pathlib.Path(made[system]) for system, name in REPLAYED}


#: a replay's report is dated by its document, not by the day it was made
_TIMES = ('time_start_unix', 'time_end_unix', 'job_completion_time_unix',
          'job_submit_time')
_DURATIONS = ('time_elapsed', 'time_compile', 'time_performance',
              'time_run', 'time_sanity', 'time_setup', 'time_total')


def committed(report, system, workdir):
    """``report`` (a replay's, as ReFrame wrote it) as it is committed:
    dated by the replayed document (its year's first of January), its
    session named from the document, durations zero, and no path or host
    name of the machine that made it (the checkout is ``.``, the scratch
    folder and the node ``replay``): the same bytes on every machine and
    every rerun."""
    from hpcval.publish import sources
    doc = sources.REPLAYED_FROM[system]
    when = datetime.datetime(doc.year, 1, 1, tzinfo=datetime.timezone.utc)
    stamp = when.timestamp()
    old = report['session_info']['uuid']
    # the local scheduler's node list is the host that replayed it
    host = report['session_info'].get('hostname')
    new = str(uuid.uuid5(uuid.NAMESPACE_URL, f'{doc.url}#{system}'))
    places = sorted({str(ROOT): '.', str(workdir): 'replay',
                     str(pathlib.Path(workdir).resolve()): 'replay'}.items(),
                    key=lambda p: -len(p[0]))

    def clean(value, key=''):
        if isinstance(value, dict):
            return {k: clean(v, k) for k, v in value.items()}
        if key == 'tags' and isinstance(value, list):
            return sorted(value)        # a set, in no stable order
        if key == 'job_nodelist' and isinstance(value, list):
            return ['replay' if n == host else n for n in value]
        if isinstance(value, list):
            return [clean(v) for v in value]
        if key == 'jobid' and value is not None:
            return 'replay'             # a process id of this machine
        if key in _TIMES and isinstance(value, (int, float)):
            return stamp
        if key in _DURATIONS and isinstance(value, (int, float)):
            return 0.0
        if not isinstance(value, str):
            return value
        if key in ('time_start', 'time_end'):
            return when.strftime('%Y%m%dT%H%M%S+0000')
        if key == 'job_completion_time':
            return when.isoformat()
        value = value.replace(old, new)
        for path, short in places:
            value = value.replace(path, short)
        # ReFrame's log file and any other scratch file of this machine
        return re_tmp.sub('replay', value)

    import re
    re_tmp = re.compile(r'/tmp/[\w.-]+')
    out = clean(report)
    out['session_info'].update(hostname='replay', user='replay')
    return out


def runs_table(out=OUT):
    """(the runs' comparison Table, its samples) as ``hpcval report``
    makes them of report_args(out): the same inputs, references and
    selection."""
    import argparse
    from hpcval.publish import comparison, report
    from hpcval.references import ReferenceSet
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    args = parser.parse_args(report_args(out))
    loaded, samples = report.load_selected(
        args, True, ReferenceSet.given(args.references))
    table = comparison.build(samples, TITLE, loaded.cases,
                             fixtures=loaded.fixtures)
    return table, samples


def readme(out=OUT):
    """docs/comparison/README.md, from the facts of the page it describes:
    its columns, their kind, runs, dates and provenance, the n of their
    cells, the figures, and the command that made it."""
    from hpcval.publish import formats, page
    table, _ = runs_table(out)
    counts = page.summary(table)
    lines = [
        '# GPU systems compared: an example publication', '',
        '[comparison.md](comparison.md) (and the same as one '
        'self-contained page, [comparison.html](comparison.html); as one '
        'tidy table, [comparison.csv](comparison.csv); as a LaTeX document '
        'with its figures as floats, [comparison.tex](comparison.tex), and '
        'its bibliography, [comparison.bib](comparison.bib)) is what '
        '`hpcval report` makes of these inputs (this file is generated '
        'from the same inputs by the command below):', '',
        '| column | kind | what it is | runs | dates | n per cell | input |',
        '|---|---|---|---|---|---|---|']
    for col, info in formats.systems(table):
        ns = sorted({c.n for (r, c2), c in table.cells.items()
                     if c2 == col and c.values})
        n = f'{ns[0]}' if len(ns) == 1 else f'{ns[0]} to {ns[-1]}'
        system = col.removesuffix(' (replay)')
        if col in table.cited_by:
            doc = table.cited_by[col]
            what = (f'the example outputs of {doc.title} ({doc.short}) '
                    f'replayed through the checks: whether the checks '
                    f'reproduce the document\'s figures, not a measurement')
            where = f'`reports/{dict(REPLAYED)[system]}`'
        else:
            what, where = MEASURED.get(col, ('measured', ''))
            where = f'`{where}`' if where else ''
        lines.append(f'| `{col}` | {info["kind"]} | {what} | {info["runs"]} '
                     f'| {info["dates"]} | {n} | {where} |')
    judged = {k: sum(c[k] for c in counts.values()) for k in page.SUMMARY_KEYS}
    lines += [
        '', 'Figures in the tables, by verdict: ' + ', '.join(
            f'{k} {v}' for k, v in judged.items()) + '.  A column run as '
        '`--system local` and shown under another label was judged by '
        'local.yaml (a CI VM\'s floors): its cells are "not judged", never '
        'pass, and no figure draws those bounds.  Replayed cells '
        '"reproduce" or "differ from" the published figure and carry the '
        'document\'s date, not the day they were replayed.  A cell of n=1 '
        'has no spread and is never flagged as a difference between '
        'systems.', '',
        'After the runs\' table come the published figures as `references/` '
        'holds them (`--with-published`), each table citing its document.  '
        'Rows are what is measured, so NVIDIA and AMD checks share rows; '
        'each benchmark names its check classes and the benchmark version '
        'per column, and a collective\'s cell its GPUs x nodes.', '',
        'Regenerate everything here (replays included) with one command; '
        'a rerun gives the same bytes on any machine with the same ReFrame '
        'and checks:', '', '```sh',
        '.venv/bin/python tests/make_comparison.py', '```', '',
        '`tests/test_publication.py` replays the recordings again and '
        'checks that the committed replays and every text file here are, '
        'byte for byte, what they make now (the figures by name: their '
        'pixels depend on matplotlib\'s version), that the CSV loads as one table (csv module with its '
        'schema; pandas and polars, where installed, type every number '
        'column without options) and rebuilds the '
        'Markdown tables, that no figure draws a bound its column was not '
        'judged by, that no file here holds an absolute path or a replay '
        'dated by its regeneration, that `pdflatex` compiles the LaTeX with '
        'every `\\cite` resolved, and that the page renders in headless '
        f'Chromium under {PAGE_BYTES // 2**20} MB and {PAGE_HEIGHT:,} px '
        'tall at 1,400 px wide.', '',
        f'Figures ({len(list((out / "plots").glob("*.png")))}): every '
        'curve, heat map and per-GPU bar chart comes from the plot data the '
        'reports carry; the replays\' and the lent nodes\' output folders '
        'are gone.']
    return '\n'.join(lines) + '\n'


def main():
    from hpcval import cli
    with tempfile.TemporaryDirectory() as tmp:
        REPORTS.mkdir(parents=True, exist_ok=True)
        systems = dict((name, system) for system, name in REPLAYED)
        for name, path in replay_reports(tmp).items():
            report = committed(json.loads(path.read_text()), systems[name],
                               pathlib.Path(tmp) / systems[name])
            (REPORTS / name).write_text(json.dumps(report, indent=2) + '\n')
    shutil.rmtree(OUT / 'plots', ignore_errors=True)
    code = cli.main(['report', *report_args(OUT)])
    # the page embeds the PNGs and the Markdown links them: no SVG kept
    for svg in (OUT / 'plots').glob('*.svg'):
        svg.unlink()
    (OUT / 'README.md').write_text(readme())
    return code


if __name__ == '__main__':
    sys.exit(main())
