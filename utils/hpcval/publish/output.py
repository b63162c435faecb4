"""Writing output files that never follow a link to another file."""
import contextlib
import os
import stat
import tempfile


class OutputRefused(OSError):
    """An output path cannot be written; the message names it and why."""


def check_folder(folder):
    """Refuse an output folder that is a link or not a folder; create it."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        try:
            os.makedirs(folder)
        except OSError as err:
            raise OutputRefused(f'{folder}: cannot create the output folder:'
                                f' {err.strerror}') from None
        return
    if stat.S_ISLNK(info.st_mode):
        raise OutputRefused(f'{folder} is a symbolic link: outputs never '
                            f'follow one; give the folder itself')
    if not stat.S_ISDIR(info.st_mode):
        raise OutputRefused(f'{folder} exists and is not a folder: give a '
                            f'folder for the outputs')


def write(path, data, force=False):
    """Write ``data`` to a new ``path`` (``force``: renamed over a file)."""
    with contextlib.suppress(FileNotFoundError):    # a new name: all is well
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            raise OutputRefused(f'{path} is a symbolic link: not written '
                                f'(outputs never follow one, --force or not)')
        if not stat.S_ISREG(mode):
            raise OutputRefused(f'{path} is not a regular file: not written')
        if not force:
            raise FileExistsError(f'{path} exists (use --force to '
                                  f'overwrite)')
    folder = os.path.dirname(path) or '.'
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix='.hpcval-',
                                   suffix='.tmp')
    except OSError as err:
        raise OutputRefused(f'{path}: cannot write: {err.strerror}') \
            from None
    try:
        with os.fdopen(fd, 'wb') as fp:
            fp.write(data.encode('utf-8') if isinstance(data, str) else data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        if force:
            os.replace(tmp, path)       # renames over a link, never through
        else:
            os.link(tmp, path)          # fails if the name appeared meanwhile
            os.unlink(tmp)
        tmp = None
    except FileExistsError:
        raise FileExistsError(f'{path} exists (use --force to overwrite)'
                              ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
