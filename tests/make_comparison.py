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
import pathlib
import shutil
import sys
import tempfile

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
    out = {}
    for system, name in REPLAYED:
        recordings, checks, settings = replays.SYSTEMS[system]
        folder = pathlib.Path(workdir) / system
        proc, report = replays.replay(system, recordings(), checks, settings,
                                      folder)
        if report is None:
            raise SystemExit(f'replay of {system} wrote no report:\n'
                             f'{proc.stdout[-3000:]}')
        out[name] = folder / 'report.json'
    return out


def main():
    from hpcval import cli
    with tempfile.TemporaryDirectory() as tmp:
        REPORTS.mkdir(parents=True, exist_ok=True)
        for name, path in replay_reports(tmp).items():
            shutil.copyfile(path, REPORTS / name)
    shutil.rmtree(OUT / 'plots', ignore_errors=True)
    code = cli.main(['report', *report_args(OUT)])
    # the page embeds the PNGs and the Markdown links them: no SVG kept
    for svg in (OUT / 'plots').glob('*.svg'):
        svg.unlink()
    return code


if __name__ == '__main__':
    sys.exit(main())
