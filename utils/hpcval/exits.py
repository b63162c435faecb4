"""The exit statuses every ``hpcval`` command keeps (docs/verdict.md,
"Exit statuses"), and the argument parser that keeps to them."""
import argparse
import sys

from hpcval import __version__

OK, FAILED, INCOMPLETE, INPUT = 0, 1, 2, 3

_ERROR = '3 input or usage error, named in one line'

#: per command, the meaning of each status it gives (its --help epilog)
STATUSES = {
    'references': ['0 every file valid, each entry matching a test',
                   '1 a file or entry invalid (named)', _ERROR],
    'report': ['0 the table (and plots) written',
               '2 nothing selected, or no run recorded the --group-by key',
               f'{_ERROR}; an output file refused'],
    'calibrate': ['0 the diff printed (written with --write), or nothing '
                  'to calibrate',
                  f'{_ERROR}; a monitoring server that does not answer; '
                  f'a file that cannot be written (nothing written)'],
    'verdict': ['0 healthy', '1 failed (each failure named)',
                '2 incomplete: skipped, unjudged or a node not tested, not '
                'validated', f'{_ERROR}; a node screen whose job failed '
                'alike on every node',
                '4 a node screen passed at the wider bound it states '
                '(docs/screening.md)'],
    'diff': ['0 nothing moved',
             '1 a figure moved, or the newest run failed without figures',
             '2 incomplete: no passing baseline, too few runs or no '
             'calibrated value to judge by; a newest input without figures',
             f'{_ERROR}; a --baseline that is no time, report or '
             f'calibration'],
    'paths': ['0 printed', _ERROR],
    'run': ['0, 1, 2, 4: the verdict of the run ReFrame made (2 also where '
            'ReFrame failed and the verdict passed; 0 where it ran nothing '
            'to judge and exited 0)',
            f'{_ERROR}; a refused system, mode or empty selection; '
            f'ReFrame failing with no run to judge'],
    'site': ['0 the site folder written (or printed with --dry-run)',
             f'{_ERROR}; a folder refused, Slurm\'s output unusable '
             f'(nothing written)'],
}


#: ``hpcval --help``'s epilog: the contract, each command's --help its part
CONTRACT = ('exit status: 0 healthy or nothing moved, 1 failed or moved, '
            '2 incomplete, 3 input or usage error (each command\'s --help '
            'says which it gives)')


def epilog(command):
    return 'exit status:\n' + '\n'.join(f'  {line}'
                                        for line in STATUSES[command])


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors at INPUT (its own 2 is 'incomplete')."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(INPUT, f'{self.prog}: error: {message}\n')


class Version(argparse.Action):
    """``--version``: hpcval's and ReFrame's, ReFrame imported only then."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0,
                         help='print hpcval\'s and ReFrame\'s versions')

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            import reframe
            theirs = reframe.VERSION
        except ImportError:
            theirs = 'not installed'
        parser.exit(OK, f'hpcval {__version__}\n'
                        f'ReFrame {theirs}\n')
