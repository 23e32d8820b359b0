"""Checks of the three setup commands in 00-setup/: the path they choose and why.

build-server.sh, download-model.sh and start-server.sh take the GB10 reference
path (00-setup/gb10/) on a machine with a working NVIDIA container runtime and
the CPU path (python3 00-setup/server.py) everywhere else. Nothing here builds,
downloads or starts anything: docker, nvidia-smi, nvidia-container-cli,
python3, git and uvx are fakes that record each call (script_sandbox.py). Each
test sets up one kind of machine, runs a command and reads back the calls: the
probes that chose the path (docker info, nvidia-smi -L), then the work of the
path taken (python3 server.py on the CPU path, the GB10 script's first tool on
the reference path). The first line, which names the path and why, is checked
once per kind of machine: that sentence is the behaviour (00-setup/README.md
shows it).
"""
from pathlib import Path
from typing import NamedTuple

import pytest
from script_sandbox import PIN_8B, PIN_27B, run_script, shellcheck, shown_commands

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "00-setup"
# command -> (the step server.py runs on the CPU path, the script it calls on the GB10 path)
COMMANDS = {
    "build-server.sh": ("build", "gb10/build-server.sh"),
    "download-model.sh": ("model", "gb10/download-model.sh"),
    "start-server.sh": ("start", "gb10/start-server.sh"),
}
OPTIONS = {"--cpu", "--gb10", "--dry-run", "--help", "--"}
FAKE_TOOLS = {"docker", "nvidia-smi", "nvidia-container-cli", "python3", "git", "uvx"}
PROBES = (["docker", "info"], ["nvidia-smi", "-L"])

DAEMON_DOWN = ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
               "Is the docker daemon running?")
GB10_GPU = "GPU 0: NVIDIA GB10 (UUID: GPU-00000000-0000-0000-0000-000000000000)"
RTX_GPU = "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)"


def docker_answering(runtimes):
    """A fake docker whose `info` succeeds and lists these runtimes (as the real one's --format does)."""
    return f'if [ "$1" = info ]; then printf "%s \\n" "{runtimes}"; exit 0; fi\nexit 1'


def nvidia_smi_listing(gpu_line):
    return f'printf "%s\\n" "{gpu_line}"'


# Like docker 28 with no daemon: an empty line on stdout, the error on stderr.
DOCKER_WITHOUT_DAEMON = f'echo\necho "{DAEMON_DOWN}" >&2\nexit 1'


@pytest.fixture
def machine(fake_path):
    """A machine with python3, git and uv, and no docker, GPU or NVIDIA tools until a test adds them.

    Every fake exits 1 after recording its call: enough to see which path's work began.
    """
    for name in ("python3", "git", "uvx"):
        fake_path.fake(name)
    fake_path.env["GB10_MODELS_DIR"] = str(fake_path.tmp / "models")
    fake_path.env["GB10_SRC_DIR"] = str(fake_path.tmp / "build" / "llama.cpp-prism")
    return fake_path


@pytest.fixture
def gb10(machine):
    """A GB10: docker answers and lists the nvidia runtime, nvidia-smi -L lists the GPU."""
    machine.fake("docker", docker_answering("io.containerd.runc.v2 nvidia runc"))
    machine.fake("nvidia-smi", nvidia_smi_listing(GB10_GPU))
    return machine


def run(command, *args, machine):
    return run_script(SETUP / command, *args, env=machine.env)


def dry_run(command, *args, machine):
    """Run a command with --dry-run, which must succeed."""
    result = run(command, "--dry-run", *args, machine=machine)
    assert result.returncode == 0, result.stderr
    return result


def probes(machine):
    """The questions asked to choose the path: ["docker", "info"], ["nvidia-smi", "-L"], in order."""
    return [argv[:2] for argv in machine.argvs() if argv[:2] in PROBES]


def work(machine):
    """Every call but the probes: what the path taken ran."""
    return [argv for argv in machine.argvs() if argv[:2] not in PROBES]


def server_py(step, *args):
    """The CPU path's call."""
    return ["python3", f"{SETUP}/server.py", step, *args]


def git_clone(machine):
    """The first call of the reference path's build (gb10/build-server.sh): the pinned fork."""
    return ["git", "clone", "--depth", "1", "--branch", "prism-b10709-9a9394a",
            "https://github.com/PrismML-Eng/llama.cpp.git", machine.env["GB10_SRC_DIR"]]


def hf_download(machine, pin):
    """The first call of the reference path's download (gb10/download-model.sh): hf download of the pin."""
    return ["uvx", "--from", "huggingface_hub==2.4.0", "hf", "download", pin["repo"], pin["file"],
            "--revision", pin["revision"], "--local-dir", machine.env["GB10_MODELS_DIR"]]


def option_value(argv, option):
    return argv[argv.index(option) + 1]


# --- the scripts themselves ----------------------------------------------------

@pytest.mark.parametrize("script", [*COMMANDS, "lib.sh"])
def test_script_passes_shellcheck_without_warnings(script, venv_tool):
    result = shellcheck(venv_tool("shellcheck"), SETUP / script)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_command_is_bash_in_strict_mode_and_executable(command):
    path = SETUP / command
    text = path.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert path.stat().st_mode & 0o111


def documented_options(help_text):
    """The options --help lists, each at the start of its line ("  -- ARGS" lists --)."""
    return {line.split()[0] for line in help_text.splitlines() if line.startswith("  --")}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_0_looks_at_nothing_and_names_the_options_and_both_paths(command, machine):
    step, gb10_script = COMMANDS[command]
    result = run(command, "--help", machine=machine)
    assert result.returncode == 0, result.stderr
    assert machine.calls() == []
    # The one check of the help's text: the options setup_main parses, the command of each
    # path and the probe for the GPU.
    paths = {f"python3 00-setup/server.py {step}", f"00-setup/{gb10_script}", "nvidia-smi -L"}
    named = documented_options(result.stdout) | {text for text in paths if text in result.stdout}
    assert named == OPTIONS | paths


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_the_help_lists_is_accepted(command, machine):
    options = documented_options(run(command, "--help", machine=machine).stdout)
    for option in options:
        assert run(command, "--dry-run", option, machine=machine).returncode == 0, option
    assert machine.calls() == []  # no docker here to ask, and a dry run runs nothing


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("args", [["--no-such-option"], ["--cpu", "--gb10"], ["--dry-run", "extra"]])
def test_a_bad_command_line_is_one_line_on_stderr_and_exit_2(command, args, machine):
    result = run(command, *args, machine=machine)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert machine.calls() == []


# --- which path, and why -------------------------------------------------------

class Machine(NamedTuple):
    """A kind of machine (its fake tools), the arguments given, and what build-server.sh must do there:
    the path it takes, the probes it makes, and the first line it prints."""

    tools: dict
    args: list
    path: str
    probes: list
    reason: str


GB10_TOOLS = {"docker": docker_answering("io.containerd.runc.v2 nvidia runc"),
              "nvidia-smi": nvidia_smi_listing(GB10_GPU)}
MACHINES = {
    "no-docker": Machine({}, [], "cpu", [], "CPU path: no docker command on PATH"),
    "docker-without-daemon": Machine(
        {"docker": DOCKER_WITHOUT_DAEMON}, [], "cpu", [["docker", "info"]],
        f"CPU path: docker is installed but its daemon does not answer (docker info: {DAEMON_DOWN})"),
    "daemon-without-nvidia-runtime": Machine(
        {"docker": docker_answering("io.containerd.runc.v2 runc")}, [], "cpu", [["docker", "info"]],
        "CPU path: docker answers but has no NVIDIA runtime "
        "(docker info lists runtimes: io.containerd.runc.v2 runc; no nvidia-container-cli)"),
    "nvidia-runtime-without-gpu": Machine(
        {"docker": docker_answering("nvidia runc")}, [], "cpu", [["docker", "info"]],
        "CPU path: docker has the NVIDIA runtime (runtime nvidia) but nvidia-smi -L lists no GPU"),
    "gb10": Machine(
        GB10_TOOLS, [], "gb10", list(PROBES),
        "GB10 reference path: docker answers with the NVIDIA runtime (runtime nvidia) "
        "and nvidia-smi -L lists GPU 0: NVIDIA GB10"),
    "nvidia-container-cli-counts-as-the-runtime": Machine(
        {"docker": docker_answering("runc"), "nvidia-container-cli": "exit 1",
         "nvidia-smi": nvidia_smi_listing(GB10_GPU)}, [], "gb10", list(PROBES),
        "GB10 reference path: docker answers with the NVIDIA runtime (nvidia-container-cli) "
        "and nvidia-smi -L lists GPU 0: NVIDIA GB10"),
    "another-nvidia-gpu": Machine(
        {"docker": docker_answering("nvidia runc"), "nvidia-smi": nvidia_smi_listing(RTX_GPU)}, [], "gb10",
        list(PROBES),
        "GB10 reference path: docker answers with the NVIDIA runtime (runtime nvidia) "
        "and nvidia-smi -L lists GPU 0: NVIDIA GeForce RTX 4090"),
    "cpu-given-on-a-gb10": Machine(GB10_TOOLS, ["--cpu"], "cpu", [], "CPU path: --cpu given"),
    "gb10-given-without-looking": Machine(
        {"docker": docker_answering("runc")}, ["--gb10"], "gb10", [],
        "GB10 reference path: --gb10 given (not checked)"),
}


@pytest.mark.parametrize("kind", MACHINES)
def test_the_machine_decides_the_path_and_the_first_line_says_why(kind, machine):
    expected = MACHINES[kind]
    for name, body in expected.tools.items():
        machine.fake(name, body)
    result = run("build-server.sh", *expected.args, machine=machine)
    assert result.returncode == 1  # python3 or git, the first step of each path, is a fake that fails
    assert probes(machine) == expected.probes
    assert work(machine) == {"cpu": [server_py("build")], "gb10": [git_clone(machine)]}[expected.path]
    assert result.stdout.splitlines()[0] == expected.reason


@pytest.mark.parametrize("gpu, noted", [(GB10_GPU, False), (RTX_GPU, True)])
def test_the_build_points_another_gpu_to_the_cuda_settings(gpu, noted, machine):
    machine.fake("docker", docker_answering("nvidia runc"))
    machine.fake("nvidia-smi", nvidia_smi_listing(gpu))
    result = dry_run("build-server.sh", machine=machine)
    assert ("GB10_CUDA_ARCH" in result.stderr) == noted  # a note on stderr; the build's settings are unchanged


# --- what each path runs -------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_the_cpu_path_runs_server_py_with_the_step_and_passes_its_status_on(command, machine):
    step, _ = COMMANDS[command]
    # python3 is a fake here: it records its arguments and exits 1.
    result = run(command, machine=machine)
    assert result.returncode == 1
    assert machine.argvs() == [server_py(step)]


def test_arguments_after_the_double_dash_go_to_server_py(machine):
    result = run("start-server.sh", "--", "--model", "qwen2.5-coder-0.5b", machine=machine)
    assert result.returncode == 1
    assert machine.argvs() == [server_py("start", "--model", "qwen2.5-coder-0.5b")]


@pytest.mark.parametrize("command", COMMANDS)
def test_cpu_dry_run_runs_nothing_and_shows_the_command_a_real_run_runs(command, machine):
    dry = dry_run(command, "--", "--jobs", "2", machine=machine)
    assert machine.calls() == []
    run(command, "--", "--jobs", "2", machine=machine)
    assert shown_commands(dry.stdout, FAKE_TOOLS) == machine.argvs()


@pytest.mark.parametrize("command", COMMANDS)
def test_reference_dry_run_only_asks_docker_and_nvidia_smi_and_is_the_gb10_scripts_dry_run(command, gb10):
    _, gb10_script = COMMANDS[command]
    dry = dry_run(command, machine=gb10)
    # Only the two questions that choose the path; no build, download, container or python.
    assert probes(gb10) == list(PROBES)
    assert work(gb10) == []
    # What it shows is what the GB10 script's own --dry-run shows (git, docker, uvx or curl commands).
    direct = run_script(SETUP / gb10_script, "--dry-run", env=gb10.env)
    shown = shown_commands(dry.stdout, FAKE_TOOLS | {"curl"})
    assert shown == shown_commands(direct.stdout, FAKE_TOOLS | {"curl"}) and shown != []


def test_the_reference_path_builds_the_pinned_fork(gb10):
    run("build-server.sh", machine=gb10)
    assert work(gb10) == [git_clone(gb10)]


@pytest.mark.parametrize("model, pin", [(None, PIN_27B), ("8b", PIN_8B)])
def test_the_reference_path_downloads_the_pinned_model(model, pin, gb10):
    if model:
        gb10.env["GB10_MODEL"] = model
    run("download-model.sh", machine=gb10)
    assert work(gb10) == [hf_download(gb10, pin)]  # then stops: the fake uvx fails


def test_the_reference_path_serves_the_27b_on_port_8080_of_loopback(gb10):
    gb10.fake("curl")  # start-server.sh wants curl before it starts anything
    models = Path(gb10.env["GB10_MODELS_DIR"])
    models.mkdir()
    (models / PIN_27B["file"]).write_bytes(b"")
    run("start-server.sh", machine=gb10)
    inspect, docker_run = work(gb10)  # is there a container of that name? (the fake says no), then run
    assert inspect[:3] == ["docker", "container", "inspect"]
    assert docker_run[:2] == ["docker", "run"]
    assert option_value(docker_run, "--model") == f"/models/{PIN_27B['file']}"
    assert option_value(docker_run, "--alias") == PIN_27B["alias"]
    assert option_value(docker_run, "--publish") == "127.0.0.1:8080:8080"


def test_the_reference_path_refuses_arguments_for_server_py(gb10):
    result = run("start-server.sh", "--dry-run", "--", "--model", "x", machine=gb10)
    assert result.returncode == 2  # the same arguments on the CPU path go to server.py (test above)
    assert work(gb10) == []
