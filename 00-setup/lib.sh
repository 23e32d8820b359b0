# shellcheck shell=bash
# lib.sh: what the three setup commands (build-server.sh, download-model.sh,
# start-server.sh in this folder) share: choosing a path and calling it.
# Sourced, not run. A command sources it and calls setup_main with its step.
#
# Two paths, and the commands only choose and call; the work is elsewhere:
#   GB10 reference path  gb10/build-server.sh, gb10/download-model.sh,
#                        gb10/start-server.sh (Docker, the PrismML llama.cpp
#                        fork with CUDA, Ternary Bonsai 2 27B)
#   CPU path             python3 server.py build | model | start

SETUP_DIR="$(dirname "${BASH_SOURCE[0]}")"
# die, show, usage_error
# shellcheck source=SCRIPTDIR/gb10/lib.sh
source "$SETUP_DIR/gb10/lib.sh"

# Seconds a probe (docker info, nvidia-smi -L) may take before it counts as
# no answer: a docker daemon behind an unreachable DOCKER_HOST can hang.
PROBE_TIMEOUT=20

probe() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$PROBE_TIMEOUT" "$@"
    else
        "$@"
    fi
}

# The first "GPU n: ..." line of nvidia-smi -L, or nothing.
first_gpu() {
    local line
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    while IFS= read -r line; do
        if [[ "$line" == GPU\ * ]]; then
            printf '%s\n' "$line"
            return 0
        fi
    done < <(probe nvidia-smi -L 2>/dev/null || true)
}

# choose_path FORCE: set SETUP_PATH (gb10 or cpu), SETUP_REASON (one line:
# the path and why) and SETUP_GPU (the GPU line, on the GB10 path).
# FORCE is --cpu, --gb10 or empty (look at the machine).
#
# The GB10 path needs a working NVIDIA container runtime: a docker CLI alone
# proves nothing (a machine can have the CLI and no daemon, or a daemon and no
# GPU). So: `docker info` must succeed, nvidia-smi -L must list a GPU, and
# docker must have the NVIDIA runtime: `nvidia` among the runtimes docker info
# lists, or nvidia-container-cli installed (the NVIDIA Container Toolkit that
# `docker run --gpus` uses).
choose_path() {
    local force="$1" runtimes error line has_runtime=""
    SETUP_PATH=cpu
    SETUP_GPU=""
    case "$force" in
        --cpu) SETUP_REASON="CPU path: --cpu given"; return ;;
        --gb10) SETUP_PATH=gb10; SETUP_REASON="GB10 reference path: --gb10 given (not checked)"; return ;;
    esac

    if ! command -v docker >/dev/null 2>&1; then
        SETUP_REASON="CPU path: no docker command on PATH"
        return
    fi
    # The names of docker's runtimes, e.g. "io.containerd.runc.v2 nvidia runc";
    # when the daemon does not answer, its error instead (the first line that
    # is not empty).
    # shellcheck disable=SC2016  # a Go template for docker, not a shell expansion
    if ! runtimes="$(probe docker info --format '{{range $name, $runtime := .Runtimes}}{{$name}} {{end}}' 2>&1)"; then
        error=""
        while IFS= read -r line && [ -z "$error" ]; do
            error="$line"
        done <<<"$runtimes"
        SETUP_REASON="CPU path: docker is installed but its daemon does not answer (docker info: ${error:-no answer within ${PROBE_TIMEOUT}s})"
        return
    fi
    runtimes="${runtimes%" "}"
    if [[ " $runtimes " == *" nvidia "* ]]; then
        has_runtime="runtime nvidia"
    elif command -v nvidia-container-cli >/dev/null 2>&1; then
        has_runtime="nvidia-container-cli"
    else
        SETUP_REASON="CPU path: docker answers but has no NVIDIA runtime (docker info lists runtimes: ${runtimes:-none}; no nvidia-container-cli)"
        return
    fi
    SETUP_GPU="$(first_gpu)"
    if [ -z "$SETUP_GPU" ]; then
        SETUP_REASON="CPU path: docker has the NVIDIA runtime ($has_runtime) but nvidia-smi -L lists no GPU"
        return
    fi
    SETUP_PATH=gb10
    SETUP_REASON="GB10 reference path: docker answers with the NVIDIA runtime ($has_runtime) and nvidia-smi -L lists ${SETUP_GPU% (UUID:*}"
}

# step_info STEP: set, for build, model or start, STEP_SUMMARY (what it does),
# STEP_GB10_SCRIPT (its script in gb10/) and STEP_EXAMPLE (arguments one may
# pass on to server.py).
step_info() {
    case "$1" in
        build)
            STEP_SUMMARY="Build llama-server"
            STEP_GB10_SCRIPT="build-server.sh"
            STEP_EXAMPLE="-- --jobs 2"
            ;;
        model)
            STEP_SUMMARY="Download (GB10) or install (CPU) the model and check its sha256"
            STEP_GB10_SCRIPT="download-model.sh"
            STEP_EXAMPLE="-- qwen2.5-coder-0.5b"
            ;;
        start)
            STEP_SUMMARY="Start llama-server and wait until it answers"
            STEP_GB10_SCRIPT="start-server.sh"
            STEP_EXAMPLE="-- --model qwen2.5-coder-0.5b"
            ;;
    esac
}

step_usage() {
    local step="$1"
    step_info "$step"
    cat <<EOF
Usage: $SCRIPT_NAME [--cpu | --gb10] [--dry-run] [--help] [-- ARGS]

$STEP_SUMMARY,
on the path this machine can take:
  GB10 reference path  00-setup/gb10/$STEP_GB10_SCRIPT
                       (Docker, PrismML llama.cpp fork with CUDA, Ternary
                       Bonsai 2 27B; its settings: 00-setup/gb10/README.md)
  CPU path             python3 00-setup/server.py $step

The GB10 reference path is taken when the docker daemon answers (docker info),
docker has the NVIDIA runtime (nvidia among its runtimes, or
nvidia-container-cli installed) and nvidia-smi -L lists a GPU. Otherwise the
CPU path. The first line printed names the path and why.

Options:
  --cpu       take the CPU path, whatever this machine has
  --gb10      take the GB10 reference path without looking
  --dry-run   print the commands of the path it would take and run none; exit 0
              (docker info and nvidia-smi -L still run, to choose the path)
  --help      show this help and exit
  -- ARGS     passed on to server.py on the CPU path,
              e.g. $STEP_EXAMPLE (see python3 00-setup/server.py $step --help)

Exit status: that of the command it runs; 2 for bad arguments.
EOF
}

# setup_main STEP ARGS...: parse the arguments, choose the path, say which and
# why, then run (or under --dry-run print) that path's command for STEP.
setup_main() {
    local step="$1" force="" dry_run=0 extra=() command=()
    shift
    while [ "$#" -gt 0 ]; do
        case "$1" in
            --help | -h) step_usage "$step"; exit 0 ;;
            --dry-run) dry_run=1 ;;
            --cpu | --gb10)
                [ -z "$force" ] || [ "$force" = "$1" ] || usage_error "--cpu and --gb10 exclude each other"
                force="$1"
                ;;
            --) shift; extra=("$@"); break ;;
            *) usage_error "unknown argument: $1" ;;
        esac
        shift
    done

    choose_path "$force"
    echo "$SETUP_REASON"

    if [ "$SETUP_PATH" = gb10 ]; then
        [ "${#extra[@]}" -eq 0 ] \
            || usage_error "arguments after -- go to server.py on the CPU path; the GB10 reference path takes GB10_* settings"
        if [ "$step" = build ] && [ -n "$SETUP_GPU" ] && [[ "$SETUP_GPU" != *GB10* ]]; then
            echo "note: build-server.sh builds for the GB10 (arm64, CUDA architecture 121) unless told otherwise; for this GPU see 'Another NVIDIA GPU' in 00-setup/gb10/README.md (GB10_CUDA_ARCH, GB10_PLATFORM)" >&2
        fi
        step_info "$step"
        command=("$SETUP_DIR/gb10/$STEP_GB10_SCRIPT")
        [ "$dry_run" -eq 0 ] || command+=(--dry-run)
        show "${command[@]}"
        exec "$BASH" "${command[@]}"
    fi

    command=(python3 "$SETUP_DIR/server.py" "$step" "${extra[@]}")
    show "${command[@]}"
    if [ "$dry_run" -eq 1 ]; then
        echo "# dry run: not run"
        exit 0
    fi
    command -v python3 >/dev/null 2>&1 || die "python3 is not installed; the CPU path runs 00-setup/server.py with it"
    exec "${command[@]}"
}
