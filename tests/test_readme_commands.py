"""Every command a README shows is checked: a README that drifts from its script fails.

The commands come from the ```console and ```sh blocks of every README.md
(the convention and the kinds are in tests/readme_commands.py). Offline
commands run in a fresh copy of the repository and must print exactly what
their console block shows; commands that need a server run against the test
server with --limit 2 (they use the `client` fixture, so they fail without
one), or have their arguments parsed by the script. After re-running the
reference results, refresh the shown outputs with

    .venv/bin/python tests/readme_commands.py --update
"""
import subprocess
import textwrap

import pytest
from readme_blocks import (ROOT, Command, ReadmeFormatError, collect, parse_markdown, readme_files,
                           unlabelled_command_blocks)
from readme_commands import (Outcome, classify, difference, imports_client, limited, matches, parse_only, run_offline,
                             run_with_limit, update_readmes, with_option, workspace)

COMMANDS = collect()
KINDS = {command.id: classify(command) for command in COMMANDS}
REFRESH = "if the script is right, refresh the README with: .venv/bin/python tests/readme_commands.py --update"


def commands_of(kind: str) -> list:
    return [pytest.param(command, id=command.id) for command in COMMANDS if KINDS[command.id].name == kind]


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A fresh copy of the repository to run the commands in; the repository itself must not change."""
    before = git_status()
    yield workspace(tmp_path_factory.mktemp("readme-commands") / "repo")
    assert git_status() == before, "running the README commands changed files of the repository"


# ---------------------------------------------------------------- the commands of the READMEs

def exits_0(outcome: Outcome, what: str = "exited with status") -> None:
    if outcome.returncode != 0:
        pytest.fail(f"{outcome.command.id}: `{outcome.command.text}` {what} {outcome.returncode}\n{outcome.stderr}",
                    pytrace=False)


@pytest.mark.parametrize("command", commands_of("offline console"))
def test_offline_console_command_prints_what_the_readme_shows(command, workdir):
    outcome = run_offline(command, workdir)
    exits_0(outcome)
    if not matches(command.output, outcome.lines):
        pytest.fail(f"{command.id}: `{command.text}` printed something else than its README shows:\n"
                    f"{difference(command, outcome.lines)}\n{REFRESH}", pytrace=False)


@pytest.mark.parametrize("command", commands_of("offline sh"))
def test_offline_sh_command_exits_with_status_0(command, workdir):
    exits_0(run_offline(command, workdir))


@pytest.mark.parametrize("command", commands_of("server --limit"))
def test_server_command_runs_with_limit_2_against_the_test_server(command, workdir, tmp_path, client):
    outcome = run_with_limit(command, workdir, tmp_path)
    exits_0(outcome, f"ran as `{limited(command, workdir, tmp_path).text}`: exit status")


@pytest.mark.parametrize("command", commands_of("server --limit"))
def test_command_with_limit_2_parses(command, workdir, tmp_path):
    # the arguments the test server gets: the README's, with --limit 2 and --out in tmp_path
    exits_0(parse_only(limited(command, workdir, tmp_path), workdir), "refuses --limit 2 or --out: exit status")


@pytest.mark.parametrize("command", commands_of("parse-only"))
def test_command_arguments_parse(command, workdir):
    exits_0(parse_only(command, workdir), "refuses the README's arguments: exit status")


@pytest.mark.parametrize("command", commands_of("not run"))
def test_command_not_run_is_a_known_program(command):
    reason = KINDS[command.id].reason
    assert not reason.startswith("unknown"), f"{command.id}: {reason}"


def test_the_readmes_show_commands_of_the_known_kinds():
    kinds = {kind.name for kind in KINDS.values()}
    assert kinds <= {"offline console", "offline sh", "server --limit", "parse-only", "not run"}
    # Every tag from post-02 on has at least these (a tag of an early post has fewer READMEs).
    assert {"offline console", "server --limit", "parse-only", "not run"} <= kinds


@pytest.mark.parametrize("name", readme_files())
def test_readme_shows_no_command_in_an_unlabelled_block(name):
    assert unlabelled_command_blocks((ROOT / name).read_text(), name) == [], \
        "a block that shows a command is ```console (with its output) or ```sh (without)"


# ---------------------------------------------------------------- the parser, on hand-made Markdown

MARKDOWN = textwrap.dedent('''\
    # A post

    ```sh
    python3 a.py            # a comment
    # a line that is only a comment

    python3 b.py --x "# not a comment"
    ```

    ```console
    $ python3 c.py --n 2
    first line
    ...
    last line
    $ python3 d.py
    ```

    ```python
    print("not a command")
    ```

    ```
    plain output, not a command
    ```
    ''')


def test_console_and_sh_blocks_give_commands_with_their_lines_and_other_blocks_none():
    commands = parse_markdown(MARKDOWN, "post/README.md")
    assert [(c.id, c.block, c.argv) for c in commands] == [
        ("post/README.md:4", "sh", ("python3", "a.py")),
        ("post/README.md:7", "sh", ("python3", "b.py", "--x", "# not a comment")),
        ("post/README.md:11", "console", ("python3", "c.py", "--n", "2")),
        ("post/README.md:15", "console", ("python3", "d.py")),
    ]
    assert commands[0].output is None
    assert commands[2].output == ("first line", "...", "last line")
    assert commands[3].output == ()
    # the output of c.py is lines 12-14 of the file (0-based 11-13)
    assert commands[2].output_span == (11, 14)


def test_backticks_inside_a_line_of_prose_open_no_block():
    text = "```` ```sh ```` blocks hold\ncommands:\n\n```sh\npython3 a.py\n```\n"
    (command,) = parse_markdown(text)
    assert command.id == "README.md:5"


def test_a_backslash_continues_a_command_on_the_next_line():
    text = "```sh\npython3 a.py --one 1 \\\n    --two 2\npython3 b.py\n```\n"
    first, second = parse_markdown(text)
    assert first.argv == ("python3", "a.py", "--one", "1", "--two", "2") and first.line == 2
    assert second.argv == ("python3", "b.py") and second.line == 4


def test_an_open_quote_continues_a_console_command_and_its_output_follows():
    text = '```console\n$ python3 -c "\nprint(1)\nprint(2)\n"\n1\n2\n```\n'
    (command,) = parse_markdown(text)
    assert command.argv == ("python3", "-c", "\nprint(1)\nprint(2)\n")
    assert command.output == ("1", "2")


def test_and_and_splits_a_line_into_commands_and_name_value_sets_the_environment():
    text = "```sh\nLLAMA_URL=http://127.0.0.1:8091 python3 a.py start && python3 b.py --n 10\n```\n"
    first, second = parse_markdown(text)
    assert (first.id, first.env, first.argv) == ("README.md:2", (("LLAMA_URL", "http://127.0.0.1:8091"),),
                                                  ("python3", "a.py", "start"))
    assert (second.id, second.env, second.argv) == ("README.md:2+2", (), ("python3", "b.py", "--n", "10"))


def test_a_console_block_must_start_with_a_command():
    with pytest.raises(ReadmeFormatError, match="README.md:2: a console block must start"):
        parse_markdown("```console\noutput without a command\n```\n")


def test_a_quote_that_never_closes_is_an_error_naming_the_line():
    with pytest.raises(ReadmeFormatError, match="README.md:2: a quote"):
        parse_markdown('```sh\npython3 a.py "open\n```\n')


def test_an_unlabelled_block_that_starts_with_a_command_is_found():
    text = "```\n$ python3 a.py\nout\n```\n\n```\njust output\n```\n\n```sh\npython3 b.py\n```\n"
    assert unlabelled_command_blocks(text) == ["README.md:1"]  # the line of the opening fence


# ---------------------------------------------------------------- `...` elision

@pytest.mark.parametrize("shown, actual, expected", [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "b", "c"], False),
    (["a", "...", "d"], ["a", "b", "c", "d"], True),
    (["a", "...", "d"], ["a", "d"], True),              # `...` may stand for no line at all
    (["...", "c"], ["a", "b", "c"], True),
    (["a", "..."], ["a", "b", "c"], True),
    (["a", "...", "c", "...", "e"], ["a", "b", "c", "d", "e"], True),
    (["a", "...", "x", "...", "e"], ["a", "b", "c", "d", "e"], False),
    (["a", "...", "a"], ["a"], False),                   # head and tail cannot share a line
    (["a", "...", "e"], ["a", "b", "c", "d", "E"], False),
])
def test_dots_stand_for_any_number_of_lines(shown, actual, expected):
    assert matches(shown, actual) is expected


# ---------------------------------------------------------------- kinds and running

def test_a_script_is_online_only_when_it_imports_client_at_the_top_level():
    assert imports_client("from llama_http import Client, exit_on_server_errors\n")
    assert imports_client("from llama_http import (\n    ServerError,\n    Client,\n)\n")
    assert not imports_client("def main():\n    from llama_http import Client\n    Client()\n")
    assert not imports_client("from llama_http import exit_on_server_errors\n")


def test_prompt_grammar_runs_offline_and_a_split_of_run_py_runs_with_a_limit():
    # Scripts of post 02 only, so this file goes into every tag from post-02 on (post_tags.py).
    grammar, run = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/prompt.py --grammar\n"
                                  "python3 02-forcing-a-valid-answer/run.py --split calib\n```\n")
    assert classify(grammar).name == "offline sh"
    assert classify(run).name == "server --limit"


def test_an_offline_command_after_a_server_command_in_its_block_only_parses_its_arguments():
    # compare.py reads the files the two run.py write: run offline on its own it would find none.
    grammar, run, compare = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/prompt.py --grammar\n"
                                           "python3 02-forcing-a-valid-answer/run.py --split calib --limit 200\n"
                                           "python3 02-forcing-a-valid-answer/compare.py\n```\n")
    assert compare.earlier == ("02-forcing-a-valid-answer/prompt.py", "02-forcing-a-valid-answer/run.py")
    assert [classify(c).name for c in (grammar, run, compare)] == ["offline sh", "server --limit", "parse-only"]
    # in a block of its own it runs offline
    alone, = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/compare.py\n```\n")
    assert classify(alone).name == "offline sh"


def test_the_slow_baseline_only_parses_unless_told_to_stay_fast():
    both, fast = parse_markdown("```sh\npython3 01-why-typed-decisions/beyond/baseline.py --dataset clinc150\n"
                                "python3 01-why-typed-decisions/beyond/baseline.py --method neighbours --all-train\n```\n")
    assert classify(both).name == "parse-only" and "minutes" in classify(both).reason
    assert classify(fast).name == "offline sh"


def test_a_limited_command_gets_limit_2_and_its_out_file_in_tmp(workdir, tmp_path):
    run, label_list = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/run.py --split calib --limit 200\n"
                                     "python3 01-why-typed-decisions/label_list.py\n```\n")
    assert limited(run, workdir, tmp_path).argv == ("python3", "02-forcing-a-valid-answer/run.py", "--split", "calib",
                                                    "--limit", "2", "--out", str(tmp_path / "out.jsonl"))
    # label_list.py has no --out: it writes nothing
    assert limited(label_list, workdir, tmp_path).argv == ("python3", "01-why-typed-decisions/label_list.py",
                                                           "--limit", "2")


def test_a_sampled_run_is_limited_with_sample_2_as_it_refuses_limit(workdir, tmp_path):
    (sampled,) = parse_markdown("```sh\npython3 03-where-confidence-comes-from/run.py --sample 400 --seed 1\n```\n")
    # (03's run.py takes --out from typed_lines.py: the command runs in the copy of the repository, writing there)
    assert limited(sampled, workdir, tmp_path).argv == ("python3", "03-where-confidence-comes-from/run.py", "--sample",
                                                        "2", "--seed", "1")


def test_with_option_replaces_a_value_or_adds_the_option():
    assert with_option(("--split", "calib", "--limit", "200"), "--limit", "2") == ["--split", "calib", "--limit", "2"]
    assert with_option(("--limit=200",), "--limit", "2") == ["--limit=2"]
    assert with_option(("--split", "calib"), "--limit", "2") == ["--split", "calib", "--limit", "2"]


def test_parse_only_fails_on_a_flag_the_script_does_not_have(workdir):
    (good,) = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/classify.py \"a message\"\n```\n")
    (bad,) = parse_markdown("```sh\npython3 02-forcing-a-valid-answer/classify.py --no-such-flag \"a message\"\n```\n")
    assert parse_only(good, workdir).returncode == 0
    assert parse_only(bad, workdir).returncode == 2  # argparse's exit status for a bad command line


def test_update_rewrites_a_stale_block_and_keeps_dots_that_still_fit(tmp_path):
    text = "```console\n$ python3 a.py\none\n...\nfour\n```\n\n```console\n$ python3 b.py\nold\n```\n"
    (tmp_path / "README.md").write_text(text)
    kept, stale = parse_markdown(text)
    changed = update_readmes([Outcome(kept, 0, "one\ntwo\nthree\nfour\n", ""),
                              Outcome(stale, 0, "new\nlines\n", "")], root=tmp_path)
    assert changed == ["README.md:9: output updated"]
    assert (tmp_path / "README.md").read_text() == text.replace("old\n", "new\nlines\n")


def test_update_replaces_a_whole_elided_block_that_no_longer_fits_and_says_so(tmp_path):
    text = "```console\n$ python3 a.py\none\n...\nfour\n```\n"
    (tmp_path / "README.md").write_text(text)
    (command,) = parse_markdown(text)
    changed = update_readmes([Outcome(command, 0, "one\nfive\n", "")], root=tmp_path)
    assert "no longer fit" in changed[0]
    assert (tmp_path / "README.md").read_text() == "```console\n$ python3 a.py\none\nfive\n```\n"


def test_a_command_is_a_frozen_record_with_an_id():
    command = Command("a/README.md", 3, "sh", "python3 x.py", ("python3", "x.py"), part=2)
    assert command.id == "a/README.md:3+2"
    with pytest.raises(AttributeError):
        command.line = 4
