"""Launchers ReFrame lacks: IBM's ``jsrun`` (Summit, LSF)."""
from reframe.core.backends import register_launcher
from reframe.core.launchers import JobLauncher


@register_launcher('jsrun')
class JsrunLauncher(JobLauncher):
    """``jsrun -n <tasks> -r <per node> -a 1``, -g/-c from the GPU layout."""

    def command(self, job):
        cmd = ['jsrun', '-n', str(job.num_tasks)]
        if job.num_tasks_per_node:
            cmd += ['-r', str(job.num_tasks_per_node)]
        return cmd + ['-a', '1']
