"""Launchers ReFrame lacks: IBM's ``jsrun`` (Summit, LSF).

Imported by config/settings.py, so that a partition can name it.
"""
from reframe.core.backends import register_launcher
from reframe.core.launchers import JobLauncher


@register_launcher('jsrun')
class JsrunLauncher(JobLauncher):
    """One resource set per task: ``jsrun -n <tasks> -r <tasks per node>
    -a 1``; GPUs (``-g``) and cores (``-c``) per resource set come from the
    partition's GPU layouts, as OLCF's one-rank-per-GPU recipe
    ``jsrun -n12 -r6 -a1 -g1 -c1`` has them."""

    def command(self, job):
        cmd = ['jsrun', '-n', str(job.num_tasks)]
        if job.num_tasks_per_node:
            cmd += ['-r', str(job.num_tasks_per_node)]

        return cmd + ['-a', '1']
