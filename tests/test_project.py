"""Project hygiene a user relies on: the README's commands are the ones CI runs."""

import re

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

