"""Whether hpcval may load code from a place or start root daemons in it:
the trust rule of docs/security.md (owner root or the running user, not
writable by group or others, every folder above too)."""
import os
import stat

#: entries looked at under one folder at most: a site folder holds tens
_MAX_ENTRIES = 20000


class UntrustedPath(ValueError):
    """A place hpcval will not load from or write into, and why."""


def _check(path, st, above=False):
    """UntrustedPath unless ``path`` (its lstat ``st``) is trusted."""
    if st.st_uid not in (0, os.geteuid()):
        raise UntrustedPath(f'{path} is owned by uid {st.st_uid}, not by '
                            f'root or the running user (uid {os.geteuid()})')
    if stat.S_ISLNK(st.st_mode):
        return
    # a sticky folder above: what is in it is checked on its own
    if st.st_mode & 0o022 and not (above and stat.S_ISDIR(st.st_mode) and
                                   st.st_mode & stat.S_ISVTX):
        raise UntrustedPath(f'{path} is writable by group or others (mode '
                            f'{stat.S_IMODE(st.st_mode):04o})')


def check_path(path, _depth=0, shared=False):
    """UntrustedPath unless ``path`` and every folder above it are trusted."""
    if _depth > 40:
        raise UntrustedPath(f'{path}: too many symbolic links')
    steps = ['', *os.path.abspath(path).split(os.sep)[1:]]
    current = os.sep
    for i, part in enumerate(steps):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except OSError as err:
            raise UntrustedPath(f'{current}: {err.strerror}') from None
        above = shared or i < len(steps) - 1
        _check(current, st, above)
        if stat.S_ISLNK(st.st_mode):
            check_path(os.path.realpath(current), _depth + 1, above)


def check_tree(folder):
    """check_path(folder), and every file and folder under it trusted."""
    check_path(folder)
    seen = 0
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            seen += 1
            if seen > _MAX_ENTRIES:
                raise UntrustedPath(f'{folder}: more than {_MAX_ENTRIES} '
                                    f'entries')
            path = os.path.join(top, name)
            st = os.lstat(path)
            _check(path, st)
            if stat.S_ISLNK(st.st_mode):
                check_path(os.path.realpath(path))


def own_folder(path, mode=0o700):
    """``path`` as a trusted folder of the running user, made if missing."""
    path = os.path.abspath(path)
    check_path(os.path.dirname(path), shared=True)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UntrustedPath(f'{path} is a symbolic link or not a folder')
    if st.st_uid != os.geteuid():
        raise UntrustedPath(f'{path} is owned by uid {st.st_uid}, not by the '
                            f'running user')
    _check(path, st)
    return path


def write_new(path, data, mode=0o644):
    """``data`` as the new file ``path`` with ``mode``, never via a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 mode)
    with os.fdopen(fd, 'wb') as fp:
        fp.write(data if isinstance(data, bytes) else data.encode())
