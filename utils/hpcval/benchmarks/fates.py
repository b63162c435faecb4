"""How a Slurm job ended, and time limits Slurm cannot honour."""
import re

from reframe.core.exceptions import ReframeError

#: Slurm's final job states that explain a missing or partial output
FATES = {
    'TIMEOUT': 'killed at its time limit',
    'CANCELLED': 'cancelled (scancel, or an administrator)',
    'NODE_FAIL': 'ended by the failure of a node',
    'OUT_OF_MEMORY': 'killed for running out of memory',
    'FAILED': 'ended with a non-zero exit code',
    'PREEMPTED': 'preempted by a higher-priority job',
    'REQUEUED': 'requeued by Slurm, cancelled by hpcval before a rerun',
    'BOOT_FAIL': 'not started: a node failed to boot',
    'DEADLINE': 'ended at its deadline',
}
#: what Slurm's own tools print in the job's stderr when they fail
_SLURM_ERROR = re.compile(r'^(srun|slurmstepd|sbatch): error: .*$',
                          re.MULTILINE)
#: Slurm counts time limits in minutes: a shorter one becomes a minute
SLURM_MIN_TIME_LIMIT = 60


def job_fate(job):
    """'job 12 on n1 TIMEOUT: killed at its time limit (0:01:00)', or ''."""
    state = (job.state or '').split()[0] if job.state else ''
    if state not in FATES:
        return ''
    nodes = ','.join(job.nodelist or ()) or 'no node recorded'
    what = FATES[state]
    if state == 'TIMEOUT' and job.time_limit:
        what += f' ({_hms(job.time_limit)})'
    return f'job {job.jobid} on {nodes} {state}: {what}'


def slurm_error(stderr_text):
    """The first error line of Slurm's own tools in a job's stderr, or ''."""
    m = _SLURM_ERROR.search(stderr_text or '')
    return m.group(0).strip() if m else ''


def _hms(seconds):
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


def check_time_limit(test):
    """Refuse a time limit Slurm would silently round up to one minute."""
    limit = test.time_limit
    scheduler = test.current_partition.scheduler.registered_name
    if scheduler in ('slurm', 'squeue') and limit and \
            limit < SLURM_MIN_TIME_LIMIT:
        test.hpcval_job_fate = ['usage error', '']
        raise ReframeError(
            f'usage error: time_limit={_hms(limit)} is below Slurm\'s '
            f'shortest time limit, one minute (Slurm counts in minutes and '
            f'would run the job for 0:01:00): give -S time_limit=1m or '
            f'more')
