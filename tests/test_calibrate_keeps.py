"""calibrate --write keeps what the site wrote: a pin and a note it added
to the calibrated inventory block, and comments anywhere (the head, the
inventory block, the calibrated section), over two writes.  Runs: the
lent H100 node's healthy report as three sessions
(tests/fixtures/captured/h100_health)."""
from pathlib import Path

import yaml

from hpcval import references
from hpcval.publish import calibrate as cal
from test_health_changes import _runs

ROOT = Path(__file__).parents[1]


def _write(tmp_path, refs):
    return cal.calibrate(_runs(tmp_path).samples, 'local',
                         references.load_dir(str(refs)), ref_dir=str(refs),
                         min_samples=2, k=3, floor=0.05, keep_outliers=True,
                         accept_performance_failures=True, write=True)


def _edit(text):
    """What an admin adds after the first calibration."""
    inv = text.index('inventory:\n')
    text = text[:inv] + '# admin: inventory checked by hand, 2026-11-20\n' \
        + text[inv:]
    # and the inventory as an older baseline had it: rewritten below
    assert '    memory_gib: 79\n' in text
    text = text.replace('    memory_gib: 79\n', '    memory_gib: 80\n', 1)
    text = text.replace("    vendor: nvidia\n",
                        "    vendor: nvidia\n"
                        "    # admin: the driver is pinned until the "
                        "next window\n"
                        "    pin: [driver]\n", 1)
    section = text.index(cal.MARKER)
    first = text.index('  - check:', section)
    metrics = text.index('    metrics:', first)
    text = (text[:first] + '  # admin: before the first calibrated entry\n'
            + text[first:metrics] + '    # admin: inside it\n'
            + text[metrics:])
    return text + '  # admin: after the last entry\n'


COMMENTS = ('# admin: inventory checked by hand, 2026-11-20',
            '# admin: the driver is pinned until the next window',
            '# admin: before the first calibrated entry',
            '# admin: inside it', '# admin: after the last entry')


def test_two_writes_keep_the_sites_pin_and_comments(tmp_path):
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text(
        '# site: calibrated on the lent H100\n' +
        (ROOT / 'references' / 'local.yaml').read_text())
    _write(tmp_path, refs)
    (refs / 'local.yaml').write_text(_edit((refs / 'local.yaml')
                                           .read_text()))
    for _ in range(2):
        result = _write(tmp_path, refs)
        text = (refs / 'local.yaml').read_text()
        assert text == result.text
        assert text.startswith('# site: calibrated on the lent H100\n')
        for comment in COMMENTS:
            assert text.count(comment) == 1, (comment, text)
        [entry] = yaml.safe_load(text)['inventory']
        assert entry['pin'] == ['driver']
        assert entry['gpus'] == 1 and entry['memory_gib'] == 79
        assert any('inventory rewritten from the baseline runs' in n
                   for n in result.notes), result.notes
        # and it loads, its pin validated
        references.load(str(refs / 'local.yaml'))


def test_a_first_write_then_a_second_with_nothing_new_is_the_same(tmp_path):
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text(
        (ROOT / 'references' / 'local.yaml').read_text())
    first = _write(tmp_path, refs).text
    second = _write(tmp_path, refs).text
    assert first == second
