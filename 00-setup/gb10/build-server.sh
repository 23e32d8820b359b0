#!/usr/bin/env bash
# build-server.sh: clone the PrismML fork of llama.cpp at a pinned ref and
# build a CUDA Docker image of llama-server for an NVIDIA GB10 (DGX Spark
# class: ARM64 Grace CPU, Blackwell GPU, compute capability 12.1).
#
# This is the GB10 reference path. It has NOT been run or tested on the
# machine this repository is developed on (no GPU, no Docker engine there);
# the tests only shellcheck it and run it against fake docker, git, curl and uvx
# that record their calls. Read it before you run it.
#
# Run `build-server.sh --help` for the settings and their defaults.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- Pinned source ----------------------------------------------------------
# PrismML's llama.cpp fork adds what the Ternary Bonsai models need: the PQ2_0
# and PTQ1_0 ternary types (ggml types 142 and 143), the group-64 Q2_0 kernels,
# and the Hadamard transforms and sign flips of Ternary Bonsai 2 27B's rotated
# basis. The ref is a release tag; the commit is what that tag must resolve to,
# checked after checkout.
# This release loads both pinned models (models.sh). PrismML's own support
# table audits CUDA at this tag with PQ2_0 and the Hadamard path implemented:
#   https://github.com/PrismML-Eng/Bonsai-demo/blob/main/BACKEND-SUPPORT.md
# and the GB10 benchmark of Ternary-Bonsai-2-27B-PQ2_0.gguf in PrismML's demo
# repository ran an earlier fork build (10687, 5d80cff0b):
#   https://github.com/PrismML-Eng/Bonsai-demo/blob/main/community-benchmarks/ternary-bonsai/cuda-gb10-bonsai2-27b-linux.md
DEFAULT_LLAMA_REF="prism-b10709-9a9394a"
DEFAULT_LLAMA_COMMIT="9a9394a895b96003ca842a6041cb28ac49a108f7"
LLAMA_REPO_URL="${GB10_LLAMA_REPO_URL:-https://github.com/PrismML-Eng/llama.cpp.git}"
LLAMA_REF="${GB10_LLAMA_REF:-$DEFAULT_LLAMA_REF}"
LLAMA_COMMIT="${GB10_LLAMA_COMMIT-$DEFAULT_LLAMA_COMMIT}"

# --- The two settings to change for another NVIDIA GPU ----------------------
# (Each can also be set from outside as GB10_<NAME>, e.g. GB10_CUDA_ARCH=89.)
# 1. CUDA_ARCH: the GPU's compute capability without the dot.
#    121 = GB10 / DGX Spark. Others: 120 = RTX 50xx, 90 = H100, 89 = RTX 40xx,
#    86 = RTX 30xx. `nvidia-smi --query-gpu=compute_cap --format=csv` tells.
CUDA_ARCH="${GB10_CUDA_ARCH:-121}"
# 2. The base image: the CUDA version (and Ubuntu) of the nvidia/cuda images
#    the build and runtime stages start from. Its nvcc must know CUDA_ARCH
#    (for sm_121 use CUDA 13.x) and the host driver must support that CUDA
#    version (DGX Spark ships a CUDA 13.0 driver, 580 series).
CUDA_VERSION="${GB10_CUDA_VERSION:-13.0.1}"
UBUNTU_VERSION="${GB10_UBUNTU_VERSION:-24.04}"
BASE_DEV_IMAGE="${GB10_BASE_DEV_IMAGE:-nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION}}"
BASE_RUN_IMAGE="${GB10_BASE_RUN_IMAGE:-nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION}}"
# GB10 is arm64. An x86_64 host with another NVIDIA GPU wants linux/amd64.
PLATFORM="${GB10_PLATFORM:-linux/arm64}"

# --- Everything else --------------------------------------------------------
SRC_DIR="${GB10_SRC_DIR:-$SCRIPT_DIR/build/llama.cpp-prism}"
# The CUDA Dockerfile of llama.cpp (path inside the source tree). Its `server`
# stage runs llama-server as the entrypoint.
DOCKERFILE="${GB10_DOCKERFILE:-.devops/cuda.Dockerfile}"
IMAGE="${GB10_IMAGE:-prism-llama-server:gb10}"

DRY_RUN=0

usage() {
    cat <<EOF
Usage: $SCRIPT_NAME [--dry-run] [--help]

Clone the PrismML llama.cpp fork at a pinned ref and build a CUDA Docker
image of llama-server for the GB10 (arm64, compute capability 12.1).
GB10 reference path: not run or tested on the development machine.

Options:
  --dry-run   print every command (git, docker) without running any; exit 0
  --help      show this help and exit

Settings (environment variables, default in brackets):
  GB10_LLAMA_REPO_URL  fork to clone
                       [https://github.com/PrismML-Eng/llama.cpp.git]
  GB10_LLAMA_REF       tag or branch to build [$DEFAULT_LLAMA_REF]
  GB10_LLAMA_COMMIT    full commit the ref must resolve to
                       [$DEFAULT_LLAMA_COMMIT]
                       (must be set again whenever GB10_LLAMA_REF is changed)
  GB10_CUDA_ARCH       CUDA architecture: compute capability without the dot
                       [121 = GB10]; change it for another NVIDIA GPU
  GB10_CUDA_VERSION    CUDA version of the nvidia/cuda base images [13.0.1]
  GB10_UBUNTU_VERSION  Ubuntu version of the nvidia/cuda base images [24.04]
  GB10_BASE_DEV_IMAGE  build-stage base image
                       [nvidia/cuda:<CUDA_VERSION>-devel-ubuntu<UBUNTU_VERSION>]
  GB10_BASE_RUN_IMAGE  runtime-stage base image
                       [nvidia/cuda:<CUDA_VERSION>-runtime-ubuntu<UBUNTU_VERSION>]
  GB10_PLATFORM        docker build platform [linux/arm64]
  GB10_SRC_DIR         where the fork is cloned
                       [00-setup/gb10/build/llama.cpp-prism]
  GB10_DOCKERFILE      Dockerfile inside the source tree [.devops/cuda.Dockerfile]
  GB10_IMAGE           tag of the image built [prism-llama-server:gb10]

For another NVIDIA GPU change GB10_CUDA_ARCH and the base image
(GB10_CUDA_VERSION, or GB10_BASE_DEV_IMAGE and GB10_BASE_RUN_IMAGE), and
GB10_PLATFORM (linux/amd64) on an x86_64 host.

Exit status: 0 done, 1 a setting or a step failed, 2 bad arguments.
EOF
}

# shellcheck source=SCRIPTDIR/lib.sh
source "$SCRIPT_DIR/lib.sh"

parse_args "$@"

# --- Check the settings -----------------------------------------------------
[[ "$CUDA_ARCH" =~ ^[0-9]{2,3}[a-z]?(-real|-virtual)?$ ]] \
    || die "GB10_CUDA_ARCH='$CUDA_ARCH' is not a CUDA architecture such as 121 or 89"
[ -n "$LLAMA_REF" ] || die "GB10_LLAMA_REF is empty"
if [ "$LLAMA_REF" != "$DEFAULT_LLAMA_REF" ] && [ "$LLAMA_COMMIT" = "$DEFAULT_LLAMA_COMMIT" ]; then
    die "GB10_LLAMA_REF was changed to '$LLAMA_REF': set GB10_LLAMA_COMMIT to the full commit it must resolve to"
fi
[[ "$LLAMA_COMMIT" =~ ^[0-9a-f]{40}$ ]] \
    || die "GB10_LLAMA_COMMIT='$LLAMA_COMMIT' is not a full 40-character commit hash; set it to the commit GB10_LLAMA_REF must resolve to"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run: nothing below is executed"
else
    command -v git >/dev/null 2>&1 || die "git is not installed"
    command -v docker >/dev/null 2>&1 || die "docker is not installed"
fi

# --- 1. Source at the pinned ref --------------------------------------------
if [ -d "$SRC_DIR/.git" ]; then
    if [ "$DRY_RUN" -eq 0 ] && [ -n "$(git -C "$SRC_DIR" status --porcelain)" ]; then
        die "$SRC_DIR has local changes; commit, stash or delete them first"
    fi
    run git -C "$SRC_DIR" fetch --depth 1 origin "$LLAMA_REF"
    run git -C "$SRC_DIR" checkout --detach FETCH_HEAD
else
    run mkdir -p "$(dirname "$SRC_DIR")"
    run git clone --depth 1 --branch "$LLAMA_REF" "$LLAMA_REPO_URL" "$SRC_DIR"
fi

show git -C "$SRC_DIR" rev-parse HEAD
if [ "$DRY_RUN" -eq 0 ]; then
    head_commit="$(git -C "$SRC_DIR" rev-parse HEAD)"
    [ "$head_commit" = "$LLAMA_COMMIT" ] \
        || die "$LLAMA_REF resolved to $head_commit, expected $LLAMA_COMMIT; refusing to build"
    echo "source: $LLAMA_REF at $head_commit"
    [ -f "$SRC_DIR/$DOCKERFILE" ] \
        || die "$DOCKERFILE not found in $SRC_DIR; set GB10_DOCKERFILE to the fork's CUDA Dockerfile"
fi

# --- 2. Image ---------------------------------------------------------------
# The build args are those of llama.cpp's .devops/cuda.Dockerfile.
run docker build \
    --platform "$PLATFORM" \
    --target server \
    --file "$SRC_DIR/$DOCKERFILE" \
    --build-arg "CUDA_VERSION=$CUDA_VERSION" \
    --build-arg "UBUNTU_VERSION=$UBUNTU_VERSION" \
    --build-arg "BASE_CUDA_DEV_CONTAINER=$BASE_DEV_IMAGE" \
    --build-arg "BASE_CUDA_RUN_CONTAINER=$BASE_RUN_IMAGE" \
    --build-arg "CUDA_DOCKER_ARCH=$CUDA_ARCH" \
    --tag "$IMAGE" \
    "$SRC_DIR"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run done: would have built $IMAGE"
else
    echo "built $IMAGE (llama.cpp $LLAMA_REF, CUDA $CUDA_VERSION, arch $CUDA_ARCH)"
    echo "next: download-model.sh, then start-server.sh"
fi
