"""Confirmed failures: a failed test case measured again in its session
(``--max-retries=1``); the verdict judges the re-measure beside it."""

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
    """(ids of the runs a later run replaces, {id(the run judged): the
    first run}) of ``cases``; a run after a passed one stands alone."""
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
    """``found`` (one test case's runs) cut into failed runs and retries."""
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
