"""00-setup: the AMX build (issue 44): the tile-config patch, its copy of the source, its stamp and its check."""
import platform
import shutil
import subprocess
from pathlib import Path

import models
import pytest
import running_server
import server_build
import server_start
import datafiles
import slot_cache
from llama_http import Client
from server_build import AMX_PATCH, PatchMisfit, apply_patch, patch_target
from server_start import AmxComparison, compare_top_logprobs
from setup_steps import SetupError
from test_setup import DIES_ON_FIRST_REQUEST, fake_binary

PINNED_TREE = server_build.CACHE / "src" / f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON}"
TARGET = "ggml/src/ggml-cpu/amx/mmq.cpp"
ON_STACK = "    alignas(64) tile_config_t tc = {};"
KEPT = "    alignas(64) static thread_local tile_config_t tc = {};"


def patch_lines(kind: str) -> list[str]:
    """The lines of the patch's hunk that the file holds before (" " and "-") or after (" " and "+") it."""
    body = AMX_PATCH.read_text().split("\n@@", 1)[1].splitlines()[1:]
    return [line[1:] for line in body if line[:1] in (" ", kind)]


def fake_tree(root: Path, lines: list[str]) -> Path:
    """An unpacked sdist under root whose mmq.cpp has 207 filler lines, then lines (the hunk starts at line 208)."""
    tree = root / f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON}"
    source = tree / "vendor" / "llama.cpp"
    (source / TARGET).parent.mkdir(parents=True)
    (source / TARGET).write_text("".join(f"// line {number}\n" for number in range(1, 208)) + "\n".join(lines) + "\n")
    (source / "CMakeLists.txt").write_text("project(fake)\n")
    return tree


def test_the_patch_names_the_upstream_issue_and_pull_request_and_changes_one_file():
    header = AMX_PATCH.read_text().split("\n--- ", 1)[0]
    assert "issue 20824" in header and "pull request 26954" in header
    assert patch_target(AMX_PATCH.read_text()) == TARGET


def test_the_patch_applies_to_the_pinned_source_and_changes_only_the_tile_config_line():
    original = PINNED_TREE / "vendor" / "llama.cpp" / TARGET
    if not original.exists():
        pytest.skip(f"the pinned llama.cpp source is not unpacked at {PINNED_TREE} (server.py build unpacks it)")
    before = original.read_text().splitlines()
    after = apply_patch(original.read_text(), AMX_PATCH.read_text()).splitlines()
    changed = [(number, old, new) for number, (old, new) in enumerate(zip(before, after), start=1) if old != new]
    assert len(after) == len(before) and changed == [(211, ON_STACK, KEPT)]


def test_the_hunk_is_applied_where_it_says_and_nowhere_else():
    # Hand-made: line 2 replaced, lines 1 and 3 kept as context, line 4 after the hunk untouched.
    patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    assert apply_patch("one\ntwo\nthree\nfour\n", patch) == "one\nTWO\nthree\nfour\n"
    # Two hunks: the second one's line numbers are the original file's.
    patch2 = patch + "@@ -5,1 +5,1 @@\n-five\n+FIVE\n"
    assert apply_patch("one\ntwo\nthree\nfour\nfive\nsix\n", patch2) == "one\nTWO\nthree\nfour\nFIVE\nsix\n"


def test_a_changed_file_is_refused_in_one_line_naming_the_line():
    lines = patch_lines("-")
    changed = [KEPT if line == ON_STACK else line for line in lines]  # as if upstream had fixed it already
    source = "".join(f"// line {number}\n" for number in range(1, 208)) + "\n".join(changed) + "\n"
    with pytest.raises(PatchMisfit) as misfit:
        apply_patch(source, AMX_PATCH.read_text())
    assert str(misfit.value) == f"line 211 is {KEPT.strip()!r}, the patch expects {ON_STACK.strip()!r}"
    with pytest.raises(PatchMisfit, match="line 3 is the end of the file, the patch expects 'three'"):
        apply_patch("one\ntwo\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    with pytest.raises(PatchMisfit, match="the patch has no hunk"):
        apply_patch("one\n", "--- a/f\n+++ b/f\n")


def test_the_patched_copy_leaves_the_shared_tree_as_it_was(tmp_path):
    tree = fake_tree(tmp_path, patch_lines("-"))
    original = tree / "vendor" / "llama.cpp" / TARGET
    text = original.read_text()
    copy = server_build.amx_source(tree)
    assert original.read_text() == text and original.stat().st_nlink == 1       # not patched, not linked
    assert (copy / TARGET).read_text().splitlines()[207:] == patch_lines("+")  # the copy is
    # every other file is a hard link to the unpacked one: no bytes copied
    assert (copy / "CMakeLists.txt").stat().st_ino == (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").stat().st_ino
    assert server_build.amx_source(tree) == copy  # reused as it is


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A temporary cache whose builds are fakes: run() writes a script as the built binary and records commands.

    Returns the list the commands go to; the CPU has AMX and objdump finds
    an AMX instruction in every build that was configured for it.
    """
    monkeypatch.setattr(server_build, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(server_build, "SERVER_BIN", tmp_path / "cache" / "bin" / "llama-server-b1")
    monkeypatch.setattr(server_build, "AMX_SERVER_BIN", tmp_path / "cache" / "bin" / "llama-server-b1-amx")
    monkeypatch.setattr(server_build, "cpu_has_amx", lambda: True)
    monkeypatch.delenv(server_build.AMX_ENV, raising=False)
    commands = []

    def build(command, **kw):
        commands.append(command)
        if command[1] == "--build":
            built = Path(command[2]) / "bin" / "llama-server"
            built.parent.mkdir(parents=True, exist_ok=True)
            built.write_text("#!/bin/sh\necho version: fake\n")
            built.chmod(0o755)

    monkeypatch.setattr(server_build, "run", build)
    monkeypatch.setattr(server_build, "amx_instructions",
                        lambda binary: ["ldtilecfg (%rax)"] if str(binary).endswith("-amx/bin/llama-server") else [])
    return commands


def test_the_amx_build_stamp_records_the_patch_and_amx_on_and_leaves_the_amx_off_binary_alone(cache, monkeypatch):
    tree = fake_tree(server_build.CACHE / "src", patch_lines("-"))
    monkeypatch.setattr(server_build, "fetch_source", lambda: tree)
    assert server_build.build_server(amx=True) == server_build.AMX_SERVER_BIN
    assert not server_build.SERVER_BIN.exists()  # the AMX-off binary was neither built nor touched
    assert cache[0][2] == str(tree.parent / f"llama.cpp-b{server_build.LLAMA_CPP_BUILD}-amx")  # cmake -S: the patched copy
    stamp = server_build.read_stamp(server_build.AMX_SERVER_BIN)
    assert stamp["amx"] is True and stamp["amx_instructions"] == 1 and stamp["answered"] is None
    assert stamp["patch"] == {"name": "amx-tile-config.patch", "sha256": datafiles.sha256_of(AMX_PATCH)}
    assert stamp["options"]["LLAMA_BUILD_COMMIT"] == server_build.LLAMA_CPP_COMMIT + "+amx-tile-config"
    assert "CMAKE_CXX_FLAGS" not in stamp["options"]
    assert server_build.build_server(amx=True) == server_build.AMX_SERVER_BIN and len(cache) == 2  # reused, not rebuilt
    assert server_build.build_server(amx=False) == server_build.SERVER_BIN                         # the AMX-off one, built
    off_stamp = server_build.read_stamp(server_build.SERVER_BIN)
    assert off_stamp["amx"] is False and off_stamp["patch"] is None


def test_another_patch_rebuilds_the_amx_binary(cache, monkeypatch):
    tree = fake_tree(server_build.CACHE / "src", patch_lines("-"))
    monkeypatch.setattr(server_build, "fetch_source", lambda: tree)
    server_build.build_server(amx=True)
    options = server_build.build_options(amx=True)
    other = {"name": "amx-tile-config.patch", "sha256": "0" * 64}
    assert server_build.why_rebuild(server_build.AMX_SERVER_BIN, options, other) == (
        f"the cached {server_build.AMX_SERVER_BIN.name} was built with another patch ({datafiles.sha256_of(AMX_PATCH)})")


def test_a_source_the_patch_does_not_fit_builds_with_amx_off_in_one_line_and_the_stamp_says_so(cache, monkeypatch, capsys):
    tree = fake_tree(server_build.CACHE / "src", [KEPT if line == ON_STACK else line for line in patch_lines("-")])
    monkeypatch.setattr(server_build, "fetch_source", lambda: tree)
    assert server_build.build_server(amx=True) == server_build.SERVER_BIN
    why = (f"the AMX tile-config patch does not fit this llama.cpp source (line 211 is {KEPT.strip()!r}, "
           f"the patch expects {ON_STACK.strip()!r})")
    assert f"{why}; building with AMX off\n" in capsys.readouterr().out
    assert server_build.read_stamp(server_build.AMX_SERVER_BIN)["refused"]["why"] == why
    assert not server_build.AMX_SERVER_BIN.exists() and server_build.read_stamp(server_build.SERVER_BIN)["amx"] is False


def test_an_amx_build_that_failed_its_check_is_not_used(cache, monkeypatch, capsys):
    tree = fake_tree(server_build.CACHE / "src", patch_lines("-"))
    monkeypatch.setattr(server_build, "fetch_source", lambda: tree)
    server_build.build_server(amx=True)
    server_build.amx_refused("its top_logprobs differ from the AMX-off build's")
    assert server_build.build_server(amx=True) == server_build.SERVER_BIN
    assert "the AMX build is not used: its top_logprobs differ from the AMX-off build's" in capsys.readouterr().out


def test_a_cpu_without_amx_never_builds_the_amx_variant(cache, monkeypatch, capsys):
    monkeypatch.setattr(server_build, "cpu_has_amx", lambda: False)
    monkeypatch.setattr(server_build, "fetch_source", lambda: fake_tree(server_build.CACHE / "src", patch_lines("-")))
    assert server_build.build_server(amx=True) == server_build.SERVER_BIN
    assert capsys.readouterr().out.splitlines()[0] == "this CPU has no AMX: llama-server runs with AMX off"
    assert not server_build.build_stamp(server_build.AMX_SERVER_BIN).exists()
    assert [command[2] for command in cache if command[1] == "-S"] == [
        str(server_build.CACHE / "src" / f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp")]
    assert not list((server_build.CACHE / "src").glob("llama.cpp-b*-amx"))  # no patched copy either


def test_cpu_has_amx_needs_the_tile_and_int8_flags():
    assert server_build.cpu_has_amx("processor : 0\nflags : fpu avx512f amx_bf16 amx_tile amx_int8\n")
    assert not server_build.cpu_has_amx("flags : fpu avx512f amx_bf16 amx_tile\n")  # no int8: no quantized kernels
    assert not server_build.cpu_has_amx("processor : 0\n")                           # no flags line (another arch)


def test_amx_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv(server_build.AMX_ENV, raising=False)
    assert server_build.amx_wanted() is server_build.AMX_DEFAULT is False
    monkeypatch.setenv(server_build.AMX_ENV, "on")
    assert server_build.amx_wanted() is True and server_build.amx_wanted(False) is False
    monkeypatch.setenv(server_build.AMX_ENV, "maybe")
    with pytest.raises(SetupError, match="TYPED_DECISIONS_AMX='maybe' should be on or off"):
        server_build.amx_wanted()


def step(token: int, *candidates: tuple[int, float]) -> dict:
    """One entry of completion_probabilities: the chosen token id and its top candidates (id, logprob)."""
    return {"id": token, "top_logprobs": [{"id": id_, "logprob": logprob} for id_, logprob in candidates]}


def test_the_comparison_takes_the_largest_difference_over_shared_candidates():
    amx = [step(7, (7, -0.10), (8, -2.50), (9, -3.00)), step(4, (4, -0.01), (5, -5.00))]
    reference = [step(7, (7, -0.12), (8, -2.47), (6, -3.10)), step(4, (4, -0.01), (5, -4.96))]
    # shared: 7 (|-0.10+0.12| = 0.02), 8 (0.03), 4 (0.00), 5 (0.04): 4 candidates, largest 0.04; 9 and 6 in one list only
    comparison = compare_top_logprobs(amx, reference, tolerance=0.05)
    assert comparison == AmxComparison(2, True, 4, pytest.approx(0.04), 0.05) and comparison.passed
    assert not compare_top_logprobs(amx, reference, tolerance=0.04).passed  # the bound is strict


def test_the_comparison_fails_on_another_greedy_token_and_stops_there():
    amx = [step(7, (7, -0.60), (8, -0.80)), step(1, (1, -0.1))]
    reference = [step(8, (8, -0.70), (7, -0.70)), step(2, (2, -0.1))]
    # position 0: 7 vs 8 chosen; shared 7 (0.10) and 8 (0.10); position 1 not compared (it follows other text)
    assert compare_top_logprobs(amx, reference) == AmxComparison(1, False, 2, pytest.approx(0.10), server_start.AMX_TOLERANCE)


def test_the_comparison_refuses_completions_without_probabilities():
    with pytest.raises(ValueError, match="both completions need token probabilities"):
        compare_top_logprobs([], [step(1, (1, 0.0))])
    with pytest.raises(ValueError, match="position 0 has no top_logprobs"):
        compare_top_logprobs([{"id": 1}], [step(1, (1, 0.0))])


def test_the_amx_build_answers_the_checks_request_and_its_distance_from_amx_off_is_recorded(client, tmp_path, free_port):
    # A real check of what the patch settles: the AMX build (built here if it is not cached: about 10 minutes on 2
    # cores), started directly with the test model whatever its stamp says, answers the check's request without
    # dying (unpatched, it crashed on its first prefill), with top_logprobs at each position, and the comparison
    # with the AMX-off build is recorded in the stamp. Agreement is not asserted: with the 0.5B model its first
    # greedy token differs from the AMX-off build's (00-setup/amx.md); whether that is the int8 kernels'
    # rounding or a defect is issue 44's open part.
    if platform.machine().lower() not in ("x86_64", "amd64") or not server_build.cpu_has_amx():
        pytest.skip("this CPU has no AMX (amx_tile and amx_int8 in /proc/cpuinfo), so there is no AMX build to check")
    if not server_build.AMX_SERVER_BIN.exists():
        server_build.build_amx_server()
    assert server_build.AMX_SERVER_BIN.exists(), server_build.read_stamp(server_build.AMX_SERVER_BIN).get("refused")
    port = free_port()
    log = tmp_path / "amx-server.log"
    command = [str(server_build.AMX_SERVER_BIN), "--model", str(models.install_model("qwen2.5-coder-0.5b")),
               "--host", "127.0.0.1", "--port", str(port), "--ctx-size", "1024", "--parallel", "1",
               "--reasoning", "off", "--no-webui"]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        amx = Client(f"http://127.0.0.1:{port}")
        amx.wait_ready(300)
        comparison = server_start.check_amx(amx, "qwen2.5-coder-0.5b")
        assert process.poll() is None, log.read_text()[-2000:]
        assert comparison.positions >= 1 and comparison.candidates >= 1, comparison
        checks = server_build.read_stamp(server_build.AMX_SERVER_BIN)["amx_checks"]
        assert comparison.max_difference == pytest.approx(checks["qwen2.5-coder-0.5b-instruct-q4_k_m"]["max_difference"])
    finally:
        process.terminate()
        process.wait(30)


# A stand-in llama-server that answers every POST with these completion_probabilities (a real AMX build cannot be
# made to answer wrongly, and a real one that dies is DIES_ON_FIRST_REQUEST's).
ANSWERS = """
import http.server, json
port = int(sys.argv[sys.argv.index('--port') + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer({'status': 'ok'})
    def do_POST(self):
        self.rfile.read(int(self.headers['Content-Length']))
        self.answer({'content': ' x', 'completion_probabilities': PROBABILITIES})
http.server.HTTPServer(('127.0.0.1', port), Handler).serve_forever()
"""


def answering(path: Path, probabilities: list[dict]) -> Path:
    return fake_binary(path, f"PROBABILITIES = {probabilities!r}\n" + ANSWERS)


@pytest.fixture
def two_builds(tmp_path, monkeypatch):
    """Start_server's world with fake binaries: (use, off) where use(amx_binary) installs the AMX build's stand-in;
    the AMX-off one answers token 7 at logprob -0.10."""
    off = answering(tmp_path / "bin" / "llama-server-off", [step(7, (7, -0.10), (8, -2.5))])
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(running_server, "RUN", tmp_path / "run")
    # the AMX binary as the build stage records it (amx_refused) and as the start reads it (start_server, amx_checked)
    for stage in (server_build, server_start):
        monkeypatch.setattr(stage, "AMX_SERVER_BIN", tmp_path / "bin" / "llama-server-amx")
    monkeypatch.setattr(server_start, "install_model", lambda name: model)
    monkeypatch.setattr(server_start, "build_server", lambda amx=None: server_build.AMX_SERVER_BIN if amx else off)
    # A script's process runs the Python interpreter, not the script: /proc/<pid>/cmdline cannot name it.
    monkeypatch.setattr(running_server, "is_our_server", lambda record: True)
    return off


def test_an_amx_build_that_dies_on_its_first_request_is_marked_and_amx_off_starts(two_builds, tmp_path, free_port,
                                                                                   capsys, monkeypatch):
    fake_binary(server_build.AMX_SERVER_BIN, DIES_ON_FIRST_REQUEST)
    monkeypatch.setenv(slot_cache.SLOTS_ENV, str(tmp_path / "slots"))
    port = free_port()
    record = server_start.start_server("tiny", url=f"http://127.0.0.1:{port}", amx=True)
    try:
        assert record["command"][0] == str(two_builds)
        assert record["slots"] == str((tmp_path / "slots").resolve())  # the AMX-off build's folder, not amx/
        why = server_build.read_stamp(server_build.AMX_SERVER_BIN)["refused"]["why"]
        assert why.startswith("it failed its first request: llama-server was killed by SIGSEGV (signal 11)")
        assert f"the AMX llama-server is not used, {why}; starting it with AMX off\n" in capsys.readouterr().out
    finally:
        running_server.stop_server(port)


def test_an_amx_build_whose_logprobs_differ_is_marked_and_amx_off_starts(two_builds, tmp_path, free_port, capsys):
    answering(server_build.AMX_SERVER_BIN, [step(7, (7, -0.30), (8, -2.5))])  # 0.20 nats from the AMX-off build's -0.10
    port = free_port()
    record = server_start.start_server("tiny", url=f"http://127.0.0.1:{port}", slots=tmp_path / "slots", amx=True)
    try:
        assert record["command"][0] == str(two_builds)
        stamp = server_build.read_stamp(server_build.AMX_SERVER_BIN)
        assert stamp["amx_checks"]["tiny"]["passed"] is False
        assert stamp["amx_checks"]["tiny"]["max_difference"] == pytest.approx(0.20)
        assert stamp["refused"]["why"].startswith("its top_logprobs differ from the AMX-off build's on the same request")
        assert server_start.amx_checked("tiny") is None
    finally:
        running_server.stop_server(port)


def test_an_amx_build_that_answers_like_amx_off_is_kept_checked_once_and_saves_its_slots_apart(
        two_builds, tmp_path, free_port, monkeypatch):
    answering(server_build.AMX_SERVER_BIN, [step(7, (7, -0.11), (8, -2.49))])  # 0.01 nats from the AMX-off build's
    monkeypatch.setenv(slot_cache.SLOTS_ENV, str(tmp_path / "slots"))
    port = free_port()
    record = server_start.start_server("tiny", url=f"http://127.0.0.1:{port}", amx=True)
    try:
        assert record["command"][0] == str(server_build.AMX_SERVER_BIN)
        assert record["slots"] == str((tmp_path / "slots" / "amx").resolve())
        assert server_start.amx_checked("tiny") == AmxComparison(1, True, 2, pytest.approx(0.01), server_start.AMX_TOLERANCE)
        assert "refused" not in server_build.read_stamp(server_build.AMX_SERVER_BIN)
    finally:
        running_server.stop_server(port)


# The defect in small, with mmq.cpp's tile_config_t: the configuration on the stack, and as the patch keeps it.
TILE_CONFIG_SOURCE = """
#include <immintrin.h>
#include <cstdint>
struct tile_config_t { uint8_t palette_id = 0; uint8_t start_row = 0; uint8_t reserved_0[14] = {0};
                       uint16_t colsb[16] = {0}; uint8_t rows[16] = {0}; };
void %s() { %s tile_config_t tc = {}; tc.palette_id = 1; tc.rows[0] = 8; tc.colsb[0] = 64; _tile_loadconfig(&tc); }
"""


def loads_config_with_rows(tmp_path: Path, name: str, declaration: str) -> bool:
    """Whether the compiled function stores rows[0] = 8 before its ldtilecfg (GCC, -O3, an AMX target)."""
    source, objects = tmp_path / f"{name}.cpp", tmp_path / f"{name}.o"
    source.write_text(TILE_CONFIG_SOURCE % (name, declaration))
    result = subprocess.run(["c++", "-O3", "-march=sapphirerapids", "-c", str(source), "-o", str(objects)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"this compiler cannot target AMX: {result.stderr.strip()[:200]}")
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(objects)], capture_output=True,
                                 text=True).stdout
    before_load = disassembly.split("ldtilecfg")[0]
    return "$0x8," in before_load


def test_the_static_thread_local_tile_config_is_written_before_ldtilecfg(tmp_path):
    if platform.machine().lower() not in ("x86_64", "amd64") or not shutil.which("objdump"):
        pytest.skip("AMX code is compiled and read on x86-64 with objdump only")
    assert loads_config_with_rows(tmp_path, "kept", "alignas(64) static thread_local")
