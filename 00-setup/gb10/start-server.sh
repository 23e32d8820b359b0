#!/usr/bin/env bash
# start-server.sh: start llama-server in Docker on the GB10 with the GPU and
# the Ternary Bonsai GGUF (by default Ternary Bonsai 2 27B) mounted read-only,
# reasoning off, the whole model on the GPU and a context large enough for an
# ~8k-token system prompt plus a message. Inside the container llama-server
# listens on 0.0.0.0; the published port is bound to 127.0.0.1 only, so the
# server is reachable from this host and not from the network. Waits
# (bounded) for /health to answer 200, then prints the URL and the model.
#
# This is the GB10 reference path. It has NOT been run or tested on the
# machine this repository is developed on (no GPU, no Docker engine there);
# the tests only shellcheck it and run it against fake docker, git, curl and uvx
# that record their calls.
#
# Needs: the image from build-server.sh, the model from download-model.sh,
# and the NVIDIA Container Toolkit on the host (for `docker run --gpus`).
# Run `start-server.sh --help` for the settings and their defaults.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

IMAGE="${GB10_IMAGE:-prism-llama-server:gb10}"
CONTAINER_NAME="${GB10_CONTAINER_NAME:-bonsai-server}"
MODELS_DIR="${GB10_MODELS_DIR:-$SCRIPT_DIR/models}"
# Host port. It is always published on 127.0.0.1 only (never 0.0.0.0).
PORT="${GB10_PORT:-8080}"
# ~8k-token system prompt + a message + the answer, with room to spare.
CTX_SIZE="${GB10_CTX_SIZE:-16384}"
# One slot, so the single request gets the whole context.
N_PARALLEL="${GB10_N_PARALLEL:-1}"
# More than the model's layer count (64 for the 27B: 48 linear-attention and
# 16 full-attention layers; 36 for the 8B): every layer on the GPU.
N_GPU_LAYERS="${GB10_N_GPU_LAYERS:-99}"
# Bounded wait for /health: loading takes seconds to a few minutes.
HEALTH_TIMEOUT="${GB10_HEALTH_TIMEOUT:-300}"
HEALTH_INTERVAL=2

# Fixed on purpose: llama-server must listen on all interfaces inside the
# container for Docker's port forwarding to reach it, and the host side is
# bound to loopback.
CONTAINER_PORT=8080
BIND_ADDRESS="127.0.0.1"

DRY_RUN=0

usage() {
    cat <<EOF
Usage: $SCRIPT_NAME [--dry-run] [--help]

Start llama-server (image from build-server.sh) with the GPU, the model
mounted read-only and reasoning off; wait for /health; print the URL and the
model. GB10 reference path: not run or tested on the development machine.

Options:
  --dry-run   print every command (docker, curl) without running any; exit 0
  --help      show this help and exit

Settings (environment variables, default in brackets):
  GB10_IMAGE           image to run [prism-llama-server:gb10]
  GB10_CONTAINER_NAME  name of the container [bonsai-server]
  GB10_MODELS_DIR      folder holding the model, mounted read-only at /models
                       [00-setup/gb10/models]
  GB10_MODEL           which pinned model (models.sh) [27b]:
$(model_choices_help "                         ")
  GB10_MODEL_FILE      GGUF file in that folder [the file of GB10_MODEL]
  GB10_MODEL_ALIAS     model name the API reports
                       [ternary-bonsai-2-27b; ternary-bonsai-8b for 8b]
  GB10_PORT            host port, published on 127.0.0.1 only [8080]
  GB10_CTX_SIZE        context size in tokens (-c) [16384]
  GB10_N_PARALLEL      server slots (-np) [1]
  GB10_N_GPU_LAYERS    layers on the GPU (-ngl) [99, more than the model has]
  GB10_HEALTH_TIMEOUT  seconds to wait for /health to return 200 [300]

Always: --host 0.0.0.0 --port $CONTAINER_PORT inside the container,
--publish 127.0.0.1:<GB10_PORT>:$CONTAINER_PORT on the host, --jinja,
--reasoning off.

Stop it with: docker rm -f <GB10_CONTAINER_NAME>

Exit status: 0 server healthy, 1 a setting or a step failed, 2 bad arguments.
EOF
}

# shellcheck source=SCRIPTDIR/lib.sh
source "$SCRIPT_DIR/lib.sh"
# shellcheck source=SCRIPTDIR/models.sh
source "$SCRIPT_DIR/models.sh"

parse_args "$@"

# The model: the pin GB10_MODEL names (models.sh), unless set here.
select_model
MODEL_FILE="${GB10_MODEL_FILE:-$PIN_FILE}"
MODEL_ALIAS="${GB10_MODEL_ALIAS:-$PIN_ALIAS}"

# --- Check the settings -----------------------------------------------------
is_uint "$PORT" && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] \
    || die "GB10_PORT='$PORT' is not a port number (1-65535)"
is_uint "$CTX_SIZE" && [ "$CTX_SIZE" -ge 1024 ] \
    || die "GB10_CTX_SIZE='$CTX_SIZE' must be a whole number of tokens, at least 1024"
is_uint "$N_PARALLEL" && [ "$N_PARALLEL" -ge 1 ] \
    || die "GB10_N_PARALLEL='$N_PARALLEL' must be a whole number, at least 1"
is_uint "$N_GPU_LAYERS" || die "GB10_N_GPU_LAYERS='$N_GPU_LAYERS' must be a whole number"
is_uint "$HEALTH_TIMEOUT" && [ "$HEALTH_TIMEOUT" -ge 1 ] \
    || die "GB10_HEALTH_TIMEOUT='$HEALTH_TIMEOUT' must be a whole number of seconds, at least 1"
[[ "$MODEL_FILE" =~ ^[^/]+\.gguf$ ]] \
    || die "GB10_MODEL_FILE='$MODEL_FILE' must be a .gguf file name (no folders; see GB10_MODELS_DIR)"
[[ "$CONTAINER_NAME" =~ ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$ ]] \
    || die "GB10_CONTAINER_NAME='$CONTAINER_NAME' is not a valid container name"

MODEL_PATH="$MODELS_DIR/$MODEL_FILE"
BASE_URL="http://$BIND_ADDRESS:$PORT"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run: nothing below is executed"
    [ -f "$MODEL_PATH" ] || echo "# note: $MODEL_PATH does not exist here; a real run would stop (run download-model.sh first)" >&2
else
    command -v docker >/dev/null 2>&1 || die "docker is not installed"
    command -v curl >/dev/null 2>&1 || die "curl is not installed"
    [ -f "$MODEL_PATH" ] || die "$MODEL_PATH not found; run download-model.sh first"
    MODELS_DIR="$(cd "$MODELS_DIR" && pwd)"   # docker -v needs an absolute path
    MODEL_PATH="$MODELS_DIR/$MODEL_FILE"
    if docker container inspect "$CONTAINER_NAME" >/dev/null 2>&1; then
        die "a container named $CONTAINER_NAME already exists; stop it with: docker rm -f $CONTAINER_NAME"
    fi
fi

# --- Start ------------------------------------------------------------------
# The image's entrypoint is llama-server; everything after the image name is
# its arguments.
run docker run --detach \
    --name "$CONTAINER_NAME" \
    --gpus all \
    --publish "$BIND_ADDRESS:$PORT:$CONTAINER_PORT" \
    --volume "$MODELS_DIR:/models:ro" \
    "$IMAGE" \
    --model "/models/$MODEL_FILE" \
    --alias "$MODEL_ALIAS" \
    --host 0.0.0.0 \
    --port "$CONTAINER_PORT" \
    -c "$CTX_SIZE" \
    -np "$N_PARALLEL" \
    -ngl "$N_GPU_LAYERS" \
    --jinja \
    --reasoning off

# --- Wait for /health -------------------------------------------------------
health_cmd=(curl --silent --output /dev/null --write-out '%{http_code}' --max-time 5 "$BASE_URL/health")
show "${health_cmd[@]}"
echo "# (repeated every ${HEALTH_INTERVAL}s until it prints 200, for at most ${HEALTH_TIMEOUT}s)"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run done: would serve $MODEL_FILE (alias $MODEL_ALIAS) at $BASE_URL"
    exit 0
fi

# The bound is counted in pauses, not read from the clock: HEALTH_TIMEOUT / HEALTH_INTERVAL pauses (rounded
# down, so the pauses never add up to more than HEALTH_TIMEOUT), then one last ask.
pauses_left=$((HEALTH_TIMEOUT / HEALTH_INTERVAL))
status=""
while :; do
    status="$("${health_cmd[@]}" 2>/dev/null || true)"
    [ "$status" = "200" ] && break
    running="$(docker container inspect --format '{{.State.Running}}' "$CONTAINER_NAME" 2>/dev/null || echo false)"
    if [ "$running" != "true" ]; then
        docker logs --tail 50 "$CONTAINER_NAME" >&2 || true
        die "the container stopped before /health answered 200 (logs above)"
    fi
    if [ "$pauses_left" -le 0 ]; then
        docker logs --tail 50 "$CONTAINER_NAME" >&2 || true
        die "/health did not answer 200 within ${HEALTH_TIMEOUT}s (last status: ${status:-none}); the container is still running: docker rm -f $CONTAINER_NAME"
    fi
    sleep "$HEALTH_INTERVAL"
    pauses_left=$((pauses_left - 1))
done

echo "llama-server is ready"
echo "  URL:    $BASE_URL   (OpenAI-compatible API under $BASE_URL/v1)"
echo "  model:  $MODEL_FILE   (API name: $MODEL_ALIAS)"
echo "  stop:   docker rm -f $CONTAINER_NAME"
