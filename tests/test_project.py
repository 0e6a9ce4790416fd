"""Project hygiene a user relies on: the README's commands are the ones CI runs."""

import re
import shutil
import subprocess
import sys

from conftest import ROOT


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_the_readme_test_command_exactly():
    install_and_run, install_and_test = readme_commands()[:2]
    assert "pytest" in install_and_test and "videvent run sample_videos/" in install_and_run
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install_and_test in ci_lines


def test_readme_demo_clip_exists():
    install_and_run = readme_commands()[0]
    clip = re.search(r"videvent run (\S+)", install_and_run).group(1)
    assert (ROOT / clip).is_file()



def test_readme_python_example_runs_as_written(tmp_path):
    api = (ROOT / "README.md").read_text().split("## Python API", 1)[1]
    example = re.search(r"```python\n(.+?)\n```", api, re.S).group(1)
    # Run from a copy of the repository's layout, so its output folder lands in tmp_path.
    (tmp_path / "sample_videos").mkdir()
    shutil.copy(ROOT / "sample_videos" / "person_visit.mp4", tmp_path / "sample_videos")
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "frame 219 ok" in result.stdout
    assert (tmp_path / "person_visit.out" / "events.json").is_file()


def test_readme_tables_are_not_cut_by_blank_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    for before, blank, after in zip(lines, lines[1:], lines[2:]):
        assert not (before.startswith("|") and not blank.strip() and after.startswith("|")), before


def test_top_level_help_gives_each_command_a_whole_sentence():
    result = subprocess.run([sys.executable, "-m", "videvent", "--help"], capture_output=True,
                            text=True, timeout=60)
    commands = result.stdout.split("Commands:", 1)[1].strip().splitlines()
    assert [line.split()[0] for line in commands] == ["batch", "export", "report", "run",
                                                      "watch"]
    for line in commands:
        assert line.endswith(".") and not line.endswith("..."), line


def loaded_after(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter has loaded after ``statement``."""
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    return {name.split(".")[0] for name in result.stdout.split()}


def test_the_maths_loads_no_video_plotting_or_command_line_code():
    assert not loaded_after("import videvent.rpca") & {"av", "cv2", "matplotlib", "click"}
    # The package's face loads a name's module when it is first used, and only then.
    assert "cv2" not in loaded_after("import videvent; videvent.__version__")
    assert "cv2" in loaded_after("from videvent import detect")


def test_every_public_name_resolves_and_a_wrong_one_says_so():
    import videvent

    for name in videvent.__all__:
        assert getattr(videvent, name) is not None
    assert set(videvent.__all__) <= set(dir(videvent))
    try:
        videvent.no_such_name
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("a missing name must raise AttributeError")


def test_the_version_is_declared_once():
    from videvent._version import __version__

    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    result = subprocess.run([sys.executable, "-m", "videvent", "--version"],
                            capture_output=True, text=True, timeout=60)
    assert __version__ in result.stdout
