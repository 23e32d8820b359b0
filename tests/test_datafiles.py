"""datafiles.fetch: mirror folder, download cache, and the errors a reader sees."""
import hashlib
import os
from pathlib import Path

import pytest

from datafiles import DATA_ENV, DatasetUnavailable, fetch

ROOT = Path(__file__).resolve().parents[1]

CONTENT = b"text,category\nhello,greeting\n"
SHA256 = hashlib.sha256(CONTENT).hexdigest()
WRONG = "0" * 64


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A mirror folder holding toy/file.csv, named by TYPED_DECISIONS_DATA."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "file.csv").write_bytes(CONTENT)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    return tmp_path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """No mirror; downloads go to tmp_path/cache via XDG_CACHE_HOME."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "*")  # a proxy must not stand between the test and 127.0.0.1
    return tmp_path / "cache" / "typed-decisions" / "datasets"


def test_mirror_file_with_right_checksum_is_returned(mirror):
    assert fetch("toy", "file.csv", "https://example.invalid/file.csv", SHA256) == mirror / "toy" / "file.csv"


def test_mirror_file_with_wrong_checksum_names_file_expected_and_actual(mirror):
    with pytest.raises(DatasetUnavailable) as error:
        fetch("toy", "file.csv", "https://example.invalid/file.csv", WRONG)
    message = str(error.value)
    assert str(mirror / "toy" / "file.csv") in message
    assert WRONG in message and SHA256 in message


def test_file_missing_from_mirror_names_the_variable(mirror):
    with pytest.raises(DatasetUnavailable, match=DATA_ENV):
        fetch("toy", "other.csv", "https://example.invalid/other.csv", SHA256)


def test_file_url_is_downloaded_into_cache_then_reused(cache, tmp_path):
    source = tmp_path / "published.csv"
    source.write_bytes(CONTENT)
    path = fetch("toy", "file.csv", source.as_uri(), SHA256)
    assert path == cache / "toy" / "file.csv"
    assert path.read_bytes() == CONTENT
    assert os.listdir(cache / "toy") == ["file.csv"]  # no temporary file left behind
    source.unlink()  # second call must not need the URL any more
    assert fetch("toy", "file.csv", source.as_uri(), SHA256) == path


def test_download_with_wrong_checksum_raises_and_keeps_nothing(cache, tmp_path):
    source = tmp_path / "published.csv"
    source.write_bytes(CONTENT)
    with pytest.raises(DatasetUnavailable) as error:
        fetch("toy", "file.csv", source.as_uri(), WRONG)
    assert "file.csv" in str(error.value) and WRONG in str(error.value) and SHA256 in str(error.value)
    assert os.listdir(cache / "toy") == []


def test_unreachable_url_names_the_url_and_the_variable(cache):
    url = "http://127.0.0.1:9/banking77/train.csv"  # port 9 (discard): nothing listens
    with pytest.raises(DatasetUnavailable) as error:
        fetch("toy", "file.csv", url, SHA256)
    assert url in str(error.value) and DATA_ENV in str(error.value)
    assert os.listdir(cache / "toy") == []
