"""Speed of ``hpcval report`` on a large results database, against
ReFrame's own ``--performance-compare`` on the same database.

    .venv/bin/python tests/bench_report_speed.py [--cases 100000]

A real ``reframe -r --system local`` of the MPI ping-pong makes the
database (ReFrame creates its schema); its stored session is then cloned,
through the same tables ReFrame writes, into sessions of 1000 test cases
each (new uuids, values varied) until ``--cases`` test cases are stored.
Both tools then read every stored test case; wall time and peak memory of
each process are printed (figures: docs/measurements.md).  Not a pytest
test: a timing depends on the machine, so it is measured, not asserted.
"""
import argparse
import json
import os
import pathlib
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfmrun import ROOT, VENV_BIN, reframe  # noqa: E402

PER_SESSION = 1000


def _template(db):
    with sqlite3.connect(db) as conn:
        [(blob,)] = conn.execute('SELECT json_blob FROM sessions').fetchall()
    report = json.loads(blob)
    cases = [tc for run in report['runs'] for tc in run['testcases']
             if tc.get('perfvalues')]
    if not cases:
        raise SystemExit('the template run stored no performance values')

    return report, cases


def _clone(report, cases, n, start, rng):
    sid = str(uuid.uuid4())
    out = json.loads(json.dumps(report))
    out['session_info'].update(uuid=sid, time_start_unix=start,
                               time_end_unix=start + 60)
    tcs = []
    for i in range(n):
        tc = json.loads(json.dumps(cases[i % len(cases)]))
        # as `--repeat` names its runs: distinct test cases of one session
        # (the same name twice in one run counts once)
        tc.update(uuid=f'{sid}:0:{i}', session_uuid=sid,
                  job_completion_time_unix=start + i * 0.01,
                  display_name=f'{tc["display_name"]} %.repeat_no={i}')
        for vals in tc['perfvalues'].values():
            vals[0] *= rng.uniform(0.9, 1.1)
        tcs.append(tc)
    out['runs'] = [{**report['runs'][0], 'testcases': tcs,
                    'num_cases': n}]
    return sid, out, tcs


def fill(db, total):
    report, cases = _template(db)
    rng = random.Random(1)
    now = time.time() - 3600
    with sqlite3.connect(db) as conn:
        for k in range(0, total - 1, PER_SESSION):
            n = min(PER_SESSION, total - 1 - k)
            start = now + k
            sid, sess, tcs = _clone(report, cases, n, start, rng)
            conn.execute('INSERT INTO sessions VALUES(?, ?, ?, ?, ?)',
                         (sid, start, start + 60, json.dumps(sess), ''))
            conn.executemany(
                'INSERT INTO testcases VALUES(?, ?, ?, ?, ?, ?, ?)',
                [(tc['name'], tc['system'], tc['partition'], tc['environ'],
                  tc['job_completion_time_unix'], sid, tc['uuid'])
                 for tc in tcs])
        [(count,)] = conn.execute('SELECT COUNT(*) FROM testcases')
    return count


def timed(cmd, env):
    """(wall seconds, CPU seconds (user and system), peak RSS MiB of this
    process, stdout)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=err)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f'{cmd[0]} failed ({proc.returncode}):\n'
                             f'{err.read()[-2000:].decode()}')

    return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cases', type=int, default=100_000)
    parser.add_argument('--db', type=pathlib.Path,
                        help='time this database, made by an earlier run '
                             '(its path is printed), instead of a new one')
    args = parser.parse_args()
    if args.db:
        db = args.db
        with sqlite3.connect(f'file:{db}?mode=ro', uri=True) as conn:
            [(count,)] = conn.execute('SELECT COUNT(*) FROM testcases')
    else:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='hpcval-bench-'))
        # the check as the references know it (a smaller max_size leaves
        # out bandwidth_4MiB, which references/local.yaml judges)
        proc, _ = reframe('-r', '--system', 'local', '-n',
                          'Mpi4pyPingPongCheck', tmp_path=tmp)
        db = tmp / 'results.db'
        # a busy machine may fail the run's bounds: its figures still serve
        if not db.exists():
            raise SystemExit(f'template run failed:\n{proc.stdout[-2000:]}')
        count = fill(db, args.cases)
    print(f'database: {db} ({db.stat().st_size / 2**20:.0f} MiB, '
          f'{count} test cases)')
    env = dict(os.environ, RFM_SQLITE_DB_FILE=str(db),
               RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
               HPCVAL_ROOT=str(ROOT))
    period = 'now-1d:now+1d'
    runs = {
        'hpcval report --db (Markdown table)':
            [str(VENV_BIN / 'hpcval'), 'report', '--db', str(db)],
        'reframe --performance-compare (mean by system)':
            [str(VENV_BIN / 'reframe'), '--performance-compare',
             f'{period}/{period}/mean:+system/+system'],
    }
    for label, cmd in runs.items():
        wall, cpu, rss, out = timed(cmd, env)
        # CPU time as well: on a shared machine the wall time says as much
        # about the other jobs as about this one
        print(f'{label}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS '
              f'{rss:.0f} MiB, {len(out.splitlines())} output lines')


if __name__ == '__main__':
    main()
