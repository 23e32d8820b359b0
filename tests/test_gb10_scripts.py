"""Checks of the GB10 reference scripts in 00-setup/gb10/.

The scripts target a GB10 box with Docker and a GPU, which this machine does
not have, so they are never really run here. What is checked: shellcheck has
nothing to say, --help and bad arguments behave, and --dry-run prints the
commands it would run without running any of them. For that, PATH points to a
folder of fake `docker`, `git` and `curl` that leave a marker file when
called, followed by the folders of the real bash and coreutils.
"""
import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GB10 = ROOT / "00-setup" / "gb10"
SCRIPTS = ["build-server.sh", "download-model.sh", "start-server.sh"]
FAKE_TOOLS = ["docker", "git", "curl"]


@pytest.fixture
def sandbox(tmp_path):
    """A PATH whose docker/git/curl are fakes that record being called."""
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    marker = tmp_path / "fake-tool-was-called"
    for name in FAKE_TOOLS:
        tool = fake_bin / name
        tool.write_text(
            "#!/bin/sh\n"
            f"echo \"{name} $*\" >> '{marker}'\n"
            "exit 1\n"
        )
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    real_dirs = []
    for name in ["bash", "env", "basename", "dirname", "sha256sum", "mkdir", "mv", "cat"]:
        found = shutil.which(name)
        assert found, f"{name} is needed on PATH to run these tests"
        folder = str(Path(found).parent)
        if folder not in real_dirs:
            real_dirs.append(folder)
    env = {
        "PATH": os.pathsep.join([str(fake_bin), *real_dirs]),
        "HOME": str(tmp_path / "home"),
        "LANG": "C",
        # Keep the scripts' local output out of the work tree.
        "GB10_MODELS_DIR": str(tmp_path / "models"),
        "GB10_SRC_DIR": str(tmp_path / "build" / "llama.cpp-prism"),
    }
    return {"env": env, "marker": marker, "tmp": tmp_path}


def run(script, *args, env):
    return subprocess.run(
        ["bash", str(GB10 / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def with_env(sandbox, **extra):
    env = dict(sandbox["env"])
    env.update(extra)
    return env


# --- shellcheck --------------------------------------------------------------

@pytest.mark.parametrize("script", SCRIPTS)
def test_script_passes_shellcheck_without_warnings(script, venv_tool):
    shellcheck = venv_tool("shellcheck")
    result = subprocess.run(
        [shellcheck, "--external-sources", "--severity=style", str(GB10 / script)],  # -x: follow lib.sh
        cwd=GB10,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_is_bash_with_strict_mode_and_says_it_is_untested_here(script):
    text = (GB10 / script).read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    header = text.split("set -euo pipefail")[0]
    assert "GB10 reference path" in header
    assert "NOT been run or tested" in header


# --- the fake tools ----------------------------------------------------------

def test_fake_tools_leave_the_marker_when_called(sandbox):
    result = subprocess.run(
        ["docker", "version"], env=sandbox["env"], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert sandbox["marker"].exists()


# --- --help and bad arguments ------------------------------------------------

@pytest.mark.parametrize("script", SCRIPTS)
def test_help_exits_0_and_documents_the_settings(script, sandbox):
    result = run(script, "--help", env=sandbox["env"])
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
    assert "--dry-run" in result.stdout
    assert "GB10_" in result.stdout
    assert not sandbox["marker"].exists()


@pytest.mark.parametrize("script", SCRIPTS)
def test_unknown_argument_exits_2_with_one_line_on_stderr(script, sandbox):
    result = run(script, "--no-such-option", env=sandbox["env"])
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "--no-such-option" in lines[0]
    assert not sandbox["marker"].exists()


# --- --dry-run runs nothing --------------------------------------------------

@pytest.mark.parametrize("script", SCRIPTS)
def test_dry_run_exits_0_and_runs_no_docker_git_or_curl(script, sandbox):
    result = run(script, "--dry-run", env=sandbox["env"])
    assert result.returncode == 0, result.stderr
    assert not sandbox["marker"].exists(), sandbox["marker"].read_text()
    # Nothing was created either.
    assert not (sandbox["tmp"] / "models").exists()
    assert not (sandbox["tmp"] / "build").exists()


def test_build_dry_run_prints_the_pinned_clone_and_the_cuda_build(sandbox):
    result = run("build-server.sh", "--dry-run", env=sandbox["env"])
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "+ git clone --depth 1 --branch prism-b10709-9a9394a " in out
    assert "https://github.com/PrismML-Eng/llama.cpp.git" in out
    assert "+ git -C " in out and "rev-parse HEAD" in out
    assert "+ docker build " in out
    assert "--platform linux/arm64" in out
    assert "--target server" in out
    assert ".devops/cuda.Dockerfile" in out
    assert "--build-arg CUDA_DOCKER_ARCH=121" in out
    assert "--build-arg BASE_CUDA_DEV_CONTAINER=nvidia/cuda:13.0.1-devel-ubuntu24.04" in out
    assert "--build-arg BASE_CUDA_RUN_CONTAINER=nvidia/cuda:13.0.1-runtime-ubuntu24.04" in out


def test_build_dry_run_follows_cuda_arch_and_base_image_for_another_gpu(sandbox):
    env = with_env(sandbox, GB10_CUDA_ARCH="89", GB10_CUDA_VERSION="12.8.1",
                   GB10_PLATFORM="linux/amd64")
    result = run("build-server.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "--build-arg CUDA_DOCKER_ARCH=89" in result.stdout
    assert "nvidia/cuda:12.8.1-devel-ubuntu24.04" in result.stdout
    assert "--platform linux/amd64" in result.stdout


def test_build_refuses_a_new_ref_without_its_commit(sandbox):
    env = with_env(sandbox, GB10_LLAMA_REF="prism")
    result = run("build-server.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "GB10_LLAMA_COMMIT" in result.stderr
    assert not sandbox["marker"].exists()


def test_build_ignores_generic_names_from_the_environment(sandbox):
    env = with_env(sandbox, CUDA_VERSION="11.0", IMAGE="wrong:tag", CUDA_ARCH="50")
    result = run("build-server.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "nvidia/cuda:13.0.1-devel" in result.stdout
    assert "--tag prism-llama-server:gb10" in result.stdout
    assert "CUDA_DOCKER_ARCH=121" in result.stdout


def test_download_dry_run_prints_the_pinned_curl_and_sha256sum_check(sandbox):
    result = run("download-model.sh", "--dry-run", env=sandbox["env"])
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "+ curl --fail --location" in out
    assert ("https://huggingface.co/prism-ml/Ternary-Bonsai-8B-gguf/resolve/"
            "c2aefbeb4b24469cd11579c3384b990404c17a30/"
            "Ternary-Bonsai-8B-Q2_0_g64.gguf") in out
    assert "+ sha256sum -c" in out
    assert "e17b298d84ee78797916ae5c2ecc8211469cc65cccfe3080cd9a9bb503fbc55e" in out


def test_download_refuses_when_the_checksum_is_unset(sandbox):
    env = with_env(sandbox, GB10_MODEL_SHA256="")
    result = run("download-model.sh", env=env)
    assert result.returncode == 1
    assert "GB10_MODEL_SHA256 is empty" in result.stderr
    assert not sandbox["marker"].exists()


def test_download_refuses_a_malformed_checksum(sandbox):
    env = with_env(sandbox, GB10_MODEL_SHA256="not-a-sha256")
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "64 lowercase hex" in result.stderr


def test_download_refuses_a_new_url_without_its_checksum(sandbox):
    env = with_env(sandbox, GB10_MODEL_URL="https://example.invalid/other.gguf")
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "GB10_MODEL_SHA256" in result.stderr
    assert not sandbox["marker"].exists()


def test_download_uses_hf_token_without_printing_it(sandbox):
    secret = "hf_secretvalue_do_not_print_1234"
    env = with_env(sandbox, HF_TOKEN=secret)
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "--header @-" in result.stdout
    assert secret not in result.stdout
    assert secret not in result.stderr


def write_model(sandbox, content):
    models = sandbox["tmp"] / "models"
    models.mkdir()
    name = "tiny-test-model.gguf"
    (models / name).write_bytes(content)
    return name


def test_download_accepts_an_existing_file_that_matches_with_sha256sum(sandbox):
    content = b"not really a model\n"
    name = write_model(sandbox, content)
    env = with_env(
        sandbox,
        GB10_MODEL_URL=f"https://example.invalid/{name}",
        GB10_MODEL_SHA256=hashlib.sha256(content).hexdigest(),
    )
    result = run("download-model.sh", env=env)
    assert result.returncode == 0, result.stderr
    assert f"{name}: OK" in result.stdout  # sha256sum -c really ran
    assert "verified" in result.stdout
    assert not sandbox["marker"].exists()  # no curl needed


def test_download_refuses_an_existing_file_that_does_not_match(sandbox):
    name = write_model(sandbox, b"tampered\n")
    env = with_env(
        sandbox,
        GB10_MODEL_URL=f"https://example.invalid/{name}",
        GB10_MODEL_SHA256=hashlib.sha256(b"the real thing\n").hexdigest(),
    )
    result = run("download-model.sh", env=env)
    assert result.returncode == 1
    assert "FAILED" in result.stdout + result.stderr
    assert "does not match" in result.stderr
    assert not sandbox["marker"].exists()


def test_start_dry_run_publishes_the_port_on_127_0_0_1_only(sandbox):
    result = run("start-server.sh", "--dry-run", env=sandbox["env"])
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "+ docker run " in out
    assert "--publish 127.0.0.1:8080:8080" in out
    assert "0.0.0.0:8080" not in out
    assert "--publish 8080" not in out


def test_start_dry_run_runs_llama_server_as_the_series_needs(sandbox):
    result = run("start-server.sh", "--dry-run", env=sandbox["env"])
    out = result.stdout
    assert result.returncode == 0, result.stderr
    docker_run = next(line for line in out.splitlines() if line.startswith("+ docker run "))
    assert "--gpus all" in docker_run
    assert f"{sandbox['tmp'] / 'models'}:/models:ro" in docker_run
    assert "--model /models/Ternary-Bonsai-8B-Q2_0_g64.gguf" in docker_run
    assert "--host 0.0.0.0 --port 8080" in docker_run
    assert "-c 16384" in docker_run
    assert "-ngl 99" in docker_run
    assert "-np 1" in docker_run
    assert "--jinja" in docker_run
    assert docker_run.rstrip().endswith("--reasoning off")
    assert "http://127.0.0.1:8080/health" in out
    assert "at most 300s" in out
    assert "Ternary-Bonsai-8B-Q2_0_g64.gguf" in out


def test_start_dry_run_keeps_loopback_when_the_port_changes(sandbox):
    env = with_env(sandbox, GB10_PORT="18080")
    result = run("start-server.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "--publish 127.0.0.1:18080:8080" in result.stdout
    assert "http://127.0.0.1:18080/health" in result.stdout


def test_start_ignores_generic_names_from_the_environment(sandbox):
    env = with_env(sandbox, CONTAINER_NAME="someone-elses", PORT="1", IMAGE="wrong:tag")
    result = run("start-server.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "--name bonsai-server" in result.stdout
    assert "127.0.0.1:8080:8080" in result.stdout
    assert " prism-llama-server:gb10 " in result.stdout


def test_start_refuses_a_port_that_is_not_a_number(sandbox):
    env = with_env(sandbox, GB10_PORT="80a")
    result = run("start-server.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "GB10_PORT" in result.stderr


def test_start_without_dry_run_stops_before_docker_when_the_model_is_missing(sandbox):
    result = run("start-server.sh", env=sandbox["env"])
    assert result.returncode == 1
    assert "download-model.sh" in result.stderr
    assert not sandbox["marker"].exists()
