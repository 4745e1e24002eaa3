"""examples.__main__: the main job runs the examples specialized and reports what ran."""

from examples.__main__ import main


def test_main_job_quick(capsys):
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "CPU cores available" in out and "ran on c" in out and "identical" in out
