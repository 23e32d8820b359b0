# shellcheck shell=bash
# models.sh: the pinned GGUFs of the GB10 reference path (sourced, not run, by
# download-model.sh and start-server.sh). GB10_MODEL picks one of them.
#
# A pin is a Hugging Face repository, a repository revision (a commit, so the
# file cannot change under you), a file name, its size in bytes and its sha256
# (the Git LFS oid of the file at that revision, which Hugging Face publishes on
# the file's page under "Git LFS Details").
#
# None of these downloads was made on the machine this repository is developed
# on (no Hugging Face access there). The values were read from public sources,
# named at each pin.

# select_model: set PIN_REPO, PIN_REVISION, PIN_FILE, PIN_BYTES, PIN_SHA256 and
# PIN_ALIAS to the pin that GB10_MODEL names: 27b (the default) or 8b.
# Needs die() from lib.sh.
MODEL_CHOICES="27b 8b"
# shellcheck disable=SC2034  # the PIN_* are read by the scripts that source this
select_model() {
    case "${GB10_MODEL:-27b}" in
        27b | 27B)
            # Ternary Bonsai 2 27B (PrismML, built on Qwen3.8-27B), packing PQ2_0:
            # ternary weights in 2-bit slots, one FP16 scale per group of 128, in a
            # Hadamard-rotated basis. 7,206,168,928 bytes (6.71 GiB). Published at
            # https://huggingface.co/prism-ml/Ternary-Bonsai-2-27B-gguf/blob/6ed5e12bf84b7a63069882c91dd9e9218647d17b/Ternary-Bonsai-2-27B-PQ2_0.gguf
            # The same revision, file, size and sha256 are pinned, each on its own,
            # by several public repositories that run this file (on CUDA, ROCm and
            # Metal) with the fork build that build-server.sh pins.
            # Only the PrismML llama.cpp fork loads it: PQ2_0 is the fork's ggml
            # type 142, and the rotated basis needs the fork's Hadamard transforms.
            # PrismML's support table lists both for CUDA in prism-b10709-9a9394a:
            # https://github.com/PrismML-Eng/Bonsai-demo/blob/main/BACKEND-SUPPORT.md
            PIN_REPO="prism-ml/Ternary-Bonsai-2-27B-gguf"
            PIN_REVISION="6ed5e12bf84b7a63069882c91dd9e9218647d17b"
            PIN_FILE="Ternary-Bonsai-2-27B-PQ2_0.gguf"
            PIN_BYTES="7206168928"
            PIN_SHA256="3907dc1658db1f78a9826bf8d5bcb8dc65db0d466388937af57f2294fae62ec1"
            PIN_ALIAS="ternary-bonsai-2-27b"
            ;;
        8b | 8B)
            # Ternary Bonsai 8B (PrismML, built on Qwen3-8B), for a GPU with less
            # memory: the official group-64 Q2_0 packing, which the fork and
            # mainline llama.cpp both load. 2,310,125,920 bytes. Published at
            # https://huggingface.co/prism-ml/Ternary-Bonsai-8B-gguf/blob/c2aefbeb4b24469cd11579c3384b990404c17a30/Ternary-Bonsai-8B-Q2_0_g64.gguf
            PIN_REPO="prism-ml/Ternary-Bonsai-8B-gguf"
            PIN_REVISION="c2aefbeb4b24469cd11579c3384b990404c17a30"
            PIN_FILE="Ternary-Bonsai-8B-Q2_0_g64.gguf"
            PIN_BYTES="2310125920"
            PIN_SHA256="e17b298d84ee78797916ae5c2ecc8211469cc65cccfe3080cd9a9bb503fbc55e"
            PIN_ALIAS="ternary-bonsai-8b"
            ;;
        *) die "GB10_MODEL='$GB10_MODEL' is not one of: $MODEL_CHOICES" ;;
    esac
}

# The address of a file at a revision, for people and for the record; the
# download itself goes through `hf download`.
hf_file_url() {
    printf 'https://huggingface.co/%s/resolve/%s/%s\n' "$1" "$2" "$3"
}

# One line per pin for --help, each line starting with $1 (an indent).
model_choices_help() {
    local choice
    for choice in $MODEL_CHOICES; do
        (
            GB10_MODEL="$choice"
            select_model
            printf '%s%-4s %s, %s bytes\n' "$1" "$choice" "$PIN_FILE" "$PIN_BYTES"
        )
    done
}
