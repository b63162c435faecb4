"""elbencho result-table parser on real outputs and broken copies of them.

Inputs: the LUMI talk's example (an elbencho before v2.3.1 with
``Elapsed ms``, alignment lost in the PDF), the 2-core VM capture of
elbencho 3.1-10 (tests/fixtures/captured/vm, human elapsed times) and the four
ElbenchoCpuCheck runs captured on ``local`` (tests/fixtures/captured/
elbencho, with the ``--jsonfile`` each run wrote).  Every other case is
made from that text, one change at a time.
"""
import json
import pathlib

import pytest

from hpcval.parsers.common import ParseError
from hpcval.parsers.elbencho import (TIME_LIMIT, elapsed_to_ms,
                                     parse_elbencho, phase, total_mib)
from mutate import cut_after

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures'
SEED = SHARED / 'documents' / 'csc-lumi-elbencho-talk.txt'
VM = SHARED / 'captured' / 'vm' / \
    'elbencho_write_read_1file_t2_b1M_s1G_direct.txt'
CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / \
    'elbencho'
CHECK_RUNS = sorted(p.stem for p in CAPTURED.glob('*.txt'))


@pytest.fixture(scope='module')
def seed():
    """The talk's table, from its header to its last row, as printed."""
    text = SEED.read_text()
    start = text.index('OPERATION RESULT TYPE')
    end = text.index('\n', text.index('Time ms each', start))
    return text[start:end + 1]


@pytest.fixture(scope='module')
def vm():
    return VM.read_text()


def replace_once(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- real outputs -----------------------------------------------------------

def test_seed_example_old_format(seed):
    """./elbencho -w -t1 --iodepth 1 -b 1M -s 10G --gpuids=0 ... --timelimit 10"""
    with pytest.raises(ParseError, match='no "---" after its rows'):
        parse_elbencho(seed)          # the slide drops the block's end
    [write] = parse_elbencho(seed, require_end=False)
    assert write.operation == 'WRITE'
    assert write.elapsed_ms == (10007, 10007)
    assert write.value('IOPS', 'first') == 207
    assert write.throughput_mib_s() == 207
    assert total_mib(write) == 2077
    assert write.value('IOs total') == 2077
    assert write.raw == {'Time ms each': '[ 10007 ]'}
    # 1 MiB blocks: IOPS equal MiB/s, and 2077 MiB in 10.007 s is 207 MiB/s
    assert total_mib(write) / (write.elapsed_ms[1] / 1000) == \
        pytest.approx(207, abs=1)


def test_vm_capture(vm):
    """elbencho -w -r -t 2 -b 1M -s 1G --direct FILE, elbencho 3.1-10"""
    phases = parse_elbencho(vm)
    assert [p.operation for p in phases] == ['WRITE', 'READ']
    write, read = phase(phases, 'WRITE'), phase(phases, 'READ')
    assert write.elapsed_ms == (712, 722)
    assert read.elapsed_ms == (1089, 1090)
    assert (write.value('IOPS', 'first'), write.value('IOPS')) == (1420, 1417)
    assert (read.throughput_mib_s('first'), read.throughput_mib_s()) == \
        (938, 939)
    assert (total_mib(write, 'first'), total_mib(write)) == (1012, 1024)
    assert not write.base10
    # the whole 1 GiB file moved: 1024 MiB in 0.722 s is about 1418 MiB/s
    assert total_mib(write) / (write.elapsed_ms[1] / 1000) == \
        pytest.approx(write.throughput_mib_s(), rel=0.01)


@pytest.mark.parametrize('run', CHECK_RUNS)
def test_captured_check_runs(run):
    """Each table read by the parser against the --jsonfile elbencho wrote
    in the same run (one JSON object per phase, every value a string):
    elapsed ms, IOPS, MiB/s and MiB truncated from bytes/s and bytes."""
    text = (CAPTURED / f'{run}.txt').read_text()
    records = [json.loads(line) for line in
               (CAPTURED / f'{run}.json').read_text().splitlines()]
    phases = parse_elbencho(text)
    assert [p.operation for p in phases] == \
        [r['phase_type'] for r in records]
    assert [p.operation for p in phases][-2:] == ['WRITE', 'READ']
    for record in records[-2:]:
        parsed = phase(phases, record['phase_type'])
        for n, which in enumerate(('first', 'last')):
            done = record[f'{which}_done']
            assert parsed.elapsed_ms[n] == int(done['elapsed_time_ms'])
            assert parsed.value('IOPS', which) == int(done['iops'])
            assert parsed.throughput_mib_s(which) == \
                int(done['bytes/s']) // 2**20
            assert total_mib(parsed, which) == int(done['bytes']) // 2**20


def test_captured_dir_mode_broken():
    """The real file-per-thread run: cut after its MKDIRS block, and with a
    Files/s figure gone bad."""
    text = (CAPTURED / 'elbencho319_file_per_thread_seq_1m_t2_s256M.txt') \
        .read_text()
    phases = parse_elbencho(cut_after(text, '---'))
    with pytest.raises(ParseError, match=r'expected one WRITE phase, found '
                                         r'0 \(phases: MKDIRS\)'):
        phase(phases, 'WRITE')
    broken = replace_once(text, 'Files/s          :           2           5',
                          'Files/s          :           2        -nan')
    with pytest.raises(ParseError, match='WRITE "Files/s": \'-nan\' is not a '
                                         'finite number'):
        parse_elbencho(broken)


@pytest.mark.parametrize('token, ms', [
    ('712ms', 712), ('0ms', 0), ('1.089s', 1089), ('59.999s', 59999),
    ('2m3.241s', 123241), ('2m5.755s', 125755), ('1h2m3s', 3723000),
    ('10007', None)])
def test_elapsed_formats(token, ms):
    """elbencho's UnitTk::elapsedMSToHumanStr forms since v2.3.1."""
    if ms is None:
        with pytest.raises(ParseError, match="'10007' is not an elapsed"):
            elapsed_to_ms(token, 'x')
    else:
        assert elapsed_to_ms(token, 'x') == pytest.approx(ms)


# -- variants the parser must accept ----------------------------------------

def test_base10_throughput_is_converted(vm):
    text = vm.replace('Throughput MiB/s', 'Throughput MB/s ')
    read = phase(parse_elbencho(text), 'READ')
    assert read.base10
    assert read.throughput_mib_s() == pytest.approx(939e6 / 2**20)


def test_long_run_and_extra_rows(vm):
    text = replace_once(vm, '     712ms       722ms', '  2m3.241s    2m5.755s')
    text = replace_once(text, '            Total MiB        :        1023',
                        '            CPU util %       :          35'
                        '          36\n'
                        '            Total MiB        :        1023')
    text = 'WARNING: Fastest worker thread completed in less than 1 ' \
        'microsecond\n' + text
    phases = parse_elbencho(text)
    assert phase(phases, 'WRITE').elapsed_ms == (123241, 125755)
    assert phase(phases, 'READ').value('CPU util %') == 36


def test_dir_mode_phases(vm):
    """-d -n 1 -N 1: a MKDIRS phase comes first, with Dirs/s rows."""
    mkdirs = ('MKDIRS      Elapsed time     :         1ms         1ms\n'
              '            Dirs/s           :        1000        1000\n'
              '            Dirs total       :           2           2\n'
              '---\n')
    head, _, tail = vm.partition('WRITE ')
    phases = parse_elbencho(head + mkdirs + 'WRITE ' + tail)
    assert [p.operation for p in phases] == ['MKDIRS', 'WRITE', 'READ']
    assert phase(phases, 'READ').throughput_mib_s() == 939


# -- broken outputs ---------------------------------------------------------

def test_no_table():
    with pytest.raises(ParseError, match='no result table'):
        parse_elbencho('ERROR: Unable to open file: /nowhere/file\n')


def test_header_only(vm):
    with pytest.raises(ParseError, match='without any phase rows'):
        parse_elbencho(cut_after(vm, '=========='))


def test_truncated_between_phases(vm):
    """The READ phase never printed: the check must say so."""
    phases = parse_elbencho(cut_after(vm, '---'))
    with pytest.raises(ParseError, match=r'expected one READ phase, found 0 '
                                         r'\(phases: WRITE\)'):
        phase(phases, 'READ')


def test_truncated_mid_block(vm):
    with pytest.raises(ParseError, match='READ: no "---" after its rows: '
                                         'the output is truncated'):
        parse_elbencho(cut_after(vm, '938         939'))


def test_truncated_mid_row(vm):
    text = vm[:vm.index('1023        1024') + 5]
    with pytest.raises(ParseError, match='READ "Total MiB": expected FIRST '
                                         'DONE and LAST DONE values'):
        parse_elbencho(text)


def test_nan_iops(vm):
    text = replace_once(vm, 'IOPS             :         938',
                        'IOPS             :         nan')
    with pytest.raises(ParseError, match="READ \"IOPS\": 'nan' is not a "
                                         "finite number"):
        parse_elbencho(text)


def test_junk_elapsed(vm):
    text = replace_once(vm, '1.089s', 'N/A')
    with pytest.raises(ParseError, match="READ \"Elapsed time\": 'N/A' is "
                                         "not an elapsed time"):
        parse_elbencho(text)


def test_time_limit_hit(vm):
    text = vm.replace('---\nREAD', f'{TIME_LIMIT}.\n---\nREAD')
    with pytest.raises(ParseError, match='cut short, its figures cover only '
                                         'part of the data'):
        parse_elbencho(text)


def test_missing_throughput_row(vm):
    text = ''.join(line for line in vm.splitlines(keepends=True)
                   if not ('Throughput' in line and '938' in line))
    read = phase(parse_elbencho(text), 'READ')
    with pytest.raises(ParseError, match='READ: no "Throughput MiB/s" row'):
        read.throughput_mib_s()


def test_concatenated_runs(vm):
    with pytest.raises(ParseError, match='expected one WRITE phase, found 2'):
        phase(parse_elbencho(vm + vm), 'WRITE')
