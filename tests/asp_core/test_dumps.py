"""dumps: ASP_DUMP_DIR is never written through a symbolic link nor into another user's folder."""

import os
import stat
import warnings

import pytest

from asp_core.config import Config
from asp_core.dumps import write_dump
from asp_core.errors import UnsafePath
from asp_core.specializer import Specializer

needs_root = pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user "
                                "needs root")


def test_writes_private_folders_and_file(tmp_path):
    path = write_dump(tmp_path / "a" / "dump", "kernel", "nest0.c", "int x;\n")
    assert path.read_text() == "int x;\n"
    assert stat.S_IMODE((tmp_path / "a" / "dump" / "kernel").stat().st_mode) == 0o700
    assert write_dump(tmp_path / "a" / "dump", "kernel", "nest0.c", "y").read_text() == "y"


@pytest.mark.parametrize("where", ["root", "folder", "file"])
def test_symbolic_links_are_never_followed(tmp_path, where):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "nest0.c").write_text("precious")
    root = tmp_path / "dump"
    if where == "root":
        os.symlink(victim, root)
    else:
        (root / "kernel").mkdir(parents=True)
        if where == "folder":
            os.rmdir(root / "kernel")
            os.symlink(victim, root / "kernel")
        else:
            os.symlink(victim / "nest0.c", root / "kernel" / "nest0.c")
    with pytest.raises(UnsafePath, match="symbolic link"):
        write_dump(root, "kernel", "nest0.c", "overwritten")
    assert (victim / "nest0.c").read_text() == "precious"
    assert sorted(p.name for p in victim.iterdir()) == ["nest0.c"]


def test_hard_link_is_refused(tmp_path):
    (tmp_path / "dump" / "kernel").mkdir(parents=True)
    (tmp_path / "precious").write_text("precious")
    os.link(tmp_path / "precious", tmp_path / "dump" / "kernel" / "nest0.c")
    with pytest.raises(UnsafePath, match="one link"):
        write_dump(tmp_path / "dump", "kernel", "nest0.c", "overwritten")
    assert (tmp_path / "precious").read_text() == "precious"


@needs_root
@pytest.mark.parametrize("whose", ["root", "folder", "file"])
def test_another_users_folder_or_file_is_refused(tmp_path, whose):
    root = tmp_path / "dump"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "nest0.c").write_text("theirs")
    target = {"root": root, "folder": root / "kernel", "file": root / "kernel" / "nest0.c"}[whose]
    os.chown(target, 65534, 65534)
    with pytest.raises(UnsafePath, match="owned by uid 65534"):
        write_dump(root, "kernel", "nest0.c", "mine")
    assert (root / "kernel" / "nest0.c").read_text() == "theirs"


def test_names_must_be_plain():
    with pytest.raises(ValueError):
        write_dump("/tmp", "..", "x", "")
    with pytest.raises(ValueError):
        write_dump("/tmp", "k", "a/b", "")


class Toy(Specializer):
    backends = ("python",)


def test_specializer_skips_an_unsafe_dump_with_a_warning(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    os.symlink(victim, tmp_path / "dump")
    spec = Toy(lambda x: x, config=Config(), dump_dir=tmp_path / "dump")
    with pytest.warns(RuntimeWarning, match="not dumping stage.txt.*symbolic link"):
        spec.dump("stage.txt", "text")
    assert list(victim.iterdir()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert spec(3) == 3  # the call itself is not affected
