#!/usr/bin/env bash
# start-server.sh: start llama-server, on the path this machine can take.
#   GB10 reference path (Docker with the NVIDIA runtime and a GPU):
#     00-setup/gb10/start-server.sh: llama-server in Docker on the GPU, reasoning off, 127.0.0.1:8080.
#   CPU path (any other machine, or --cpu):
#     python3 00-setup/server.py start: llama-server on 127.0.0.1:8080, then one warm-up request.
# The first line printed says which path and why; lib.sh has the rule.
# Run `start-server.sh --help` for the options.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup_main start "$@"
