"""Checks of the GB10 reference scripts in 00-setup/gb10/.

The scripts target a GB10 box with Docker and a GPU, which this machine does
not have, so they are never really run here. What is checked: shellcheck has
nothing to say, --help and bad arguments behave, and --dry-run prints the
commands it would run without running any of them. For that, PATH holds fake
`docker`, `git`, `curl` and `uvx` that leave a marker file when called, and
links to the real bash and coreutils (the `fake_path` fixture of conftest.py).
"""
import hashlib
import subprocess
from pathlib import Path

import pytest
from script_sandbox import PIN_8B, PIN_27B, file_url, run_script, shellcheck

ROOT = Path(__file__).resolve().parents[1]
GB10 = ROOT / "00-setup" / "gb10"
SCRIPTS = ["build-server.sh", "download-model.sh", "start-server.sh"]
SOURCED = ["lib.sh", "models.sh"]
FAKE_TOOLS = ["docker", "git", "curl", "uvx"]

@pytest.fixture
def sandbox(fake_path):
    """A PATH whose docker/git/curl/uvx are fakes that record being called."""
    for name in FAKE_TOOLS:
        fake_path.fake(name)
    env = dict(fake_path.env)
    # Keep the scripts' local output out of the work tree.
    env["GB10_MODELS_DIR"] = str(fake_path.tmp / "models")
    env["GB10_SRC_DIR"] = str(fake_path.tmp / "build" / "llama.cpp-prism")
    return {"env": env, "marker": fake_path.log, "tmp": fake_path.tmp}


def run(script, *args, env):
    return run_script(GB10 / script, *args, env=env)


def with_env(sandbox, **extra):
    env = dict(sandbox["env"])
    env.update(extra)
    return env


# --- shellcheck --------------------------------------------------------------

@pytest.mark.parametrize("script", SCRIPTS + SOURCED)
def test_script_passes_shellcheck_without_warnings(script, venv_tool):
    result = shellcheck(venv_tool("shellcheck"), GB10 / script)
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
def test_dry_run_exits_0_and_runs_no_docker_git_uvx_or_curl(script, sandbox):
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


def test_download_dry_run_prints_the_pinned_27b_hf_download_and_sha256sum_check(sandbox):
    result = run("download-model.sh", "--dry-run", env=sandbox["env"])
    out = result.stdout
    assert result.returncode == 0, result.stderr
    models = sandbox["tmp"] / "models"
    assert (f"+ uvx --from huggingface_hub==2.4.0 hf download {PIN_27B['repo']} {PIN_27B['file']}"
            f" --revision {PIN_27B['revision']} --local-dir {models}") in out
    assert file_url(PIN_27B) in out
    assert f"+ sha256sum -c - <<<{PIN_27B['sha256']}" in out
    assert "curl" not in out


def test_download_8b_option_selects_the_pinned_8b_pair(sandbox):
    env = with_env(sandbox, GB10_MODEL="8b")
    result = run("download-model.sh", "--dry-run", env=env)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert f"hf download {PIN_8B['repo']} {PIN_8B['file']} --revision {PIN_8B['revision']}" in out
    assert file_url(PIN_8B) in out
    assert f"sha256sum -c - <<<{PIN_8B['sha256']}" in out
    assert PIN_27B["file"] not in out


def test_download_refuses_an_unknown_model_choice(sandbox):
    env = with_env(sandbox, GB10_MODEL="70b")
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "GB10_MODEL='70b' is not one of: 27b 8b" in result.stderr


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


@pytest.mark.parametrize("setting, value", [
    ("GB10_MODEL_FILE", "Ternary-Bonsai-2-27B-PTQ1_0.gguf"),
    ("GB10_MODEL_REVISION", "0" * 40),
    ("GB10_MODEL_REPO", "someone/else-gguf"),
])
def test_download_refuses_a_new_file_without_its_checksum(sandbox, setting, value):
    env = with_env(sandbox, **{setting: value})
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "set GB10_MODEL_SHA256" in result.stderr
    assert not sandbox["marker"].exists()


def test_download_refuses_a_revision_that_is_not_a_commit(sandbox):
    env = with_env(sandbox, GB10_MODEL_REVISION="main", GB10_MODEL_SHA256="a" * 64)
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 1
    assert "40-character commit" in result.stderr


def test_download_uses_hf_token_without_printing_it(sandbox):
    secret = "hf_secretvalue_do_not_print_1234"
    env = with_env(sandbox, HF_TOKEN=secret)
    result = run("download-model.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "HF_TOKEN is set" in result.stdout
    assert "--token" not in result.stdout
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
    env = with_env(sandbox, GB10_MODEL_FILE=name, GB10_MODEL_SHA256=hashlib.sha256(content).hexdigest())
    result = run("download-model.sh", env=env)
    assert result.returncode == 0, result.stderr
    assert f"{name}: OK" in result.stdout  # sha256sum -c really ran
    assert "verified" in result.stdout
    assert not sandbox["marker"].exists()  # no download needed


def test_download_refuses_an_existing_file_that_does_not_match(sandbox):
    name = write_model(sandbox, b"tampered\n")
    env = with_env(sandbox, GB10_MODEL_FILE=name,
                   GB10_MODEL_SHA256=hashlib.sha256(b"the real thing\n").hexdigest())
    result = run("download-model.sh", env=env)
    assert result.returncode == 1
    assert "FAILED" in result.stdout + result.stderr
    assert "does not match" in result.stderr
    assert not sandbox["marker"].exists()


# A fake uvx that does what `uvx ... hf download REPO FILE --revision R --local-dir DIR`
# does: it writes DIR/FILE. It also notes whether HF_TOKEN reached it.
FAKE_HF_DOWNLOAD = """\
printf '%s' "$FAKE_CONTENT" > "${10}/$6"
"""


def test_download_runs_hf_download_then_checks_the_file(sandbox, fake_path):
    fake_path.fake("uvx", FAKE_HF_DOWNLOAD)
    content = "a downloaded model"
    secret = "hf_secretvalue_do_not_print_1234"
    env = with_env(sandbox, GB10_MODEL_FILE="tiny.gguf", FAKE_CONTENT=content, HF_TOKEN=secret,
                   GB10_MODEL_SHA256=hashlib.sha256(content.encode()).hexdigest())
    result = run("download-model.sh", env=env)
    assert result.returncode == 0, result.stderr
    assert "tiny.gguf: OK" in result.stdout
    [uvx] = fake_path.calls()
    assert uvx.argv[:9] == ["uvx", "--from", "huggingface_hub==2.4.0", "hf", "download",
                            PIN_27B["repo"], "tiny.gguf", "--revision", PIN_27B["revision"]]
    assert uvx.env["HF_TOKEN"] == secret  # hf gets the token from the environment...
    assert not any(secret in arg for arg in uvx.argv)  # ...never on its command line
    assert secret not in result.stdout + result.stderr


def test_download_sets_a_mismatching_download_aside_and_fails(sandbox, fake_path):
    fake_path.fake("uvx", FAKE_HF_DOWNLOAD)
    env = with_env(sandbox, GB10_MODEL_FILE="tiny.gguf", FAKE_CONTENT="not what was pinned",
                   GB10_MODEL_SHA256=hashlib.sha256(b"the pinned bytes").hexdigest())
    result = run("download-model.sh", env=env)
    assert result.returncode == 1
    assert "checksum mismatch" in result.stderr
    models = sandbox["tmp"] / "models"
    assert not (models / "tiny.gguf").exists()  # start-server.sh cannot pick it up
    assert (models / "tiny.gguf.bad").exists()


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
    assert f"--model /models/{PIN_27B['file']} --alias {PIN_27B['alias']}" in docker_run
    assert "--host 0.0.0.0 --port 8080" in docker_run
    assert "-c 16384" in docker_run
    assert "-ngl 99" in docker_run
    assert "-np 1" in docker_run
    assert "--jinja" in docker_run
    assert docker_run.rstrip().endswith("--reasoning off")
    assert "http://127.0.0.1:8080/health" in out
    assert "at most 300s" in out
    assert PIN_27B["file"] in out


def test_start_8b_option_serves_the_8b_file_under_its_alias(sandbox):
    env = with_env(sandbox, GB10_MODEL="8b")
    result = run("start-server.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert f"--model /models/{PIN_8B['file']} --alias {PIN_8B['alias']}" in result.stdout


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
