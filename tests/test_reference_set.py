"""One ReferenceSet for every reader (issues 33, 35, 36): `hpcval verdict`
and `hpcval report` judge a figure by the same band, an inventory given
with --references is judged, each inventory mistake stops the verdict
(exit 3) and ReFrame at load naming file and key, a site overlay of one
bound keeps the built-in inventory, and --references is read only from a
trusted file.  On the H100 node's real report and references
(tests/fixtures/captured/h100_health)."""
import html
import os
from pathlib import Path

import pytest

from hpcval import cli, references, verdict
from rfmrun import reframe

ROOT = Path(__file__).parents[1]
FIX = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
REPORT = FIX / 'reports' / 'healthy.json'
REFS = FIX / 'reports' / 'local.yaml'
COPY = 'value: 2735860.0'       # BabelStreamCudaCheck copy, calibrated


def _file(tmp_path, old='', new=''):
    text = REFS.read_text()
    assert old in text
    path = tmp_path / 'local.yaml'
    path.write_text(text.replace(old, new, 1))
    return path


def _cli(capsys, *args):
    status = cli.main([*map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_verdict_and_report_judge_by_the_same_band(tmp_path, capsys):
    """The copy reference tightened by 30%: the run passed it by its own
    bound, and both readers fail it by the file's, saying so alike."""
    tight = _file(tmp_path, COPY, 'value: 3556618.0')
    status, out, _ = _cli(capsys, 'verdict', '--allow-unjudged',
                          '--references', tight, REPORT)
    assert status == verdict.EXIT_FAILED, out
    fail = next(x for x in out.splitlines()
                if x.startswith('  FAIL') and ': copy =' in x)
    bound = 'bound >= 3.37879e+06 MB/s (ref 3.55662e+06, -5.0%)'
    assert bound in fail
    crossed = [x.strip() for x in out.splitlines()
               if x.startswith('  BOUND')]
    assert len(crossed) == 2 and all(bound[6:] in x for x in crossed)

    status, table, _ = _cli(capsys, 'report', '--references', tight, REPORT)
    assert status == 0
    table = html.unescape(table).replace('\\', '')
    assert 'ref 3.557 [≥ 3.379]: fail' in table
    for line in crossed:                # the verdict's words, each once
        assert table.count(f'- {line}') == 1, table


def test_the_report_defaults_to_the_verdicts_references(tmp_path, capsys,
                                                        monkeypatch):
    """Without --references both read the installed and the site's: the
    tightened file as a site layer fails the figure in both."""
    site = tmp_path / 'site' / 'references'
    site.mkdir(parents=True)
    _file(site, COPY, 'value: 3556618.0')
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    status, out, _ = _cli(capsys, 'verdict', '--allow-unjudged', REPORT)
    assert status == verdict.EXIT_FAILED
    status, table, _ = _cli(capsys, 'report', REPORT)
    assert 'ref 3.557 [≥ 3.379]: fail' in html.unescape(table).replace(
        '\\', '')


def test_an_inventory_given_with_references_is_judged(tmp_path, capsys):
    more = _file(tmp_path, '    gpus: 1\n', '    gpus: 8\n')
    status, out, _ = _cli(capsys, 'verdict', '--allow-unjudged',
                          '--references', more, REPORT)
    assert status == verdict.EXIT_FAILED, out
    assert 'FAIL node vm: 1 of 8 GPUs (expected 8 x H100 80GB HBM3)' in out
    status, out, _ = _cli(capsys, 'verdict', '--allow-unjudged',
                          '--references', REFS, REPORT)
    assert status == verdict.EXIT_OK, out


MISTAKES = [
    ('    gpus: 1\n', '    gpus: "1"\n', r"inventory\[0\]\.gpus: must be an "
     r"integer >= 0, got '1'"),
    ('    memory_gib: 80\n', '    memory_gib: 80\n    baseline: {driver: x}\n'
     '    pin: [firmware]\n', r'inventory\[0\]\.pin: must be a list of '),
    ('    memory_gib: 80\n', '    memory_gib: 80\n    baseline: {driver: x}\n'
     '    pin: [vbios]\n', r'inventory\[0\]\.pin: vbios: the baseline '
     r'records no such version to pin'),
    ('  - partition: default\n', '  - partition: defualt\n',
     r"inventory\[0\]\.partition: 'defualt' is no partition of system "
     r"local \(it has: default\)"),
]


@pytest.mark.parametrize('old, new, message', MISTAKES)
def test_an_inventory_mistake_exits_3_naming_file_and_key(
        tmp_path, capsys, monkeypatch, old, new, message):
    import re
    bad = _file(tmp_path, old, new)
    status, out, err = _cli(capsys, 'verdict', '--references', bad, REPORT)
    assert status == verdict.EXIT_INPUT and out == ''
    assert re.search(rf'{re.escape(str(bad))}: {message}', err), err
    # the same file as the site's references: the same, never judged
    # without its inventory
    site = tmp_path / 'site' / 'references'
    site.mkdir(parents=True)
    bad.rename(site / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(tmp_path / 'site'))
    status, out, err = _cli(capsys, 'verdict', REPORT)
    assert status == verdict.EXIT_INPUT and out == '', out
    assert re.search(message, err), err
    status, _, err = _cli(capsys, 'report', REPORT)
    assert status == 3 and re.search(message, err), err
    status, _, err = _cli(capsys, 'references', '--schema-only')
    assert status == 1 and re.search(message, err), err


@pytest.mark.parametrize('old, new, message', MISTAKES)
def test_an_inventory_mistake_stops_reframe_at_load(tmp_path, old, new,
                                                    message):
    import re
    site = tmp_path / 'site' / 'references'
    site.mkdir(parents=True)
    _file(site, old, new)
    proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(tmp_path / 'site')},
                      checks=('checks/mpi4py_pingpong.py',))
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(rf'{re.escape(str(site))}/local.yaml: {message}', said)
    assert 'Traceback' not in said


def _layered(tmp_path, site_text):
    site = tmp_path / 'site'
    site.mkdir(parents=True)
    (site / 'perlmutter.yaml').write_text(site_text)
    return references.ReferenceSet.layered([str(ROOT / 'references'),
                                            str(site)])


ONE_BOUND = """\
system: perlmutter
entries:
  - check: BabelStreamCpuCheck
    partition: gpu
    metrics:
      copy: {lower: -0.1}
"""


def test_a_site_overlay_of_one_bound_keeps_the_builtin_inventory(tmp_path):
    refs = _layered(tmp_path, ONE_BOUND)
    assert refs.expected('perlmutter', 'gpu')['gpus'] == 4
    assert refs.matching('perlmutter', ['BabelStreamCpuCheck'], 'gpu',
                         {})['copy'].lower == -0.1
    own = _layered(tmp_path / 'own', ONE_BOUND + """\
inventory:
  - partition: gpu
    gpus: 3
    vendor: nvidia
    model: A100-SXM4
    source: the site's own count
""")
    assert own.expected('perlmutter', 'gpu')['gpus'] == 3


@pytest.mark.parametrize('mode', [0o666, 0o646])
def test_references_writable_by_others_are_refused(tmp_path, capsys, mode):
    """Another user who can write the file could pass a failing node."""
    path = _file(tmp_path)
    os.chmod(path, mode)
    status, out, err = _cli(capsys, 'verdict', '--references', path, REPORT)
    assert status == verdict.EXIT_INPUT and out == ''
    assert f'{path}: not trusted: {path} is writable by group or others' \
        in err
    status, _, err = _cli(capsys, 'report', '--references', path, REPORT)
    assert status == 3 and 'not trusted' in err


def test_references_of_another_owner_are_refused(tmp_path, capsys):
    if os.geteuid() != 0:
        pytest.skip('needs root to give the file away')
    path = _file(tmp_path)
    os.chown(path, 12345, 12345)
    status, _, err = _cli(capsys, 'verdict', '--references', path, REPORT)
    assert status == verdict.EXIT_INPUT
    assert 'is owned by uid 12345, not by root or the running user' in err


def test_an_alias_bomb_in_the_inventory_is_refused_unexpanded(tmp_path,
                                                              capsys):
    """Nine aliases of nine, nine deep, as an inventory's model: one line
    naming the file, never the 387 million strings it stands for."""
    bomb = 'a: &a [x, x, x, x, x, x, x, x, x]\n' + ''.join(
        f'{c}: &{c} [{", ".join([f"*{p}"] * 9)}]\n'
        for p, c in zip('abcdefgh', 'bcdefghi'))
    notes = ''.join(f'      {line}\n' for line in bomb.splitlines())
    path = _file(tmp_path, '    model: H100 80GB HBM3\n',
                 f'    notes:\n{notes}    model: *i\n')
    status, out, err = _cli(capsys, 'verdict', '--references', path, REPORT)
    assert status == verdict.EXIT_INPUT and out == ''
    assert err.startswith(f'hpcval verdict: {path}: ') and len(err) < 1000
