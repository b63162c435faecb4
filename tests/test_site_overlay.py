"""A site reference file that holds only what it changes, layered entry by
entry over the built-in one (hpcval.references.ReferenceSet.layered), shown with
its origin by ``hpcval references --system X`` and checked against the
rule each figure names (hpcval.site.rule_warnings)."""
import os
import shutil
import subprocess

import pytest
import yaml

from hpcval import paths, references, site
from rfmrun import ROOT, VENV_BIN, perf, one_case, reframe

ONE_BOUND = '''\
system: frontier
entries:
  - check: BabelStreamCpuCheck
    metrics:
      copy:
        lower: -0.08
'''

OWN_RULE = '''\
system: frontier
rules:
  our-nodes: "our Frontier nodes' DIMMs run at 2933 MT/s: 8% below"
entries:
  - check: BabelStreamCpuCheck
    metrics:
      copy:
        lower: -0.08
        rule: our-nodes
'''


def _site(tmp_path, text, name='frontier.yaml'):
    folder = tmp_path / 'site'
    (folder / 'references').mkdir(parents=True, exist_ok=True)
    (folder / 'references' / name).write_text(text)
    return folder


def _hpcval(*args, site=None, root=ROOT):
    env = dict(os.environ, HPCVAL_ROOT=str(root))
    if site:
        env['HPCVAL_SITE'] = str(site)
    return subprocess.run([str(VENV_BIN / 'hpcval'), *args], env=env,
                          capture_output=True, text=True)


def _layered(*dirs):
    return references.ReferenceSet.layered([str(d) for d in dirs])


def _figure(refs, check, metric, **where):
    [ref] = [r for r in refs if r.check == check and r.metric == metric
             and r.where == where]
    return ref


def test_one_bound_is_one_entry_over_the_rest(tmp_path):
    folder = _site(tmp_path, ONE_BOUND)
    builtin = _layered(ROOT / 'references')['frontier']
    layered = _layered(ROOT / 'references', folder / 'references')['frontier']
    assert len(layered) == len(builtin)
    copy = _figure(layered, 'BabelStreamCpuCheck', 'copy')
    assert (copy.value, copy.lower, copy.spread, copy.rule) == \
        (111.97, -0.08, 0.24, 'sandia-spread')
    assert copy.origin.layer == 'site' and copy.origin.changed == ('lower',)
    # everything else is the built-in's, unchanged
    others = [(a, b) for a, b in zip(builtin, layered) if a.metric != 'copy'
              or a.check != 'BabelStreamCpuCheck']
    assert all(a == b and b.origin.layer == 'built-in' for a, b in others)


def test_references_shows_the_origin_and_the_broken_rule(tmp_path):
    proc = _hpcval('references', '--system', 'frontier', '--schema-only',
                   site=_site(tmp_path, ONE_BOUND))
    assert proc.returncode == 0, proc.stderr
    [row] = [line for line in proc.stdout.splitlines()
             if 'BabelStreamCpuCheck' in line and ' copy ' in line]
    assert row.split()[4:8] == ['111.97', 'GB/s', '-0.08', 'unbounded']
    assert f'site: lower changed ({tmp_path}/site/references/' \
           f'frontier.yaml) over {ROOT}/references/frontier.yaml' in row
    [hip] = [line for line in proc.stdout.splitlines()
             if 'BabelStreamHipCheck' in line and ' copy ' in line]
    assert f'built-in ({ROOT}/references/frontier.yaml)' in hip
    assert ("entries[0] (BabelStreamCpuCheck, partition *) copy: lower -0.08 "
            "breaks rule 'sandia-spread', which gives -0.05") in proc.stderr


def test_a_site_rule_of_its_own_is_no_warning(tmp_path):
    proc = _hpcval('references', '--system', 'frontier', '--schema-only',
                   site=_site(tmp_path, OWN_RULE))
    assert proc.returncode == 0 and 'warning' not in proc.stderr, \
        proc.stderr
    assert 'our-nodes' in proc.stdout


def test_an_upstream_change_to_another_entry_reaches_the_site(tmp_path):
    upstream = tmp_path / 'root'
    shutil.copytree(ROOT / 'references', upstream / 'references')
    path = upstream / 'references' / 'frontier.yaml'
    data = yaml.safe_load(path.read_text())
    hip = data['entries'][1]
    assert hip['check'] == 'BabelStreamHipCheck'
    hip['metrics']['copy']['value'] = 1400.0
    hip['metrics']['copy']['spread'] = 0.5
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    folder = _site(tmp_path, ONE_BOUND)
    refs = _layered(upstream / 'references',
                    folder / 'references')['frontier']
    assert _figure(refs, 'BabelStreamHipCheck', 'copy').value == 1400.0
    assert _figure(refs, 'BabelStreamCpuCheck', 'copy').lower == -0.08
    proc = _hpcval('references', '--system', 'frontier', '--schema-only',
                   site=folder, root=upstream)
    assert proc.returncode == 0, proc.stderr
    assert any('BabelStreamHipCheck' in line and '1400' in line and
               'built-in' in line for line in proc.stdout.splitlines())


def test_an_upstream_value_reaches_a_changed_bound(tmp_path):
    """The site changed the bound only: a corrected value upstream is the
    one judged, with the site's bound."""
    upstream = tmp_path / 'up'
    shutil.copytree(ROOT / 'references', upstream)
    path = upstream / 'frontier.yaml'
    path.write_text(path.read_text().replace('value: 111.97', 'value: 115.0'))
    copy = _figure(_layered(upstream, _site(tmp_path, OWN_RULE) /
                            'references')['frontier'],
                   'BabelStreamCpuCheck', 'copy')
    assert (copy.value, copy.lower, copy.rule) == (115.0, -0.08, 'our-nodes')


def test_replace_true_replaces_the_file_whole(tmp_path):
    whole = 'replace: true\ndescription: ours\n' + OWN_RULE.replace(
        'lower: -0.08', 'value: 100.0\n        lower: -0.08\n'
        '        unit: GB/s\n        source: our runs')
    refs = _layered(ROOT / 'references', _site(tmp_path, whole) /
                    'references')['frontier']
    assert [(r.check, r.metric, r.value) for r in refs] == \
        [('BabelStreamCpuCheck', 'copy', 100.0)]
    assert refs[0].origin.layer == 'site'


def test_a_new_entry_follows_the_built_in_ones(tmp_path):
    text = ONE_BOUND.replace('  - check: BabelStreamCpuCheck',
                             '  - check: BabelStreamCpuCheck\n'
                             '    partition: batch')
    text = text.replace('lower: -0.08', 'value: 100.0\n        lower: -0.1\n'
                        '        unit: GB/s\n        rule: sandia-spread\n'
                        '        spread: 1.0\n        source: our runs')
    builtin = _layered(ROOT / 'references')['frontier']
    refs = _layered(ROOT / 'references', _site(tmp_path, text) /
                    'references')['frontier']
    assert refs[:len(builtin)] == builtin
    [new] = refs[len(builtin):]
    assert (new.partition, new.value, new.origin.changed) == \
        ('batch', 100.0, ('*',))
    # later entries win: the site's figure judges partition batch
    got = references.select(refs, ['BabelStreamCpuCheck'], 'batch', {},
                            {'copy': 'GB/s'})
    assert got['copy'] == (100.0, -0.1, None, 'GB/s')


def test_calibrated_entries_follow_everything(tmp_path):
    text = '''\
system: local
rules:
  calibrated: "hpcval calibrate: k-sigma prediction bound"
entries:
  - check: Mpi4pyPingPongCheck
    where: {placement: on_node}
    metrics:
      latency_8B:
        value: 3.0
        upper: 0.5
        unit: us
        rule: calibrated
        source: calibrated here
'''
    refs = _layered(ROOT / 'references', _site(tmp_path, text, 'local.yaml')
                    / 'references')['local']
    last = refs[-1]
    assert (last.metric, last.value, last.origin.layer) == \
        ('latency_8B', 3.0, 'calibrated')
    rows = site.effective(refs)
    assert any(r[2] == 'latency_8B' and r[-1].startswith('calibrated')
               for r in rows)


@pytest.mark.parametrize('text, message', [
    (OWN_RULE.replace('our-nodes:', 'sandia-spread:').replace(
        'rule: our-nodes', 'rule: sandia-spread'),
     'frontier.yaml: rules.sandia-spread: is a rule of'),
    (ONE_BOUND.replace('lower: -0.08', 'lowr: -0.08'),
     "frontier.yaml: entries[0].metrics.copy: unknown key(s) lowr"),
    (ONE_BOUND.replace('lower: -0.08', 'unit: MB/s'),
     'entries[0].metrics.copy.unit: changes the unit'),
    (ONE_BOUND.replace('copy:', 'mul:'),
     'entries[0].metrics.mul: ', ),
    (ONE_BOUND.replace('lower: -0.08', 'lower: 0.08'),
     'entries[0].metrics.copy.lower: must be <= 0'),
    (ONE_BOUND.replace('lower: -0.08', 'rule: nowhere'),
     "entries[0].metrics.copy.rule: 'nowhere' is not one of"),
    ('replace: yes please\n' + ONE_BOUND, 'frontier.yaml: replace: must be'),
    (ONE_BOUND.replace('system: frontier', 'system: summit'),
     'frontier.yaml: system: must be'),
    ('replace: true\n' + ONE_BOUND, 'frontier.yaml: description: must be'),
])
def test_a_bad_overlay_names_its_file_and_key(tmp_path, text, message):
    folder = _site(tmp_path, text)
    with pytest.raises(references.ReferenceFileError) as err:
        _layered(ROOT / 'references', folder / 'references')
    assert str(err.value).startswith(str(folder / 'references')), err.value
    assert message in str(err.value)
    proc = _hpcval('references', '--schema-only', site=folder)
    assert proc.returncode == 1 and message in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_an_overlay_entry_matching_no_test_is_named_in_the_site(tmp_path):
    typo = ONE_BOUND.replace('BabelStreamCpuCheck', 'BabelStreamCpuChek')
    folder = _site(tmp_path, typo)
    proc = _hpcval('references', '--schema-only', site=folder)
    assert proc.returncode == 1
    assert 'entries[0].metrics.copy.value: is required: no entry of' in \
        proc.stderr, proc.stderr
    folder = _site(tmp_path, typo.replace(
        'lower: -0.08', 'value: 100.0\n        lower: -0.08\n'
        '        unit: GB/s\n        rule: sandia-spread\n'
        '        spread: 2.0\n        source: our runs'))
    proc = _hpcval('references', '--system', 'frontier', site=folder)
    assert proc.returncode == 1
    assert f'{folder}/references/frontier.yaml: entries[0] ' \
           f'(BabelStreamCpuChek' in proc.stderr, proc.stderr


def test_the_sandia_rule_formula_is_that_of_the_files():
    """site.RULE_BOUNDS computes what the built-in files' bounds are."""
    checked = 0
    for refs in _layered(ROOT / 'references').values():
        for ref in refs:
            if ref.rule in site.RULE_BOUNDS and ref.value is not None:
                ref = type(ref)(**{**ref.__dict__,
                                   'origin': ref.origin.__class__(
                                       'site', 'x', 0)})
                assert site.rule_warnings([ref]) == [], ref
                checked += 1
    assert checked > 20


def test_the_site_bound_judges_a_real_run_beside_built_in_ones(tmp_path):
    """ReFrame's run takes the layered references: the site's bandwidth
    bound and the built-in latency figures of the same entry."""
    text = '''\
system: local
rules:
  ours: "any bandwidth above zero"
entries:
  - check: Mpi4pyPingPongCheck
    where: {placement: on_node}
    metrics:
      bandwidth_4MiB:
        lower: -1.0
        rule: ours
'''
    folder = _site(tmp_path, text, 'local.yaml')
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'Mpi4pyPingPongCheck', '-S',
                           'Mpi4pyPingPongCheck.loops=100',
                           tmp_path=tmp_path, env={'HPCVAL_SITE': str(folder)},
                           checks=('checks/mpi4py_pingpong.py',))
    assert report is not None, proc.stdout[-3000:]
    figures = perf(one_case(report, 'Mpi4pyPingPongCheck'))
    assert figures['bandwidth_4MiB'][1:3] == [6000, -1.0]
    assert figures['latency_8B'][1:4] == [2.0, None, 9.0]


def test_a_check_file_that_does_not_parse_is_left_to_reframe(tmp_path):
    # the readers of check files (class names, bases, diagnostics) skip
    # it; ReFrame names it when it loads the file
    broken = tmp_path / 'broken.py'
    broken.write_text('class Half(:\n')
    binary = tmp_path / 'binary.py'
    binary.write_bytes(b'\xff\xfe\x00')
    for path in (broken, binary, tmp_path / 'missing.py'):
        assert paths.parsed_check_file(str(path)).body == []
    good = tmp_path / 'good.py'
    good.write_text('class A(B):\n    pass\n')
    assert [n.name for n in paths.parsed_check_file(str(good)).body] == ['A']
