#!/usr/bin/env bash
# download-model.sh: download the pinned Ternary Bonsai GGUF (by default
# Ternary Bonsai 2 27B, the series' model) into a models folder with the
# Hugging Face CLI run by uv (`uvx --from huggingface_hub hf download`), pinned
# to a repository revision, and verify its sha256 with `sha256sum -c` before it
# is used. It refuses to go on when the checksum is unset or does not match.
#
# This is the GB10 reference path. It has NOT been run or tested on the
# machine this repository is developed on (no Hugging Face access there);
# the tests only shellcheck it and run it against fake docker, git, curl and uvx
# that record their calls.
#
# Run `download-model.sh --help` for the settings and their defaults.
set -euo pipefail

SCRIPT_NAME="$(basename "${BASH_SOURCE[0]}")"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=SCRIPTDIR/lib.sh
source "$SCRIPT_DIR/lib.sh"
# shellcheck source=SCRIPTDIR/models.sh
source "$SCRIPT_DIR/models.sh"

# The Hugging Face CLI, pinned; uvx fetches it from PyPI into its own cache.
HF_HUB="${GB10_HF_HUB:-huggingface_hub==2.4.0}"

DRY_RUN=0

usage() {
    cat <<EOF
Usage: $SCRIPT_NAME [--dry-run] [--help]

Download the pinned Ternary Bonsai GGUF into a models folder with
'uvx --from $HF_HUB hf download', and verify it with sha256sum -c.
GB10 reference path: not run or tested on the development machine.

Options:
  --dry-run   print every command (uvx, sha256sum) without running any; exit 0
  --help      show this help and exit

Settings (environment variables, default in brackets):
  GB10_MODEL           which pin [27b]; 8b suits a GPU with less memory:
$(model_choices_help "                         ")
  GB10_MODEL_REPO      Hugging Face repository [of the pin]
  GB10_MODEL_REVISION  repository revision, a commit [of the pin]
  GB10_MODEL_FILE      GGUF file in the repository [of the pin]
  GB10_MODEL_SHA256    expected sha256 of that file [of the pin]
                       Required. Set it again whenever the repository,
                       revision or file is changed; an empty value makes the
                       script refuse to run.
  GB10_MODELS_DIR      where the model is stored [00-setup/gb10/models]
  GB10_HF_HUB          the package uvx runs hf from [huggingface_hub==2.4.0]
  HF_TOKEN             optional Hugging Face token; read by hf, never printed

Needs uv (https://docs.astral.sh/uv/) for uvx, and sha256sum. start-server.sh
reads the same GB10_MODEL, GB10_MODELS_DIR and GB10_MODEL_FILE.

Exit status: 0 verified, 1 a setting, the download or the checksum failed,
2 bad arguments.
EOF
}

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

# --- The model --------------------------------------------------------------
# GB10_MODEL picks a pin from models.sh (27b, or 8b for a smaller GPU). Each
# part can be replaced; a replaced repository, revision or file needs its own
# GB10_MODEL_SHA256.
select_model
MODEL_REPO="${GB10_MODEL_REPO:-$PIN_REPO}"
MODEL_REVISION="${GB10_MODEL_REVISION:-$PIN_REVISION}"
MODEL_FILE="${GB10_MODEL_FILE:-$PIN_FILE}"
# `-` not `:-`: setting GB10_MODEL_SHA256 to an empty value unsets the
# checksum, and the script then refuses to run.
MODEL_SHA256="${GB10_MODEL_SHA256-$PIN_SHA256}"
MODELS_DIR="${GB10_MODELS_DIR:-$SCRIPT_DIR/models}"
# Optional. The pinned repositories are public; a token only helps with rate
# limits. hf reads it from the environment: it is never on a command line and
# never printed.
HF_TOKEN="${HF_TOKEN:-}"

# --- Check the settings -----------------------------------------------------
[ -n "$MODEL_SHA256" ] \
    || die "GB10_MODEL_SHA256 is empty: set it to the published sha256 of $MODEL_FILE; refusing to download an unverifiable model"
[[ "$MODEL_SHA256" =~ ^[0-9a-f]{64}$ ]] \
    || die "GB10_MODEL_SHA256 must be 64 lowercase hex characters, got '$MODEL_SHA256'"
if [ "$MODEL_REPO/$MODEL_REVISION/$MODEL_FILE" != "$PIN_REPO/$PIN_REVISION/$PIN_FILE" ] \
    && [ "$MODEL_SHA256" = "$PIN_SHA256" ]; then
    die "the repository, revision or file was changed: set GB10_MODEL_SHA256 to the sha256 of that file too"
fi
[[ "$MODEL_REPO" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] \
    || die "GB10_MODEL_REPO='$MODEL_REPO' is not a Hugging Face repository name such as owner/name"
[[ "$MODEL_REVISION" =~ ^[0-9a-f]{40}$ ]] \
    || die "GB10_MODEL_REVISION='$MODEL_REVISION' is not a full 40-character commit hash"
[[ "$MODEL_FILE" =~ ^[^/]+\.gguf$ ]] \
    || die "GB10_MODEL_FILE='$MODEL_FILE' must be a .gguf file name (no folders)"

TARGET="$MODELS_DIR/$MODEL_FILE"
echo "model: $MODEL_REPO@$MODEL_REVISION $MODEL_FILE"
echo "  from $(hf_file_url "$MODEL_REPO" "$MODEL_REVISION" "$MODEL_FILE")"
echo "  sha256 $MODEL_SHA256"

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run: nothing below is executed"
else
    command -v uvx >/dev/null 2>&1 \
        || die "uvx is not installed; install uv (https://docs.astral.sh/uv/getting-started/installation/)"
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

# --- Download, then verify --------------------------------------------------
# hf writes into <models>/.cache/huggingface/ while it downloads and moves the
# finished file to <models>/<file>; a second run resumes an interrupted one.
run mkdir -p "$MODELS_DIR"
if [ -n "$HF_TOKEN" ]; then
    echo "# (HF_TOKEN is set: hf reads it from the environment; not shown)"
fi
run uvx --from "$HF_HUB" hf download "$MODEL_REPO" "$MODEL_FILE" \
    --revision "$MODEL_REVISION" --local-dir "$MODELS_DIR" \
    || die "download failed: $MODEL_REPO@$MODEL_REVISION $MODEL_FILE"

if ! verify "$TARGET"; then
    if [ "$DRY_RUN" -eq 0 ]; then
        mv -f -- "$TARGET" "$TARGET.bad"
    fi
    die "checksum mismatch for $MODEL_FILE (kept as $TARGET.bad for inspection); refusing to continue"
fi

if [ "$DRY_RUN" -eq 1 ]; then
    echo "# dry run done: would have stored and verified $TARGET"
else
    echo "model downloaded and verified: $TARGET"
    echo "next: start-server.sh"
fi
