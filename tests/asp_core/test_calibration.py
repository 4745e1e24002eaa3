"""calibration: records stored per machine, privately and atomically; anything missing, corrupt,
foreign or unsafe is ignored (None, the reason logged), never raised."""

import json
import logging
import os
import stat

import pytest

from asp_core import calibration as cal
from asp_core.errors import CacheError

HERE = cal.MachineIdentity(cpu="x86_64, Test CPU, 3 feature flags", cores=4,
                           compiler="gcc (Test) 1.0", cflags="-O3", key="a" * 64)
OTHER = cal.MachineIdentity(cpu="aarch64, Other CPU, 9 feature flags", cores=64,
                            compiler="clang 17", cflags="-O2", key="b" * 64)
PARAMS = {"speed": 1.5, "table": {"1": 2.0}}


def parse(data):
    if not isinstance(data.get("speed"), float):
        raise ValueError("no speed")
    return data


@pytest.fixture
def where(tmp_path):
    return tmp_path / "cache"


def store(where, params=PARAMS, machine=HERE, version=1):
    return cal.store("model", version, params, note="quick", machine=machine, cache_dir=where)


def load(where, version=1, parse_=parse):
    return cal.load("model", version, parse_, machine=HERE, cache_dir=where)


def test_round_trip(where):
    written = store(where)
    found = load(where)
    assert found is not None and found.params == PARAMS and found.note == "quick"
    assert found.path == written.path == where / "calibration" / f"model-{'a' * 16}.json"
    assert found.created == written.created and found.date.endswith("UTC")
    text = found.describe()
    assert "model calibrated on" in text and "Test CPU" in text and str(found.path) in text
    assert stat.S_IMODE(os.stat(found.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(found.path.parent).st_mode) == 0o700


def test_nothing_stored_is_none(where, caplog):
    with caplog.at_level(logging.INFO, "asp.calibration"):
        assert load(where) is None
    assert "none stored" in caplog.text


def test_each_machine_has_its_own_record(where):
    store(where, {"speed": 1.0}, machine=HERE)
    store(where, {"speed": 2.0}, machine=OTHER)
    assert load(where).params == {"speed": 1.0}
    assert cal.load("model", 1, parse, machine=OTHER, cache_dir=where).params == {"speed": 2.0}


def _rewrite(path, change):
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize("damage", [
    lambda p: p.write_text("{not json"),
    lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),   # truncated
    lambda p: p.write_bytes(b""),
    lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),                        # not UTF-8
    lambda p: p.write_text("[1, 2, 3]"),
    lambda p: p.write_text("[" * 200_000),                                 # nested too deep
    lambda p: _rewrite(p, lambda r: r.update(format=99)),                  # envelope version
    lambda p: _rewrite(p, lambda r: r.update(version=2)),                  # caller's version
    lambda p: _rewrite(p, lambda r: r.update(name="other")),
    lambda p: _rewrite(p, lambda r: r.pop("created")),
    lambda p: _rewrite(p, lambda r: r.update(params=[1.5])),
    lambda p: _rewrite(p, lambda r: r.update(params={"speed": "fast"})),   # parse rejects
    lambda p: _rewrite(p, lambda r: r["machine"].update(key="b" * 64)),    # another machine's
    lambda p: _rewrite(p, lambda r: r.update(machine="x86")),
], ids=["not-json", "truncated", "empty", "not-utf8", "not-object", "deep", "format", "version",
        "name", "no-date", "params-list", "rejected", "foreign-key", "machine-string"])
def test_damaged_record_is_ignored_then_replaced(where, damage, caplog):
    path = store(where).path
    damage(path)
    with caplog.at_level(logging.WARNING, "asp.calibration"):
        assert load(where) is None
    assert "ignoring" in caplog.text
    store(where)                       # the caller measures again: the record is replaced
    assert load(where).params == PARAMS


def test_record_of_another_machine_copied_in_is_foreign(where):
    other = store(where, machine=OTHER).path
    here = where / "calibration" / f"model-{'a' * 16}.json"
    here.write_bytes(other.read_bytes())
    os.chmod(here, 0o600)
    assert load(where) is None


def test_parse_errors_of_each_kind_are_ignored(where):
    store(where)

    def key_error(data):
        return data["missing"]

    def type_error(data):
        return len(data["speed"])

    assert load(where, parse_=key_error) is None
    assert load(where, parse_=type_error) is None


def test_symbolic_link_is_not_followed(where, tmp_path):
    path = store(where).path
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    os.chmod(target, 0o600)
    path.unlink()
    path.symlink_to(target)
    assert load(where) is None
    store(where, {"speed": 9.0})       # replaces the link itself, never the file it names
    assert not path.is_symlink() and load(where).params == {"speed": 9.0}
    assert json.loads(target.read_text())["params"] == PARAMS


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a file to another user")
def test_record_owned_by_another_user_is_ignored_then_replaced(where, caplog):
    path = store(where).path
    os.chown(path, 65534, 65534)
    with caplog.at_level(logging.WARNING, "asp.calibration"):
        assert load(where) is None
    assert "owned by uid 65534" in caplog.text
    store(where)
    assert os.stat(path).st_uid == os.getuid() and load(where) is not None


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")
def test_folder_owned_by_another_user_is_refused(where):
    path = store(where).path
    os.chown(path.parent, 65534, 65534)
    assert load(where) is None
    with pytest.raises(CacheError):
        store(where)


def test_record_writable_by_others_is_ignored(where):
    path = store(where).path
    os.chmod(path, 0o666)
    assert load(where) is None


def test_folder_that_is_a_link_is_refused(where, tmp_path):
    path = store(where).path
    real = tmp_path / "real"
    path.parent.rename(real)
    path.parent.symlink_to(real)
    assert load(where) is None
    with pytest.raises(CacheError):
        store(where)


def test_not_a_regular_file_is_ignored(where):
    path = store(where).path
    path.unlink()
    os.mkfifo(path)                    # a reader must not block on it
    assert load(where) is None
    path.unlink()
    path.mkdir()
    assert load(where) is None


def test_oversized_record_is_ignored(where):
    path = store(where).path
    with open(path, "ab") as f:
        f.write(b" " * (cal.MAX_BYTES + 1))
    assert load(where) is None


def test_unusable_cache_folder_is_none_on_load_and_cache_error_on_store(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cal.load("model", 1, parse, machine=HERE, cache_dir=blocker) is None
    with pytest.raises(CacheError):
        store(blocker)


def test_write_is_atomic(where, monkeypatch):
    store(where)
    path = load(where).path

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cal.os, "replace", fail)
    with pytest.raises(CacheError, match="No space left"):
        store(where, {"speed": 2.0})
    monkeypatch.undo()
    assert load(where).params == PARAMS                # the old record, whole
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]   # no temporary left


def test_interrupted_write_leaves_the_old_record(where, monkeypatch):
    store(where)
    real_fsync = os.fsync

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(cal.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store(where, {"speed": 2.0})
    monkeypatch.setattr(cal.os, "fsync", real_fsync)
    assert load(where).params == PARAMS
    assert len(list((where / "calibration").iterdir())) == 1


def test_stale_temporary_files_are_removed(where):
    folder = store(where).path.parent
    stale, fresh = folder / ".model-x.old.tmp", folder / ".model-x.new.tmp"
    stale.write_text("{")
    fresh.write_text("{")
    old = stale.stat().st_mtime - cal.STALE_TMP_SECONDS - 1
    os.utime(stale, (old, old))
    store(where)
    assert not stale.exists() and fresh.exists()


def test_names_are_checked(where):
    with pytest.raises(ValueError):
        cal.path_of("../escape", HERE, where)
    assert cal.load("../escape", 1, parse, machine=HERE, cache_dir=where) is None


def test_not_a_number_is_refused_on_store(where):
    with pytest.raises(ValueError):
        store(where, {"speed": float("nan")})
    assert load(where) is None


def test_remove(where):
    store(where)
    assert cal.remove("model", machine=HERE, cache_dir=where)
    assert not cal.remove("model", machine=HERE, cache_dir=where)
    assert load(where) is None


def test_machine_identity_names_this_machine():
    from asp_core.platform import cpu_cores

    first, second = cal.machine_identity(), cal.machine_identity()
    assert first == second and len(first.key) == 64 and first.cores == cpu_cores()
    assert first.compiler and first.cpu in first.describe()
