# shellcheck shell=bash
# lib.sh: helpers shared by the three GB10 scripts and by the three setup
# commands one folder up (sourced, not run).
# Each script sets SCRIPT_NAME and DRY_RUN=0 and defines usage() before
# sourcing this file, then calls parse_args "$@".

die() {
    echo "$SCRIPT_NAME: error: $*" >&2
    exit 1
}

# Print a command the way a shell would read it back.
show() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
}

# Run a command, or only print it under --dry-run.
run() {
    show "$@"
    if [ "$DRY_RUN" -eq 0 ]; then
        "$@"
    fi
}

is_uint() {
    [[ "$1" =~ ^[0-9]+$ ]]
}

# A bad command line: one line on stderr, exit 2.
usage_error() {
    echo "$SCRIPT_NAME: $* (try --help)" >&2
    exit 2
}

# --help, --dry-run; anything else is one line on stderr and exit 2.
parse_args() {
    local arg
    for arg in "$@"; do
        case "$arg" in
            --help | -h) usage; exit 0 ;;
            --dry-run) DRY_RUN=1 ;;
            *) usage_error "unknown argument: $arg" ;;
        esac
    done
}
