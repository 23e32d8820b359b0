"""Checks of the three setup commands in 00-setup/: the path they choose and why.

build-server.sh, download-model.sh and start-server.sh take the GB10 reference
path (00-setup/gb10/) on a machine with a working NVIDIA container runtime and
the CPU path (python3 00-setup/server.py) everywhere else. Nothing here builds,
downloads or starts anything: docker, nvidia-smi, nvidia-container-cli and
python3 are fakes that record each call (script_sandbox.py), so each test sets
up one kind of machine and reads the line that names the path.
"""
from pathlib import Path

import pytest
from script_sandbox import PIN_27B, file_url, run_script, shellcheck

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "00-setup"
# command -> (the step server.py runs on the CPU path, the script it calls on the GB10 path)
COMMANDS = {
    "build-server.sh": ("build", "gb10/build-server.sh"),
    "download-model.sh": ("model", "gb10/download-model.sh"),
    "start-server.sh": ("start", "gb10/start-server.sh"),
}

DAEMON_DOWN = ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
               "Is the docker daemon running?")
GB10_GPU = "GPU 0: NVIDIA GB10 (UUID: GPU-00000000-0000-0000-0000-000000000000)"


def docker_answering(runtimes):
    """A fake docker whose `info` succeeds and lists these runtimes (as the real one's --format does)."""
    return f'if [ "$1" = info ]; then printf "%s \\n" "{runtimes}"; exit 0; fi\nexit 1'


def nvidia_smi_listing(gpu_line):
    return f'printf "%s\\n" "{gpu_line}"'


@pytest.fixture
def machine(fake_path):
    """A machine with python3 and no docker, GPU or NVIDIA tools until a test adds them."""
    fake_path.fake("python3")
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


def first_line(result):
    return result.stdout.splitlines()[0]


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


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_0_explains_both_paths_and_looks_at_nothing(command, machine):
    step, gb10_script = COMMANDS[command]
    result = run(command, "--help", machine=machine)
    assert result.returncode == 0, result.stderr
    for text in ["Usage:", "--cpu", "--gb10", "--dry-run", f"python3 00-setup/server.py {step}",
                 f"00-setup/{gb10_script}", "nvidia-smi -L"]:
        assert text in result.stdout
    assert machine.argvs() == []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("args", [["--no-such-option"], ["--cpu", "--gb10"], ["--dry-run", "extra"]])
def test_a_bad_command_line_is_one_line_on_stderr_and_exit_2(command, args, machine):
    result = run(command, *args, machine=machine)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert machine.argvs() == []


# --- which path, and why -------------------------------------------------------

def test_no_docker_means_the_cpu_path(machine):
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result) == "CPU path: no docker command on PATH"


def test_a_docker_cli_without_a_daemon_means_the_cpu_path_and_says_so(machine):
    # Like docker 28 with no daemon: an empty line on stdout, the error on stderr.
    machine.fake("docker", f'echo\necho "{DAEMON_DOWN}" >&2\nexit 1')
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result) == (
        f"CPU path: docker is installed but its daemon does not answer (docker info: {DAEMON_DOWN})")


def test_a_daemon_without_the_nvidia_runtime_means_the_cpu_path(machine):
    machine.fake("docker", docker_answering("io.containerd.runc.v2 runc"))
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result) == ("CPU path: docker answers but has no NVIDIA runtime "
                                  "(docker info lists runtimes: io.containerd.runc.v2 runc; "
                                  "no nvidia-container-cli)")


def test_the_nvidia_runtime_without_a_gpu_means_the_cpu_path(machine):
    machine.fake("docker", docker_answering("nvidia runc"))
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result) == ("CPU path: docker has the NVIDIA runtime (runtime nvidia) "
                                  "but nvidia-smi -L lists no GPU")


def test_a_gb10_with_the_nvidia_runtime_takes_the_reference_path(gb10):
    result = dry_run("build-server.sh", machine=gb10)
    assert first_line(result) == ("GB10 reference path: docker answers with the NVIDIA runtime "
                                  "(runtime nvidia) and nvidia-smi -L lists GPU 0: NVIDIA GB10")
    assert "+ git clone --depth 1 --branch prism-b10709-9a9394a " in result.stdout
    assert "note:" not in result.stderr  # a GB10 needs no other CUDA architecture


def test_nvidia_container_cli_counts_as_the_nvidia_runtime(machine):
    machine.fake("docker", docker_answering("runc"))
    machine.fake("nvidia-container-cli")
    machine.fake("nvidia-smi", nvidia_smi_listing(GB10_GPU))
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result).startswith(
        "GB10 reference path: docker answers with the NVIDIA runtime (nvidia-container-cli)")


def test_another_nvidia_gpu_takes_the_reference_path_with_a_note_on_the_build(machine):
    machine.fake("docker", docker_answering("nvidia runc"))
    machine.fake("nvidia-smi", nvidia_smi_listing("GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)"))
    result = dry_run("build-server.sh", machine=machine)
    assert first_line(result).startswith("GB10 reference path:")
    assert "GB10_CUDA_ARCH" in result.stderr


def test_cpu_forces_the_cpu_path_even_on_a_gb10_and_looks_at_nothing(gb10):
    result = dry_run("build-server.sh", "--cpu", machine=gb10)
    assert first_line(result) == "CPU path: --cpu given"
    assert "00-setup/server.py build" in result.stdout
    assert gb10.argvs() == []


def test_gb10_forces_the_reference_path_without_looking(machine):
    result = dry_run("download-model.sh", "--gb10", machine=machine)
    assert first_line(result) == "GB10 reference path: --gb10 given (not checked)"
    assert machine.argvs() == []


# --- what each path runs -------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_cpu_dry_run_prints_the_server_py_command_and_runs_no_python(command, machine):
    step, _ = COMMANDS[command]
    result = dry_run(command, machine=machine)
    assert f"+ python3 {SETUP}/server.py {step}\n" in result.stdout
    assert machine.argvs() == []  # no python3 (and no docker to ask)


@pytest.mark.parametrize("command", COMMANDS)
def test_reference_dry_run_prints_the_gb10_commands_and_only_asks_docker_and_nvidia_smi(command, gb10):
    _, gb10_script = COMMANDS[command]
    result = dry_run(command, machine=gb10)
    assert f"+ {SETUP}/{gb10_script} --dry-run\n" in result.stdout
    assert "# dry run: nothing below is executed" in result.stdout
    # Only the two questions that choose the path; no build, download, container or python.
    assert {" ".join(argv[:2]) for argv in gb10.argvs()} == {"docker info", "nvidia-smi -L"}


def test_reference_dry_run_of_the_download_shows_the_pinned_27b(gb10):
    result = dry_run("download-model.sh", machine=gb10)
    assert file_url(PIN_27B) in result.stdout
    assert f"--revision {PIN_27B['revision']}" in result.stdout
    assert PIN_27B["sha256"] in result.stdout


def test_reference_dry_run_of_the_start_serves_the_27b_on_port_8080(gb10):
    result = dry_run("start-server.sh", machine=gb10)
    assert f"--model /models/{PIN_27B['file']} --alias {PIN_27B['alias']}" in result.stdout
    assert "--publish 127.0.0.1:8080:8080" in result.stdout


def test_the_8b_option_reaches_the_reference_path(gb10):
    gb10.env["GB10_MODEL"] = "8b"
    result = dry_run("download-model.sh", machine=gb10)
    assert "Ternary-Bonsai-8B-Q2_0_g64.gguf" in result.stdout
    assert PIN_27B["file"] not in result.stdout


def test_arguments_after_the_double_dash_go_to_server_py(machine):
    result = dry_run("start-server.sh", "--", "--model", "qwen2.5-coder-0.5b", machine=machine)
    assert f"+ python3 {SETUP}/server.py start --model qwen2.5-coder-0.5b\n" in result.stdout


def test_the_reference_path_refuses_arguments_for_server_py(gb10):
    result = run("start-server.sh", "--dry-run", "--", "--model", "x", machine=gb10)
    assert result.returncode == 2
    assert "GB10_" in result.stderr


def test_without_dry_run_the_cpu_path_runs_server_py(machine):
    # python3 is a fake here: it records its arguments and exits 1, and the
    # command passes that status on.
    result = run("start-server.sh", "--", "--model", "qwen2.5-coder-0.5b", machine=machine)
    assert result.returncode == 1
    assert machine.argvs() == [["python3", f"{SETUP}/server.py", "start", "--model", "qwen2.5-coder-0.5b"]]
