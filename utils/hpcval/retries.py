"""Confirmed failures: a failed test case measured again in its session.

The suites run ReFrame with ``--max-retries=1`` (hpcval.suites): a test
case that failed is run once more, in the same session, after the others;
the report keeps both runs (``runs[0]``, ``runs[1]``, as ``Case.run``).
The verdict judges the re-measure and shows the first run beside it, so
that a failure that reproduces fails with both figures and one that does
not is named intermittent, never passed (docs/verdict.md).
"""

# what ReFrame writes of a case that did not run: a retry that did not
# measure leaves the first run to stand
NOT_RUN = ('skip', 'fail_deps')
# what ReFrame retries: a failure, and a case skipped for a failed fixture
RETRIED = ('fail', 'fail_deps')


def _run(case):
    # what is not a results.Case (a test's, another reader's) is a first run
    return getattr(case, 'run', 0)


def _key(case):
    # reports of ReFrame < 4.7 have no session uuid: their file and host
    return (case.session or (case.source, case.hostname), case.test,
            case.system, case.partition, case.environ, case.label)


def runs(cases):
    """(earlier, first) of ``cases`` (results.Case, tests or fixtures):
    ``earlier`` the ids of the runs a later run of the same test case
    replaces, ``first`` {id(the run judged): the first run} of each test
    case measured again.  A run follows a failed one as its retry; a run
    after a passed one (``--reruns``) is a measurement of its own."""
    if not any(map(_run, cases)):
        return set(), {}        # no run but the first: nothing to pair
    by_test = {}
    for case in cases:
        by_test.setdefault(_key(case), []).append(case)
    earlier, first = set(), {}
    for found in by_test.values():
        if len(found) < 2:
            continue
        found.sort(key=_run)
        for chain in _chains(found):
            measured = [c for c in chain[1:] if c.result not in NOT_RUN]
            judged = measured[-1] if measured else chain[0]
            earlier.update(id(c) for c in chain if c is not judged)
            if judged is not chain[0]:
                first[id(judged)] = chain[0]
    return earlier, first


def _chains(found):
    """``found`` (one test case's runs, in order) cut into chains of a
    failed run and its retries."""
    chain = [found[0]]
    for case in found[1:]:
        last = chain[-1]
        if _run(case) == _run(last) + 1 and last.result in RETRIED:
            chain.append(case)
            continue
        if len(chain) > 1:
            yield chain
        chain = [case]
    if len(chain) > 1:
        yield chain
