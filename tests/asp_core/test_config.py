"""config: settings come from an explicit environment mapping, not from import-time state."""

from pathlib import Path

from asp_core.config import DEFAULT_CFLAGS, Config


def test_defaults():
    cfg = Config.from_env({})
    assert cfg == Config() and cfg.cflags == DEFAULT_CFLAGS and cfg.backend is None


def test_every_variable():
    cfg = Config.from_env({"ASP_BACKEND": "Python", "ASP_DISABLE_JIT": "1",
                           "ASP_CACHE_DIR": "/tmp/c", "ASP_DUMP_DIR": "/tmp/d",
                           "ASP_CFLAGS": "-O2 -g", "ASP_CC": "clang", "ASP_NUM_THREADS": "3"})
    assert cfg.backend == "python" and cfg.disable_jit
    assert cfg.cache_dir == Path("/tmp/c") and cfg.dump_dir == Path("/tmp/d")
    assert cfg.cflags == ("-O2", "-g") and cfg.cc == "clang" and cfg.num_threads == 3


def test_thread_count_falls_back_to_openmp_variable_and_ignores_junk():
    assert Config.from_env({"OMP_NUM_THREADS": "4,2"}).num_threads == 4
    assert Config.from_env({"OMP_NUM_THREADS": "many"}).num_threads is None
    assert Config.from_env({"ASP_DISABLE_JIT": "0"}).disable_jit is False


def test_with_returns_a_changed_copy():
    cfg = Config()
    assert cfg.with_(backend="c").backend == "c" and cfg.backend is None


def test_background_calibration_is_on_unless_turned_off():
    assert Config.from_env({}).calibrate and Config.from_env({"ASP_CALIBRATE": "1"}).calibrate
    for off in ("0", "off", "no", "false", " OFF "):
        assert not Config.from_env({"ASP_CALIBRATE": off}).calibrate
