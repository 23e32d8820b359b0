"""Checks of the GB10 reference scripts in 00-setup/gb10/.

The scripts target a GB10 box with Docker and a GPU, which this machine does
not have. So they run here against a GB10 in miniature: PATH holds fake
`docker`, `git`, `curl` and `uvx` that do the least a real one would (clone
makes the source folder, `hf download` writes the file, curl answers 200) and
record every call, and a spy on the real `sha256sum` that records the checksum
line it is given (script_sandbox.py, the `fake_path` fixture of conftest.py).
The tests assert on those calls, on the files the scripts leave, on exit
codes and on the environment a tool gets; printed text is checked only where
it is the behaviour (the one line of a bad command line or a bad setting, a
secret that must not be printed) and once per script for what --help and
--dry-run show.
"""
import hashlib
import re
import subprocess
from pathlib import Path

import pytest
from script_sandbox import PIN_8B, PIN_27B, run_script, shellcheck, shown_commands

ROOT = Path(__file__).resolve().parents[1]
GB10 = ROOT / "00-setup" / "gb10"
SCRIPTS = ["build-server.sh", "download-model.sh", "start-server.sh"]
SOURCED = ["lib.sh", "models.sh"]
FAKE_TOOLS = ["docker", "git", "curl", "uvx"]

LLAMA_REF = "prism-b10709-9a9394a"
LLAMA_COMMIT = "9a9394a895b96003ca842a6041cb28ac49a108f7"
LLAMA_URL = "https://github.com/PrismML-Eng/llama.cpp.git"
HF_HUB = "huggingface_hub==2.4.0"

# What each fake does besides recording its call.
# git clone --depth 1 --branch REF URL DIR ($7) makes DIR with the CUDA Dockerfile;
# git -C DIR rev-parse HEAD prints $FAKE_HEAD.
FAKE_GIT = """\
case "$1" in
    clone) mkdir -p "$7/.devops" && : > "$7/.devops/cuda.Dockerfile" ;;
    -C) [ "$3" = rev-parse ] && echo "$FAKE_HEAD" ;;
esac
"""
# No container of that name exists yet; every other docker command succeeds.
FAKE_DOCKER = '[ "$1 $2" = "container inspect" ] && exit 1\nexit 0'
# uvx --from HUB hf download REPO FILE --revision R --local-dir DIR writes DIR/FILE ($10/$6).
FAKE_HF_DOWNLOAD = """printf '%s' "$FAKE_CONTENT" > "${10}/$6"\n"""
FAKE_CURL = "printf 200"
# The container was started and keeps running (docker container inspect --format prints true).
FAKE_DOCKER_RUNNING = """\
if [ "$1 $2" = "container inspect" ]; then
    [ "$3" = --format ] || exit 1
    echo true
fi
"""


@pytest.fixture
def sandbox(fake_path):
    """A GB10 in miniature: the four fakes, a spy on sha256sum, the scripts' output in tmp_path."""
    fake_path.fake("git", FAKE_GIT)
    fake_path.fake("docker", FAKE_DOCKER)
    fake_path.fake("uvx", FAKE_HF_DOWNLOAD)
    fake_path.fake("curl", FAKE_CURL)
    fake_path.spy("sha256sum", read_stdin=True)
    fake_path.env.update({
        "GB10_MODELS_DIR": str(fake_path.tmp / "models"),
        "GB10_SRC_DIR": str(fake_path.tmp / "build" / "llama.cpp-prism"),
        "FAKE_HEAD": LLAMA_COMMIT,
        "FAKE_CONTENT": "a downloaded model",
    })
    return fake_path


def run(script, *args, sandbox, **settings):
    return run_script(GB10 / script, *args, env={**sandbox.env, **settings})


def with_model_file(sandbox, name, content=b""):
    """A model file already in the models folder; its path."""
    models = sandbox.tmp / "models"
    models.mkdir(exist_ok=True)
    (models / name).write_bytes(content)
    return models / name


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def checksum_line(sha, path):
    """What sha256sum -c reads: "<sha256>  <file>", one line."""
    return f"{sha}  {path}\n"


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

def test_fake_tools_record_their_argv_and_environment(fake_path):
    fake_path.fake("docker")
    env = {**fake_path.env, "DOCKER_HOST": "unix:///nowhere"}
    result = subprocess.run(["docker", "version", "--format", "{{.Server}}"], env=env)
    assert result.returncode == 1  # the default body
    [call] = fake_path.calls()
    assert call.argv == ["docker", "version", "--format", "{{.Server}}"]
    assert call.env["DOCKER_HOST"] == "unix:///nowhere"


# --- --help and bad arguments ------------------------------------------------

def documented(help_text):
    """The options (--x) and settings (GB10_X) that --help lists, each at the start of its line."""
    return {line.split()[0] for line in help_text.splitlines()
            if line.startswith(("  --", "  GB10_", "  HF_TOKEN"))}


def settings_read(script):
    """The GB10_* settings a script reads (${GB10_X...}), with those of the files it sources (models.sh)."""
    text = (GB10 / script).read_text()
    text += "".join((GB10 / name).read_text() for name in re.findall(r'source "\$SCRIPT_DIR/([\w.]+)"', text))
    return set(re.findall(r"\$\{(GB10_[A-Z0-9_]+)", text))


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_exits_0_runs_nothing_and_lists_the_options_and_settings_read(script, sandbox):
    result = run(script, "--help", sandbox=sandbox)
    assert result.returncode == 0, result.stderr
    assert sandbox.calls() == []
    # The one check of the help's text: it lists exactly the options parse_args takes and the
    # GB10_* settings the script reads (download-model.sh also HF_TOKEN, which hf reads).
    extra = {"HF_TOKEN"} if script == "download-model.sh" else set()
    assert documented(result.stdout) == {"--dry-run", "--help"} | settings_read(script) | extra


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_option_the_help_lists_is_accepted(script, sandbox):
    options = [name for name in documented(run(script, "--help", sandbox=sandbox).stdout) if name.startswith("--")]
    for option in options:
        assert run(script, option, sandbox=sandbox).returncode == 0, option
    assert sandbox.calls() == []  # --dry-run and --help run nothing


@pytest.mark.parametrize("script", SCRIPTS)
def test_unknown_argument_exits_2_with_one_line_on_stderr(script, sandbox):
    result = run(script, "--no-such-option", sandbox=sandbox)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"{script}: unknown argument: --no-such-option (try --help)"]
    assert sandbox.calls() == []


# --- --dry-run runs nothing, and shows what a real run runs -------------------

@pytest.mark.parametrize("script", SCRIPTS)
def test_dry_run_exits_0_and_runs_no_docker_git_uvx_curl_or_sha256sum(script, sandbox):
    result = run(script, "--dry-run", sandbox=sandbox)
    assert result.returncode == 0, result.stderr
    assert sandbox.calls() == []
    # Nothing was created either.
    assert not (sandbox.tmp / "models").exists()
    assert not (sandbox.tmp / "build").exists()


@pytest.mark.parametrize("script", SCRIPTS)
def test_dry_run_shows_the_commands_a_real_run_runs(script, sandbox):
    if script == "start-server.sh":
        with_model_file(sandbox, PIN_27B["file"])
    dry = run(script, "--dry-run", sandbox=sandbox)
    run(script, sandbox=sandbox)  # the 27B download ends in a checksum mismatch, after its uvx call
    # start-server.sh first asks docker whether its container exists (not shown: a check, not a step).
    real = [argv for argv in sandbox.argvs() if argv[:2] != ["docker", "container"] and argv[0] in FAKE_TOOLS]
    assert shown_commands(dry.stdout, FAKE_TOOLS) == real


# --- build-server.sh ---------------------------------------------------------

def docker_build(src, *, platform="linux/arm64", cuda="13.0.1", arch="121", image="prism-llama-server:gb10"):
    """The docker build command build-server.sh runs for the source in `src`."""
    return ["docker", "build", "--platform", platform, "--target", "server",
            "--file", f"{src}/.devops/cuda.Dockerfile",
            "--build-arg", f"CUDA_VERSION={cuda}", "--build-arg", "UBUNTU_VERSION=24.04",
            "--build-arg", f"BASE_CUDA_DEV_CONTAINER=nvidia/cuda:{cuda}-devel-ubuntu24.04",
            "--build-arg", f"BASE_CUDA_RUN_CONTAINER=nvidia/cuda:{cuda}-runtime-ubuntu24.04",
            "--build-arg", f"CUDA_DOCKER_ARCH={arch}", "--tag", image, src]


def test_build_clones_the_pinned_ref_checks_its_commit_and_builds_for_the_gb10(sandbox):
    src = sandbox.env["GB10_SRC_DIR"]
    result = run("build-server.sh", sandbox=sandbox)
    assert result.returncode == 0, result.stderr
    assert sandbox.argvs() == [
        ["git", "clone", "--depth", "1", "--branch", LLAMA_REF, LLAMA_URL, src],
        ["git", "-C", src, "rev-parse", "HEAD"],
        docker_build(src),
    ]


def test_build_refuses_a_ref_that_resolves_to_another_commit(sandbox):
    result = run("build-server.sh", sandbox=sandbox, FAKE_HEAD="0" * 40)
    assert result.returncode == 1
    assert [argv[0:2] for argv in sandbox.argvs()] == [["git", "clone"], ["git", "-C"]]  # no docker build


def test_build_follows_cuda_arch_and_base_image_for_another_gpu(sandbox):
    result = run("build-server.sh", sandbox=sandbox,
                 GB10_CUDA_ARCH="89", GB10_CUDA_VERSION="12.8.1", GB10_PLATFORM="linux/amd64")
    assert result.returncode == 0, result.stderr
    src = sandbox.env["GB10_SRC_DIR"]
    assert sandbox.argvs()[-1] == docker_build(src, platform="linux/amd64", cuda="12.8.1", arch="89")


def test_build_ignores_generic_names_from_the_environment(sandbox):
    result = run("build-server.sh", sandbox=sandbox, CUDA_VERSION="11.0", IMAGE="wrong:tag", CUDA_ARCH="50")
    assert result.returncode == 0, result.stderr
    assert sandbox.argvs()[-1] == docker_build(sandbox.env["GB10_SRC_DIR"])


def test_build_refuses_a_new_ref_without_its_commit(sandbox):
    result = run("build-server.sh", "--dry-run", sandbox=sandbox, GB10_LLAMA_REF="prism")
    assert result.returncode == 1  # a dry run with the pinned ref exits 0 (test_dry_run_exits_0_...)
    assert sandbox.calls() == []
    # ...and the same ref with the commit it must resolve to is accepted.
    assert run("build-server.sh", "--dry-run", sandbox=sandbox, GB10_LLAMA_REF="prism",
               GB10_LLAMA_COMMIT="1" * 40).returncode == 0


# --- download-model.sh -------------------------------------------------------

def hf_download(pin, models, file=None):
    """The uvx call download-model.sh makes for a pin (its file, unless `file` replaces it)."""
    return ["uvx", "--from", HF_HUB, "hf", "download", pin["repo"], file or pin["file"],
            "--revision", pin["revision"], "--local-dir", str(models)]


@pytest.mark.parametrize("model, pin", [(None, PIN_27B), ("8b", PIN_8B)])
def test_download_asks_hf_for_the_pin_and_checks_it_against_the_pinned_sha256(sandbox, model, pin):
    settings = {"GB10_MODEL": model} if model else {}
    result = run("download-model.sh", sandbox=sandbox, **settings)
    # The fake download is not the pinned file, so the check fails: the sha256 it was checked
    # against is the pin's.
    assert result.returncode == 1
    models = sandbox.tmp / "models"
    uvx, check = sandbox.calls()
    assert uvx.argv == hf_download(pin, models)
    assert check.argv == ["sha256sum", "-c", "-"]
    assert check.stdin == checksum_line(pin["sha256"], models / pin["file"])


@pytest.mark.parametrize("settings, says", [
    ({"GB10_MODEL": "70b"}, "GB10_MODEL='70b' is not one of: 27b 8b"),
    ({"GB10_MODEL_SHA256": ""}, "GB10_MODEL_SHA256 is empty"),
    ({"GB10_MODEL_SHA256": "not-a-sha256"}, "64 lowercase hex"),
    ({"GB10_MODEL_FILE": "Ternary-Bonsai-2-27B-PTQ1_0.gguf"}, "set GB10_MODEL_SHA256"),
    ({"GB10_MODEL_REVISION": "0" * 40}, "set GB10_MODEL_SHA256"),
    ({"GB10_MODEL_REPO": "someone/else-gguf"}, "set GB10_MODEL_SHA256"),
    ({"GB10_MODEL_REVISION": "main", "GB10_MODEL_SHA256": "a" * 64}, "40-character commit"),
], ids=["unknown-model", "checksum-unset", "checksum-malformed", "new-file-same-checksum",
        "new-revision-same-checksum", "new-repo-same-checksum", "revision-not-a-commit"])
def test_download_refuses_a_bad_setting_before_anything_runs(sandbox, settings, says):
    result = run("download-model.sh", sandbox=sandbox, **settings)
    assert result.returncode == 1
    assert sandbox.calls() == []
    assert not (sandbox.tmp / "models").exists()
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("download-model.sh: error: ") and says in lines[0]


def test_download_passes_hf_token_in_the_environment_never_on_a_command_line(sandbox):
    secret = "hf_secretvalue_do_not_print_1234"
    content = sandbox.env["FAKE_CONTENT"]
    settings = {"HF_TOKEN": secret, "GB10_MODEL_FILE": "tiny.gguf", "GB10_MODEL_SHA256": sha256(content)}
    dry = run("download-model.sh", "--dry-run", sandbox=sandbox, **settings)
    result = run("download-model.sh", sandbox=sandbox, **settings)
    assert result.returncode == 0, result.stderr
    uvx = sandbox.calls()[0]
    assert uvx.env["HF_TOKEN"] == secret
    assert not any(secret in arg or arg == "--token" for call in sandbox.calls() for arg in call.argv)
    assert secret not in dry.stdout + dry.stderr + result.stdout + result.stderr


def test_download_runs_hf_download_then_checks_the_file(sandbox):
    content = sandbox.env["FAKE_CONTENT"]
    result = run("download-model.sh", sandbox=sandbox, GB10_MODEL_FILE="tiny.gguf", GB10_MODEL_SHA256=sha256(content))
    assert result.returncode == 0, result.stderr
    models = sandbox.tmp / "models"
    uvx, check = sandbox.calls()
    assert uvx.argv == hf_download(PIN_27B, models, file="tiny.gguf")
    assert check.argv == ["sha256sum", "-c", "-"]
    assert check.stdin == checksum_line(sha256(content), models / "tiny.gguf")
    assert (models / "tiny.gguf").read_text() == content


def test_download_sets_a_mismatching_download_aside_and_fails(sandbox):
    result = run("download-model.sh", sandbox=sandbox,
                 GB10_MODEL_FILE="tiny.gguf", GB10_MODEL_SHA256=sha256("the pinned bytes"))
    assert result.returncode == 1
    models = sandbox.tmp / "models"
    assert not (models / "tiny.gguf").exists()  # start-server.sh cannot pick it up
    assert (models / "tiny.gguf.bad").read_text() == sandbox.env["FAKE_CONTENT"]


@pytest.mark.parametrize("matches, status", [(True, 0), (False, 1)])
def test_download_checks_an_existing_file_with_sha256sum_and_downloads_nothing(sandbox, matches, status):
    path = with_model_file(sandbox, "tiny.gguf", b"not really a model\n")
    expected = sha256("not really a model\n" if matches else "the real thing\n")
    result = run("download-model.sh", sandbox=sandbox, GB10_MODEL_FILE="tiny.gguf", GB10_MODEL_SHA256=expected)
    assert result.returncode == status, result.stderr
    [check] = sandbox.calls()  # sha256sum only: no uvx
    assert check.argv == ["sha256sum", "-c", "-"]
    assert check.stdin == checksum_line(expected, path)
    assert path.exists()  # a file that does not match is left where it is, for the reader to look at


def test_download_neither_replaces_nor_sets_aside_an_existing_file_that_does_not_match(sandbox):
    # Unlike a fresh download that fails its check, a file the reader put there stays as it is.
    path = with_model_file(sandbox, "tiny.gguf", b"tampered\n")
    result = run("download-model.sh", sandbox=sandbox,
                 GB10_MODEL_FILE="tiny.gguf", GB10_MODEL_SHA256=sha256("the real thing\n"))
    assert result.returncode == 1
    assert [call.argv[0] for call in sandbox.calls()] == ["sha256sum"]
    assert path.read_bytes() == b"tampered\n"
    assert not path.with_name("tiny.gguf.bad").exists()


# --- start-server.sh ---------------------------------------------------------

def docker_run(models, pin, *, port="8080", name="bonsai-server", image="prism-llama-server:gb10"):
    """The docker run command start-server.sh runs: llama-server as the series needs it."""
    return ["docker", "run", "--detach", "--name", name, "--gpus", "all",
            "--publish", f"127.0.0.1:{port}:8080",  # loopback only
            "--volume", f"{models}:/models:ro", image,
            "--model", f"/models/{pin['file']}", "--alias", pin["alias"],
            "--host", "0.0.0.0", "--port", "8080",
            "-c", "16384", "-np", "1", "-ngl", "99", "--jinja", "--reasoning", "off"]


def health_check(port="8080"):
    return ["curl", "--silent", "--output", "/dev/null", "--write-out", "%{http_code}", "--max-time", "5",
            f"http://127.0.0.1:{port}/health"]


@pytest.mark.parametrize("model, pin", [(None, PIN_27B), ("8b", PIN_8B)])
def test_start_runs_llama_server_on_loopback_and_waits_for_health(sandbox, model, pin):
    path = with_model_file(sandbox, pin["file"])
    settings = {"GB10_MODEL": model} if model else {}
    result = run("start-server.sh", sandbox=sandbox, **settings)
    assert result.returncode == 0, result.stderr
    assert sandbox.argvs() == [
        ["docker", "container", "inspect", "bonsai-server"],  # no container of that name yet
        docker_run(path.parent, pin),
        health_check(),  # answered 200 at once
    ]


def test_start_keeps_loopback_when_the_port_changes(sandbox):
    path = with_model_file(sandbox, PIN_27B["file"])
    result = run("start-server.sh", sandbox=sandbox, GB10_PORT="18080")
    assert result.returncode == 0, result.stderr
    assert sandbox.argvs()[1:] == [docker_run(path.parent, PIN_27B, port="18080"), health_check("18080")]


def test_start_ignores_generic_names_from_the_environment(sandbox):
    path = with_model_file(sandbox, PIN_27B["file"])
    result = run("start-server.sh", sandbox=sandbox, CONTAINER_NAME="someone-elses", PORT="1", IMAGE="wrong:tag")
    assert result.returncode == 0, result.stderr
    assert sandbox.argvs()[1:] == [docker_run(path.parent, PIN_27B), health_check()]


def test_start_waits_for_health_at_most_the_timeout_then_shows_the_logs(sandbox):
    # /health answers 503 and the container keeps running: the wait ends at GB10_HEALTH_TIMEOUT.
    sandbox.fake("curl", "printf 503")
    sandbox.fake("docker", FAKE_DOCKER_RUNNING)
    sandbox.fake("sleep", "exit 0")  # the wait is counted in pauses, so a pause need not take time
    with_model_file(sandbox, PIN_27B["file"])
    result = run("start-server.sh", sandbox=sandbox, GB10_HEALTH_TIMEOUT="5")
    assert result.returncode == 1
    argvs = sandbox.argvs()
    assert argvs.count(health_check()) == 3  # asked, then again after each pause...
    assert argvs.count(["sleep", "2"]) == 2  # ...of two seconds: two of them fit in 5 s
    assert argvs[-1] == ["docker", "logs", "--tail", "50", "bonsai-server"]  # then the logs, and stop


def plain_fake(sandbox, name, body):
    """A fake `name` in plain sh that only appends its arguments to <tmp>/<name>.calls, one line per call, then runs
    body: no recorder (a Python start per call), for a test that makes hundreds of calls."""
    tool = sandbox.fake_bin / name
    tool.write_text(f'#!/bin/sh\necho "$*" >> "{sandbox.tmp / name}.calls"\n{body}\n')
    tool.chmod(0o755)
    return lambda: (sandbox.tmp / f"{name}.calls").read_text().splitlines()


def test_start_waits_300_s_for_health_by_default(sandbox):
    # As above without GB10_HEALTH_TIMEOUT: 300 s are 150 pauses of 2 s (faked, so they take no time).
    curl_calls = plain_fake(sandbox, "curl", "printf 503")
    sleep_calls = plain_fake(sandbox, "sleep", "exit 0")
    docker_calls = plain_fake(sandbox, "docker", FAKE_DOCKER_RUNNING)
    with_model_file(sandbox, PIN_27B["file"])
    result = run("start-server.sh", sandbox=sandbox)
    assert result.returncode == 1
    assert docker_calls()[-1] == "logs --tail 50 bonsai-server"  # the wait ended at its bound, not at a stop
    assert sleep_calls() == ["2"] * 150
    assert curl_calls() == [" ".join(health_check()[1:])] * 151


def test_start_refuses_a_port_that_is_not_a_number(sandbox):
    result = run("start-server.sh", "--dry-run", sandbox=sandbox, GB10_PORT="80a")
    assert result.returncode == 1  # with GB10_PORT=18080 a dry run exits 0
    assert run("start-server.sh", "--dry-run", sandbox=sandbox, GB10_PORT="18080").returncode == 0


def test_start_without_dry_run_stops_before_docker_when_the_model_is_missing(sandbox):
    result = run("start-server.sh", sandbox=sandbox)
    assert result.returncode == 1
    assert sandbox.calls() == []  # with the file there, the same run starts the container (tests above)
    assert not (sandbox.tmp / "models" / PIN_27B["file"]).exists()  # nothing was downloaded either
