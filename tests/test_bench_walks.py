"""The reference -> verdict line walk of tests/bench_walks.py (issue 33)
on one captured run: the marker reference is followed from the file read
to the function that writes the FAIL line."""
import bench_walks


def test_the_reference_walk_runs_from_the_file_read_to_the_verdict_line(
        tmp_path):
    record, line, status = bench_walks.walk1(tmp_path)
    assert status == 1 and 'ref 1234.57' in line and '>= 1087.16' in line
    files = list(record['files'])
    assert files[0] == 'utils/hpcval/references.py'
    assert record['last'][0] == 'utils/hpcval/verdict.py'
    assert record['last'][1].startswith('render_text')
    assert 'utils/hpcval/judgement.py' in files
    assert len(files) == len(set(files)) <= 12
