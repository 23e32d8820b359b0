"""How every script of the series ends on a reader's mistake: one line on stderr and an exit code.

    if __name__ == "__main__":
        sys.exit(exit_on_bad_input(main))

A script that needs no server ends through exit_on_bad_input and so loads no
HTTP code; 00-setup/llama_http.py's exit_on_server_errors adds the server's
errors (unreachable, loading, a refused request...) to the same rule.
"""
from __future__ import annotations

import sys


def exit_on_bad_input(main, also: tuple[type[Exception], ...] = ()) -> int:
    """Run main() and turn a reader's mistakes into one line and an exit code, with no server involved.

    main: a function of no arguments returning an exit status (None counts as 0).
    ValueError (a bad line or argument), OSError (a missing file) and the
    types in `also` -> "error: ..." on stderr and exit 2; KeyboardInterrupt ->
    "interrupted" on stderr and exit 130. Anything else propagates.
    """
    try:
        return main() or 0
    except (ValueError, OSError, *also) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
