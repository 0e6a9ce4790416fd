"""Project hygiene a user relies on: the README's commands are the ones CI runs, and the
documentation holds together."""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, wait_until


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def markdown_files() -> list:
    """The project's own Markdown: the README, docs/, the benchmarks' and notebooks' pages,
    the changelog."""
    return [path for path in sorted(ROOT.rglob("*.md"))
            if not {".git", ".venv", "node_modules"} & set(path.relative_to(ROOT).parts)
            and not path.name.endswith(".NOTICE.md")]


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


def test_the_readmes_shown_run_prints_what_it_shows(tmp_path):
    """Each ``$ videvent ...`` transcript in the README, run as shown (from a copy of the
    repository's sample clips), prints exactly its lines: the start line (stderr) first."""
    readme = (ROOT / "README.md").read_text()
    shown = re.findall(r"```text\n\$ (videvent [^\n]+)\n(.*?)\n```", readme, re.S)
    assert shown
    shutil.copytree(ROOT / "sample_videos", tmp_path / "sample_videos")
    for command, output in shown:
        result = subprocess.run([sys.executable, "-m", *command.split()], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert (result.stderr + result.stdout).splitlines() == output.splitlines(), command


def free_port(kind: int) -> int:
    """A port of 127.0.0.1 free a moment ago (``socket.SOCK_STREAM`` or ``SOCK_DGRAM``), for
    the servers that cannot report one they chose (mosquitto; a UDP stream's receiver)."""
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


LIVE_TOOLS = ("ffmpeg", "mosquitto", "mosquitto_sub")
# Debian installs the broker in /usr/sbin, which only an administrator's PATH holds.
LIVE_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])


@pytest.mark.skipif(not all(shutil.which(tool, path=LIVE_PATH) for tool in LIVE_TOOLS),
                    reason="ffmpeg, mosquitto and mosquitto-clients are not all installed")
def test_the_readmes_camera_to_try_it_on_reaches_the_dashboard_and_home_assistant(tmp_path):
    """The README's five live commands, run as written from a copy of the repository's sample
    clips, the installed ``videvent`` on the PATH as after the README's install; only their
    ports are others (free ones, the dashboard's chosen by itself), so that the suite runs
    beside whatever has 5000, 1883 or 8080. The camera, the broker and the watch run in the
    background, as in their terminals; the dashboard answers at the address printed, with the
    camera live; Home Assistant's three discovery messages come, and the motion sensor goes
    ON when she comes in."""
    section = (ROOT / "README.md").read_text().split("## A camera to try it on", 1)[1]
    block = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1)
    commands = block.splitlines()
    assert len(commands) == 5, commands
    stream, broker = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    ports = {"udp://127.0.0.1:5000": f"udp://127.0.0.1:{stream}", "-p 1883": f"-p {broker}",
             "127.0.0.1:1883": f"127.0.0.1:{broker}", "--serve 8080": "--serve 0"}
    for written in ports:
        assert written in block, written
    for written, used in ports.items():
        commands = [command.replace(written, used) for command in commands]
    camera, mosquitto, watch, discovery, motion = map(shlex.split, commands)
    assert [camera[0], mosquitto[0], watch[:2], discovery[0], motion[0]] == [
        "ffmpeg", "mosquitto", ["videvent", "watch"], "mosquitto_sub", "mosquitto_sub"]
    shutil.copytree(ROOT / "sample_videos", tmp_path / "sample_videos")
    # As after the README's install: the virtual environment's commands first on the PATH.
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{LIVE_PATH}"}

    def start(command, **pipes) -> subprocess.Popen:
        return subprocess.Popen(command, cwd=tmp_path, env=environment, text=True,
                                stdin=subprocess.DEVNULL, **{"stdout": subprocess.DEVNULL,
                                                             "stderr": subprocess.DEVNULL,
                                                             **pipes})

    running = []
    try:
        running.append(start(camera))
        running.append(start(mosquitto))
        deadline = time.monotonic() + 60
        while True:                                   # the broker takes a moment to listen
            try:
                socket.create_connection(("127.0.0.1", broker), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and running[1].poll() is None
                time.sleep(0.1)
        watching = start(watch, stderr=subprocess.PIPE)
        running.append(watching)
        line = watching.stderr.readline()
        found = re.fullmatch(r"dashboard: (http://127\.0\.0\.1:\d+/)\n", line)
        assert found, line
        dashboard = found.group(1)
        with urllib.request.urlopen(dashboard, timeout=10) as response:
            assert response.status == 200 and "videvent" in response.read().decode()
        wait_until(lambda: camera_status(dashboard) == "connected", 60, "the camera live")
        told = subprocess.run(discovery, cwd=tmp_path, env=environment, capture_output=True,
                              text=True, timeout=60)
        assert told.returncode == 0, told.stderr
        topics = sorted(line.split(" ", 1)[0] for line in told.stdout.splitlines())
        assert topics == [f"homeassistant/{component}/videvent_demo/{key}/config"
                          for component, key in (("binary_sensor", "motion"),
                                                 ("camera", "snapshot"), ("sensor", "score"))]
        sensor = start(motion, stdout=subprocess.PIPE)
        running.append(sensor)
        states = []
        reader = threading.Thread(target=lambda: states.extend(sensor.stdout), daemon=True)
        reader.start()
        # Retained OFF at once; ON when she comes in, 5 s into each loop of the clip.
        wait_until(lambda: "videvent/demo/motion ON\n" in states, 90, "the motion sensor ON")
        assert states[0] == "videvent/demo/motion OFF\n", states
    finally:
        for process in reversed(running):       # Ctrl-C in each terminal, the last first
            process.send_signal(signal.SIGINT)
        for process in running:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert watching.wait() == 0
    [folder] = tmp_path.glob("videvent-watch-demo-*")
    assert (folder / "events.json").is_file()


def camera_status(dashboard: str) -> str | None:
    """The status the dashboard gives its one camera (None while it does not answer)."""
    try:
        with urllib.request.urlopen(dashboard + "api/cameras", timeout=10) as response:
            [camera] = json.loads(response.read())
    except OSError:
        return None
    return camera["status"]


def test_readme_tables_are_not_cut_by_blank_lines():
    for path in markdown_files():
        lines = path.read_text().splitlines()
        for before, blank, after in zip(lines, lines[1:], lines[2:]):
            assert not (before.startswith("|") and not blank.strip()
                        and after.startswith("|")), (path, before)


def test_every_relative_link_in_the_documentation_leads_somewhere():
    links = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
    for path in markdown_files():
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for target in links.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            assert (path.parent / target).exists(), (path.relative_to(ROOT), target)


def test_the_readme_is_short_and_its_documentation_is_in_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 300
    for page in ("run", "export", "watch", "batch", "api", "guarantees", "how-it-works",
                 "paper"):
        assert f"(docs/{page}.md)" in readme, page


def test_top_level_help_gives_each_command_a_whole_sentence():
    result = subprocess.run([sys.executable, "-m", "videvent", "--help"], capture_output=True,
                            text=True, timeout=60)
    commands = result.stdout.split("Commands:", 1)[1].strip().splitlines()
    assert [line.split()[0] for line in commands] == ["batch", "events", "export", "report",
                                                      "run", "watch"]
    for line in commands:
        assert line.endswith(".") and not line.endswith("..."), line


def help_of(command: str) -> str:
    """``videvent COMMAND --help`` as an 80-column terminal shows it."""
    result = subprocess.run([sys.executable, "-m", "videvent", command, "--help"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("command", ["run", "watch", "batch", "export"])
def test_help_shows_every_option_in_its_group_the_expert_ones_last(command):
    """`--help` in groups (issue 53): the everyday ones first, the detector's expert settings in
    a group of their own at the end; every option in a group (none left to "Other options")
    and shown."""
    from videvent._cli.main import cli

    text = help_of(command)
    sections = [line[:-1] for line in text.splitlines() if line and not line.startswith(" ")
                and line.endswith(":")]
    assert "Other options" not in sections and sections[0] == "Options"
    if command != "export":
        assert sections[-1] == "Detector (expert)" and "Sensitivity" in sections
    for param in cli.commands[command].params:
        if param.param_type_name == "option" and not param.hidden:
            [flag] = [opt for opt in param.opts if opt.startswith("--")][:1]
            assert len(re.findall(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)) >= 1, flag


def test_run_help_fits_its_everyday_options_on_one_screen():
    """Everything before the expert group, the usage line included: 50 lines of a terminal."""
    text = help_of("run")
    everyday = text.split("\nDetector (expert):", 1)[0].rstrip("\n").splitlines()
    assert len(everyday) <= 50, len(everyday)
    for option in ("--threshold", "--export-video", "--add-region", "--start-time"):
        assert option in "\n".join(everyday)
    assert "--projection-dim" not in "\n".join(everyday)


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


def loaded_by_command(*arguments: str) -> set[str]:
    """The top-level modules ``videvent ARGUMENTS`` has loaded when it exits."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
            f"sys.argv = ['videvent', *{list(arguments)!r}]\n"
            "from videvent._cli.entry import main\n"
            "main()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    [line] = [line for line in result.stderr.splitlines() if line.startswith("MODULES ")]
    return {name.split(".")[0] for name in line.split()[1:]}


def test_help_and_a_mistyped_option_load_no_decoder_or_plotting():
    """`videvent --help`, `run --help` and a usage error answer at once: the decoders, OpenCV,
    matplotlib and numpy load only for the work that needs them."""
    heavy = {"av", "cv2", "matplotlib", "numpy"}
    for arguments in (["--help"], ["run", "--help"], ["run", "clip.mp4", "--rank", "0"],
                      ["events", "--help"], ["watch", "--help"]):
        loaded = loaded_by_command(*arguments)
        assert "click" in loaded and not loaded & heavy, (arguments, loaded & heavy)
    assert {"av", "cv2"} <= loaded_by_command("run", "/no/such/clip.mp4")


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
    # The newest version the changelog names is this one (a version that moves with releases).
    headings = re.findall(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == __version__, headings[:2]


# The layers, lowest first: a module may import from its own layer and those below, never from
# one above. The maths at the bottom (arrays in, arrays out); then what every layer shares; the
# stages the data flows through (source -> preprocess -> detector -> segmenter -> sinks), which
# take plain numbers; the settings, which are turned into them; a pass set up from the
# settings, the reader and the session; the engine's one loop and the sinks it feeds (a result
# folder's, alerts, the dashboard); the front ends, each feeding the engine; the command line
# on top.
LAYERS = (
    ("videvent.rpca",),
    ("videvent._version", "videvent.choices", "videvent.status", "videvent.timecode",
     "videvent.atomic"),
    ("videvent.regions", "videvent.sources", "videvent.segmenter", "videvent.synthetic",
     "videvent.kinds"),
    ("videvent.preprocess", "videvent.detectors", "videvent.output"),
    ("videvent.settings",),
    ("videvent.passes", "videvent.reader", "videvent.session"),
    ("videvent.engine", "videvent.sinks", "videvent.alerts", "videvent.dashboard"),
    ("videvent.pipeline", "videvent.export", "videvent.live", "videvent.cameras",
     "videvent.watching", "videvent.chunked", "videvent.batch"),
    ("videvent._cli", "videvent.__main__", "videvent"),
)


def module_imports() -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports: at its top level or
    inside a function, when it runs (the parents of a module imported run first too)."""
    import ast

    files = {}
    for path in (ROOT / "videvent").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "videvent":
                target = node.module
            else:
                continue                                 # another package's
            for alias in node.names:
                module = f"{target}.{alias.name}"
                module = module if module in files else target
                parts = module.split(".")
                found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} & set(files)
        graph[name] = found - {name} - {p for p in found if name.startswith(p + ".")}
    return graph


def layer_of(module: str) -> int:
    for number, members in enumerate(LAYERS):
        if any(module == member or module.startswith(member + ".") for member in members):
            return number
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def test_the_import_graph_goes_one_way_with_no_circle():
    graph = module_imports()
    upward = [(module, imported) for module, imports in graph.items() for imported in imports
              if layer_of(imported) > layer_of(module)]
    assert upward == []
    # No circle: a topological order exists.
    remaining = {module: set(imports) for module, imports in graph.items()}
    while remaining:
        free = [module for module, imports in remaining.items() if not imports]
        assert free, f"import circle among {sorted(remaining)}"
        for module in free:
            del remaining[module]
        for imports in remaining.values():
            imports.difference_update(free)


def test_the_settings_are_turned_into_numbers_in_one_place():
    """Below the front ends, only the pass's set-up (and the sinks of a result folder, which
    it does not build) import the settings: the detector, the session and the engine take
    plain numbers (issue 53)."""
    graph = module_imports()
    front_ends = layer_of("videvent.pipeline")
    readers = {module for module, imports in graph.items() if "videvent.settings" in imports
               and layer_of(module) < front_ends}
    assert readers <= {"videvent.passes", "videvent.sinks"}, readers



def test_the_settings_of_a_run_go_down_a_short_path_and_never_back_up(tmp_path):
    """Follows the ``Settings`` object of a real ``detect`` call: the files whose functions
    receive it, and the calls that climb back into a file already up the call chain (a pass
    prepared, then a sink asking the front end again). Issue 53: at most 8 files, 2 climbs."""
    import videvent
    from videvent.settings import Settings

    settings = Settings()
    chain: list[tuple[object, str]] = []         # the frames holding it, and their files
    files: list[str] = []
    climbs: list[str] = []
    package = str(Path(videvent.__file__).parent)

    def follow(frame, event, _arg):
        name = frame.f_code.co_filename
        if (event == "call" and name.startswith(package)
                and any(value is settings for value in frame.f_locals.values())):
            if name in [held for _, held in chain[:-1]] and name != chain[-1][1]:
                climbs.append(f"{frame.f_code.co_name} in {name}")
            files.extend([] if name in files else [name])
            chain.append((frame, name))
        elif event == "return" and chain and frame is chain[-1][0]:
            chain.pop()

    sys.setprofile(follow)
    try:
        videvent.detect(ROOT / "sample_videos" / "person_visit.mp4", settings,
                        out_dir=tmp_path / "result", plot=False)
    finally:
        sys.setprofile(None)
    assert 3 <= len(files) <= 8 and len(climbs) <= 2, (files, climbs)
def test_the_maths_imports_numpy_and_scipy_only():
    """``videvent/rpca/`` is usable alone: besides its own modules, the standard library,
    numpy and scipy, it imports nothing (not even the rest of videvent)."""
    import ast

    allowed = set(sys.stdlib_module_names) | {"numpy", "scipy"}
    found = set()
    for path in (ROOT / "videvent" / "rpca").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found.add(node.module.split(".")[0])
    assert found - allowed == set() and "numpy" in found


def test_every_front_end_opens_its_source_in_one_place():
    """``passes.open_for`` reads the settings that say how a source is opened (colour,
    decoder, an image sequence's rate): a setting added there serves run, batch, watch and
    export alike."""
    calls = [f"{path.relative_to(ROOT)}:{number}"
             for path in (ROOT / "videvent").rglob("*.py") if "sources" not in path.parts
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "open_source(" in line and "def open_source" not in line]
    assert calls == ["videvent/passes.py:" + calls[0].rsplit(":", 1)[1]] and len(calls) == 1


def test_only_the_engine_scores_frames():
    """``Engine.run`` is the one loop that asks a detector to score a frame: run, batch,
    export, watch and ``--compare`` all feed it, so a frame is scored the same way whatever
    the front end."""
    calls = [f"{path.relative_to(ROOT)}"
             for path in (ROOT / "videvent").rglob("*.py") if "detectors" not in path.parts
             for line in path.read_text().splitlines()
             if "process_frame(" in line and "def process_frame" not in line]
    assert set(calls) == {"videvent/engine.py"}


def test_readme_guarantees_name_the_real_limits_and_the_reverse_proxy():
    """The limits docs/guarantees.md promises are the code's: connections in all and per client, the
    request timeout, the region editor's body and point caps, the MQTT event queue; what is
    redacted; and how to serve the dashboard behind a reverse proxy (what it streams)."""
    from videvent.dashboard import connections, server
    from videvent.output import mqtt
    from videvent.regions import MAX_POINTS

    guarantees = (ROOT / "docs" / "guarantees.md").read_text()
    watch = (ROOT / "docs" / "watch.md").read_text()
    flat = " ".join(guarantees.split())
    assert f"at most {connections.MAX_CONNECTIONS} connections in all" in flat
    assert f"{connections.MAX_PER_CLIENT} from one client address" in flat
    unauthenticated = int(connections.MAX_CONNECTIONS * connections.UNAUTHENTICATED_SHARE)
    assert f"hold at most {unauthenticated} of the {connections.MAX_CONNECTIONS}" in flat
    assert f"within {connections.REQUEST_TIMEOUT_S:g} s" in flat
    assert f"at most {server.MAX_REGION_BODY // 1024} KiB" in flat
    assert f"3 to {MAX_POINTS:,}".replace(",", " ") + " points" in flat
    assert f"{mqtt.EVENT_QUEUE_LENGTH:,}".replace(",", " ") + " messages" in flat
    assert "delivered only once the broker acknowledged it" in flat
    section = " ".join(watch.split("## MQTT", 1)[1].split("\n## ", 1)[0].split())
    assert f"MQTT's keepalive of {mqtt.KEEPALIVE_S} s" in section      # how soon it is noticed
    for redacted in ("password", "query parameter", "VIDEVENT_MQTT_PASSWORD", "token",
                     "constant time"):
        assert redacted in flat, redacted
    dashboard = " ".join(watch.split("## The live dashboard", 1)[1]
                         .split("\n## ", 1)[0].split())
    assert "Behind a reverse proxy" in dashboard and "```nginx" in dashboard
    for fact in ("proxy_pass http://127.0.0.1:", "proxy_buffering off", "/api/stream",
                 "/cameras/N/mjpeg", "X-Forwarded-For", "not trusted", "no WebSocket"):
        assert fact in dashboard, fact
    code = "".join(path.read_text() for path in (ROOT / "videvent/dashboard").rglob("*")
                   if path.suffix in (".py", ".js"))
    assert "text/event-stream" in code and "multipart/x-mixed-replace" in code
    assert "x-forwarded" not in code.lower() and "websocket" not in code.lower()


def test_what_the_readmes_commands_write_in_the_checkout_is_ignored_by_git():
    """The quick start's result folder, an `-d NAME.out` of the examples, a watch's session
    folder beside a sample (issue 29), the camera to try it on's and the event store (issue
    54): none shows up as a change to commit."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    written = ["sample_videos/person_visit.videvent/events.json", "person_visit.out/events.json",
               "sample_videos/videvent-watch-walker-20261127-120000/events.json",
               "videvent-watch-20261127-120000/door/events.json",
               "videvent-watch-demo-20261206-120000/events.json",
               "sample_videos/events.db", "events.db", "events.db-wal"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *written], cwd=ROOT,
                             capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == sorted(written)


# The development clips' names and their sources' (``../shared/datasets/devset``), and the
# paper's WavingTrees sequence: what quality is measured on, never a reason in the code.
# Compared without case, spaces, hyphens or underscores.
MEASURED_ON = ("aboda", "beweging", "i2r", "cdnet", "onebyone", "bottledetection", "dvrscan",
               "motorway", "nightir", "bgslibrary", "wallflower", "wavingtrees", "walkingby",
               "lightout", "darklight", "darknesstolight", "alternatinglight", "personvisit")


def test_no_detector_constant_or_comment_names_a_clip_it_was_measured_on():
    """The detector's constants and rules rest on principles, not on a clip: no line of the
    detector or of the preprocessing names one of the clips its quality is measured on
    (a scene's kind, 'a waving tree', 'an escalator', is no clip)."""
    files = [*(ROOT / "videvent" / "detectors").glob("*.py"), ROOT / "videvent" / "preprocess.py"]
    named = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if any(name in re.sub(r"[\s_-]", "", line.lower()) for name in MEASURED_ON)]
    assert len(files) > 5 and named == []
