"""``hpcval run ... --ci-generate=FILE``: ReFrame's GitLab pipeline, each job
run as ``hpcval run``, gated on ``hpcval verdict`` (docs/ci.md)."""
import argparse
import os
import re
import shlex
import subprocess
import sys

import yaml

from hpcval import bounded, paths, trust

VERDICT_STAGE = 'hpcval-verdict'
VERDICT_JOB = 'hpcval-verdict'


class CiError(ValueError):
    """The pipeline cannot be made; the message says why."""


def carried(reframe_args):
    """(the pipeline file, [the options every job repeats]): ReFrame's
    generator keeps only --mode of the generating run."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument('--system')
    parser.add_argument('--ci-generate')
    for flag, name in (('-S', '--setvar'), ('-p', '--prgenv'),
                       ('-J', '--job-option')):
        parser.add_argument(flag, name, dest=flag, action='append',
                            default=[])
    known, _ = parser.parse_known_args(reframe_args)
    out = [f'--system={known.system}'] if known.system else []
    out += [f'{flag}{v}' for flag in ('-S', '-p', '-J')
            for v in getattr(known, flag)]
    return known.ci_generate, out


def generate(reframe_args, reframe_exe, env):
    """Run ReFrame's generator, then rewrite its pipeline; the exit status."""
    target, options = carried(reframe_args)
    if not target:
        raise CiError('--ci-generate needs a file name')
    proc = subprocess.run([reframe_exe, *reframe_args], env=env)
    if proc.returncode != 0:
        return proc.returncode
    path = os.path.abspath(target)
    try:
        with open(path, encoding='utf-8') as fp:
            pipeline = bounded.load(fp.read(bounded.MAX_BYTES + 1))
    except (OSError, yaml.YAMLError, bounded.TooBig) as err:
        raise CiError(f'{path}: cannot read ReFrame\'s pipeline: {err}'
                      ) from None
    rewritten = rewrite(pipeline, options, _Places(env))
    # written next to ReFrame's file and renamed over it: no symlink
    # followed, never half a pipeline
    tmp = f'{path}.hpcval-tmp'
    trust.write_new(tmp, dump(rewritten))
    os.replace(tmp, path)
    print(f'hpcval run: {path}: jobs run `hpcval run` with '
          f'{" ".join(options) or "no --system"}; a last stage '
          f'{VERDICT_STAGE!r} gates the pipeline (docs/ci.md)',
          file=sys.stderr)
    return 0


class _Places:
    """The folders a job names through hpcval itself, not by path."""

    def __init__(self, env):
        root = paths.repo_root()
        self.config = paths.config_file()
        self.checks = os.path.join(root, 'checks')
        site = env.get(paths.SITE_VAR)
        self.site = os.path.abspath(site) if site else None

    def shown(self, path, option):
        path = os.path.abspath(path)
        for folder, how in ((self.checks, '"$(hpcval paths checks)"'),
                            (self.site, f'"${paths.SITE_VAR}"')):
            if folder and (path == folder or
                           path.startswith(folder + os.sep)):
                rel = os.path.relpath(path, folder)
                return how if rel == '.' else \
                    f'{how}/{shlex.quote(rel)}'
        raise CiError(f'{option} {path}: neither in hpcval\'s checks nor '
                      f'under ${paths.SITE_VAR}; a pipeline for any host '
                      f'names files only there')


def rewrite(pipeline, options, places):
    """ReFrame's pipeline with portable jobs, JUnit reports and the verdict."""
    if not isinstance(pipeline, dict):
        raise CiError('ReFrame\'s pipeline is not a mapping')
    out = {}
    reports = []
    for name, job in pipeline.items():
        if not isinstance(job, dict) or 'script' not in job:
            out[name] = job
            continue
        job = dict(job)
        job['script'] = [_command(line, options, places)
                         for line in job['script']]
        junit = f'{name}-report.xml'
        artifacts = dict(job.get('artifacts') or {})
        artifacts['paths'] = [*artifacts.get('paths', []), junit]
        artifacts['reports'] = {**artifacts.get('reports', {}),
                                'junit': junit}
        artifacts['when'] = 'always'   # a failed test's report is the point
        job['artifacts'] = artifacts
        reports.append(f'{name}-report.json')
        out[name] = job
    if not reports:
        raise CiError('ReFrame\'s pipeline has no jobs: the selection '
                      'matched no test')
    out['stages'] = [*out.get('stages', []), VERDICT_STAGE]
    if places.site:
        # the jobs' $HPCVAL_SITE: the site folder of this run, unless the
        # CI's own variables say otherwise
        out['variables'] = {**out.get('variables', {}),
                            paths.SITE_VAR: places.site}
    system = [o for o in options if o.startswith('--system=')]
    out[VERDICT_JOB] = {
        'stage': VERDICT_STAGE,
        # runs after failed jobs too: it says which figure failed, and
        # its exit status is the pipeline's
        'when': 'always',
        'script': [' '.join(['hpcval', 'verdict',
                             *map(shlex.quote, system),
                             *map(shlex.quote, reports)])],
    }
    return out


def _command(line, options, places):
    """One job's ReFrame command line as ``hpcval run``."""
    words = line.split()
    if not words or words[0] != 'reframe':
        raise CiError(f'unexpected job command in ReFrame\'s pipeline: '
                      f'{line!r}')
    out, rest = ['hpcval', 'run'], iter(words[1:])
    for word in rest:
        if word == '-C':
            extra = [p for p in next(rest).split(':')
                     if p and os.path.abspath(p) != places.config]
            out += [f'-C {places.shown(p, "-C")}' for p in extra]
        elif word == '-c':
            out.append(f'-c {places.shown(next(rest), "-c")}')
        else:
            out.append(_word(word))
    return ' '.join([*out, *map(shlex.quote, options)])


_CI_VARIABLE = re.compile(r'\$\{CI_[A-Z_]+\}')


def _word(word):
    """A word of ReFrame's command quoted, ``${CI_...}`` left to the shell."""
    parts = _CI_VARIABLE.split(word)
    found = _CI_VARIABLE.findall(word)
    return ''.join(shlex.quote(p) + v if p else v
                   for p, v in zip(parts, [*found, ''])) or "''"


def dump(pipeline):
    return yaml.safe_dump(pipeline, sort_keys=False, width=1 << 16,
                          default_flow_style=False)
