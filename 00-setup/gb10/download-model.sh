#!/usr/bin/env bash
# download-model.sh: download the Ternary Bonsai GGUF (a Qwen3-8B-based
# ternary-weight model from PrismML) from a pinned Hugging Face URL into a
# models folder, and verify its sha256 with `sha256sum -c` before it is used.
# It refuses to go on when the checksum is unset or does not match.
#
# This is the GB10 reference path. It has NOT been run or tested on the
# machine this repository is developed on (no internet there beyond package
# registries); only shellcheck and --dry-run are checked.
#
# Run `download-model.sh --help` for the settings and their defaults.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- Pinned model -----------------------------------------------------------
# prism-ml/Ternary-Bonsai-8B-gguf at a fixed repository revision. The file is
# the official group-64 Q2_0 packing, which the PrismML fork (prism-v7 and
# later, including the ref build-server.sh pins) and mainline llama.cpp both
# load. The checksum is the Git LFS sha256 of that file at that revision.
DEFAULT_MODEL_URL="https://huggingface.co/prism-ml/Ternary-Bonsai-8B-gguf/resolve/c2aefbeb4b24469cd11579c3384b990404c17a30/Ternary-Bonsai-8B-Q2_0_g64.gguf"
DEFAULT_MODEL_SHA256="e17b298d84ee78797916ae5c2ecc8211469cc65cccfe3080cd9a9bb503fbc55e"
MODEL_URL="${GB10_MODEL_URL:-$DEFAULT_MODEL_URL}"
# `-` not `:-`: setting GB10_MODEL_SHA256 to an empty value unsets the
# checksum, and the script then refuses to run.
MODEL_SHA256="${GB10_MODEL_SHA256-$DEFAULT_MODEL_SHA256}"
MODELS_DIR="${GB10_MODELS_DIR:-$SCRIPT_DIR/models}"
# Optional. The pinned repository is public; a token only helps with rate
# limits. It is sent in a header read from stdin and never printed.
HF_TOKEN="${HF_TOKEN:-}"

DRY_RUN=0

usage() {
    cat <<EOF
Usage: $SCRIPT_NAME [--dry-run] [--help]

Download the Ternary Bonsai GGUF into a models folder and verify it with
sha256sum -c. GB10 reference path: not run or tested on the development
machine.

Options:
  --dry-run   print every command (curl, sha256sum) without running any; exit 0
  --help      show this help and exit

Settings (environment variables, default in brackets):
  GB10_MODEL_URL     URL of the GGUF, pinned to a repository revision
                     [$DEFAULT_MODEL_URL]
  GB10_MODEL_SHA256  expected sha256 of that file
                     [$DEFAULT_MODEL_SHA256]
                     Required. Set it again whenever GB10_MODEL_URL is
                     changed; an empty value makes the script refuse to run.
  GB10_MODELS_DIR    where the model is stored [00-setup/gb10/models]
  HF_TOKEN           optional Hugging Face token; used, never printed

The file name is the last part of the URL. start-server.sh reads the same
GB10_MODELS_DIR, and GB10_MODEL_FILE for the file name.

Exit status: 0 verified, 1 a setting, the download or the checksum failed,
2 bad arguments.
EOF
}

# shellcheck source=SCRIPTDIR/lib.sh
source "$SCRIPT_DIR/lib.sh"

# sha256sum -c on one file, the checksum line given on stdin.
verify() {
    local file="$1" line
    line="$(printf '%s  %s' "$MODEL_SHA256" "$file")"
    printf '+ sha256sum -c - <<<%q\n' "$line"
    if [ "$DRY_RUN" -eq 0 ]; then
        sha256sum -c - <<<"$line"
    fi
}

parse_args "$@"

# --- Check the settings -----------------------------------------------------
[ -n "$MODEL_SHA256" ] \
    || die "GB10_MODEL_SHA256 is empty: set it to the published sha256 of the file at GB10_MODEL_URL; refusing to download an unverifiable model"
[[ "$MODEL_SHA256" =~ ^[0-9a-f]{64}$ ]] \
    || die "GB10_MODEL_SHA256 must be 64 lowercase hex characters, got '$MODEL_SHA256'"
if [ "$MODEL_URL" != "$DEFAULT_MODEL_URL" ] && [ "$MODEL_SHA256" = "$DEFAULT_MODEL_SHA256" ]; then
    die "GB10_MODEL_URL was changed: set GB10_MODEL_SHA256 to the sha256 of that file too"
fi
[[ "$MODEL_URL" =~ ^https://[^[:space:]]+/[^/[:space:]]+\.gguf$ ]] \
    || die "GB10_MODEL_URL must be an https URL ending in a .gguf file name, got '$MODEL_URL'"

MODEL_FILE="${MODEL_URL##*/}"
TARGET="$MODELS_DIR/$MODEL_FILE"
PARTIAL="$TARGET.part"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run: nothing below is executed"
else
    command -v curl >/dev/null 2>&1 || die "curl is not installed"
    command -v sha256sum >/dev/null 2>&1 || die "sha256sum is not installed"
fi

# --- Already there? ---------------------------------------------------------
if [ -e "$TARGET" ]; then
    if verify "$TARGET"; then
        if [ "$DRY_RUN" -eq 1 ]; then
            echo "# dry run done: $TARGET exists; would have verified it and stopped"
        else
            echo "model present and verified: $TARGET"
        fi
        exit 0
    fi
    die "$TARGET does not match GB10_MODEL_SHA256; move it away or delete it, then run again"
fi

# --- Download to a .part file, verify, then move into place ------------------
run mkdir -p "$MODELS_DIR"
curl_args=(--fail --location --retry 3 --continue-at - --output "$PARTIAL")
if [ -n "$HF_TOKEN" ]; then
    # The header line (with the token) goes to curl on stdin, so it shows up
    # neither in this output nor in the process list.
    show curl "${curl_args[@]}" --header @- "$MODEL_URL"
    echo "# (Authorization header read from stdin; HF_TOKEN not shown)"
    if [ "$DRY_RUN" -eq 0 ]; then
        printf 'Authorization: Bearer %s\n' "$HF_TOKEN" \
            | curl "${curl_args[@]}" --header @- "$MODEL_URL" \
            || die "download failed: $MODEL_URL"
    fi
else
    run curl "${curl_args[@]}" "$MODEL_URL" || die "download failed: $MODEL_URL"
fi

if ! verify "$PARTIAL"; then
    if [ "$DRY_RUN" -eq 0 ]; then
        mv -f -- "$PARTIAL" "$PARTIAL.bad"
    fi
    die "checksum mismatch for $MODEL_FILE (kept as $PARTIAL.bad for inspection); refusing to continue"
fi
run mv -f -- "$PARTIAL" "$TARGET"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run done: would have stored and verified $TARGET"
else
    echo "model downloaded and verified: $TARGET"
    echo "next: start-server.sh"
fi
