"""Debug dumps (``ASP_DUMP_DIR``) written safely: never through a symbolic link, never into a
folder or file another user owns.

``write_dump(root, folder, name, text)`` writes ``root/folder/name``. ``root`` and ``folder``
are created (mode 0700) if missing and must be real folders owned by the current user; the
file is opened relative to the folder's descriptor without following links, and must be a
regular file of ours with no other hard link. Anything else raises ``UnsafePath`` naming the
path. The folders are held open while the file is written, so a link swapped in after the
check is never followed. Folders above ``root`` are the user's own path, created as given.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import UnsafePath


def write_dump(root: Path, folder: str, name: str, text: str) -> Path:
    """Write ``text`` to ``root/folder/name`` (see the module); returns that path."""
    for part in (folder, name):
        if not part or "/" in part or part in (".", ".."):
            raise ValueError(f"not a plain file or folder name: {part!r}")
    root = Path(root)
    if not os.path.lexists(root):
        root.parent.mkdir(parents=True, exist_ok=True)
    root_fd = _open_own_dir(str(root), None, root)
    try:
        folder_fd = _open_own_dir(folder, root_fd, root / folder)
        try:
            _write_file(name, folder_fd, root / folder / name, text.encode("utf-8"))
        finally:
            os.close(folder_fd)
    finally:
        os.close(root_fd)
    return root / folder / name


def _open_own_dir(name: str, dir_fd: int | None, shown: Path) -> int:
    """A descriptor of folder ``name`` (relative to ``dir_fd``), created 0700 if missing."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        if _is_link(name, dir_fd):
            raise UnsafePath(f"refusing to dump into {shown}: it is a symbolic link") from None
        raise
    try:
        _check_mine(fd, shown)
    except UnsafePath:
        os.close(fd)
        raise
    return fd


def _write_file(name: str, dir_fd: int, shown: Path, data: bytes) -> None:
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)
    except OSError:
        if _is_link(name, dir_fd):
            raise UnsafePath(f"refusing to write {shown}: it is a symbolic link") from None
        raise
    try:
        st = _check_mine(fd, shown)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise UnsafePath(f"refusing to write {shown}: not a regular file with one link")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _is_link(name: str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _check_mine(fd: int, shown: Path) -> os.stat_result:
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        raise UnsafePath(f"refusing to dump into {shown}: owned by uid {st.st_uid}, not by you "
                         f"(uid {os.getuid()})")
    return st
