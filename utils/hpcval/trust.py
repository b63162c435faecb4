"""Whether hpcval may load code or configuration from a place, or start
root daemons in it: the rule sudo applies to sudoers and sshd's StrictModes
to authorized_keys.

A file or folder is trusted when it is owned by root or the running user
and is not writable by group or others, and so is every folder above it;
a world-writable folder with the sticky bit (``/tmp``) may be above it,
since nobody else can rename or remove what is in it, but is never itself
trusted: anyone may add a file to it (a site folder of mode 1777 would
run anyone's module).  Symbolic links on
the way are followed only when the link itself is owned by root or the
running user; where they lead is checked the same way.
"""
import os
import stat

#: entries looked at under one folder at most: a site folder holds tens
_MAX_ENTRIES = 20000


class UntrustedPath(ValueError):
    """A place hpcval will not load from or write into; the message names
    the path, its owner or mode, and why."""


def _owners(uid):
    return {0, os.geteuid() if uid is None else uid}


def _why(path, st, uid, above=False):
    """Why ``path`` (its lstat ``st``) is not trusted, or ''; ``above``:
    it is a folder above what is checked, where a sticky one will do."""
    if st.st_uid not in _owners(uid):
        return (f'{path} is owned by uid {st.st_uid}, not by root or the '
                f'running user (uid {os.geteuid() if uid is None else uid})')
    if stat.S_ISLNK(st.st_mode):
        return ''
    if st.st_mode & 0o022:
        if above and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX:
            return ''       # sticky: what is in it is checked on its own
        return (f'{path} is writable by group or others (mode '
                f'{stat.S_IMODE(st.st_mode):04o})')
    return ''


def check_path(path, uid=None, _depth=0, shared=False):
    """UntrustedPath unless ``path`` and every folder above it are trusted
    (see the module); ``shared``: ``path`` is a folder to make one's own
    folder in, which may be a sticky shared one (/tmp)."""
    if _depth > 40:
        raise UntrustedPath(f'{path}: too many symbolic links')
    path = os.path.abspath(path)
    parts = path.split(os.sep)[1:]
    current = os.sep
    steps = ['', *parts]
    for i, part in enumerate(steps):
        current = os.path.join(current, part) if part else current
        try:
            st = os.lstat(current)
        except OSError as err:
            raise UntrustedPath(f'{current}: {err.strerror}') from None
        above = shared or i < len(steps) - 1
        why = _why(current, st, uid, above)
        if why:
            raise UntrustedPath(why)
        if stat.S_ISLNK(st.st_mode):
            check_path(os.path.realpath(current), uid, _depth + 1, above)


def check_tree(folder, uid=None):
    """check_path(folder), and every file and folder under it trusted on
    its own (links: where they lead too)."""
    check_path(folder, uid)
    seen = 0
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            seen += 1
            if seen > _MAX_ENTRIES:
                raise UntrustedPath(f'{folder}: more than {_MAX_ENTRIES} '
                                    f'entries')
            path = os.path.join(top, name)
            st = os.lstat(path)
            why = _why(path, st, uid)
            if why:
                raise UntrustedPath(why)
            if stat.S_ISLNK(st.st_mode):
                check_path(os.path.realpath(path), uid)


def own_folder(path, mode=0o700, uid=None):
    """``path`` as a folder of the running user that nobody else can write:
    made with ``mode`` where it is missing (the folders above it must be
    trusted), else an existing one accepted only when it is not a symbolic
    link, belongs to the running user and is trusted.  Returns the
    absolute path."""
    path = os.path.abspath(path)
    check_path(os.path.dirname(path), uid, shared=True)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UntrustedPath(f'{path} is a symbolic link or not a folder')
    if st.st_uid != (os.geteuid() if uid is None else uid):
        raise UntrustedPath(f'{path} is owned by uid {st.st_uid}, not by the '
                            f'running user')
    why = _why(path, st, uid)
    if why:
        raise UntrustedPath(why)
    return path


def write_new(path, data, mode=0o644):
    """``data`` (bytes or text, UTF-8) as the new file ``path``, created
    with ``mode`` from its first byte: never through a symbolic link, never
    over an existing file, never writable by others whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 mode)
    with os.fdopen(fd, 'wb') as fp:
        fp.write(data if isinstance(data, bytes) else data.encode())
