#!/usr/bin/env bash
# build-server.sh: build llama-server, on the path this machine can take.
#   GB10 reference path (Docker with the NVIDIA runtime and a GPU):
#     00-setup/gb10/build-server.sh: the PrismML llama.cpp fork built into a CUDA Docker image.
#   CPU path (any other machine, or --cpu):
#     python3 00-setup/server.py build: a CPU build from the llama.cpp that the llama-cpp-python sdist vendors.
# The first line printed says which path and why; lib.sh has the rule.
# Run `build-server.sh --help` for the options.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup_main build "$@"
