"""Hub corpora fetched on the login node (vocab_transfer.data.fetch, rule download_corpus): the real code path
on a local copy laid out like a hub dataset repository (VOCAB_TRANSFER_HUB_MIRROR), since the hub is out of
reach here. The dataset card's configuration picks the files, a byte cap stops early, a killed fetch resumes
without fetching a finished file again, and the corpus job reads only the fetched files."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vocab_transfer.data import fetch
from vocab_transfer.data.sources import iter_documents

REPO = Path(__file__).resolve().parents[1]
CARD = """---
configs:
- config_name: xx
  data_files:
  - split: train
    path: xx/*.jsonl
- config_name: yy
  data_files:
  - split: train
    path: yy/*.jsonl
---
# a corpus laid out as cc100-like hub datasets are
"""
SPEC = {"source": "cc100", "dataset": "testorg/cc100like", "name": "xx"}


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    root = tmp_path / "mirror" / "testorg" / "cc100like"
    for lang in ("xx", "yy"):
        (root / lang).mkdir(parents=True)
        for part in range(3):
            rows = [{"id": f"{lang}-{part}-{i}", "text": f"{lang} document {part} {i} " + "word " * 40}
                    for i in range(50)]
            (root / lang / f"part-{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "README.md").write_text(CARD)
    monkeypatch.setenv(fetch.MIRROR_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return root


def test_the_card_picks_the_files_and_the_fetch_records_them(mirror, tmp_path):
    out = tmp_path / "resources" / "corpora" / "xx"
    record = fetch.fetch_hub_corpus(SPEC, out, log=lambda m: None)
    assert [f["path"] for f in record["files"]] == [f"xx/part-{i}.jsonl" for i in range(3)]
    assert record["complete"] and record["resolved_revision"] == "mirror"
    assert all((out / f["path"]).stat().st_size == f["size"] for f in record["files"])
    assert json.loads((out / fetch.FETCH_FILE).read_text()) == record
    assert (out / ".manifest.json").is_file() and not out.with_name("xx.partial").exists()
    docs = list(iter_documents({**SPEC, "fetched": str(out)}))
    assert (len(docs) == 150 and docs[0]["doc_id"] == "xx-0-0"
            and all(d["text"].startswith("xx ") for d in docs))


def test_a_byte_cap_stops_the_fetch(mirror, tmp_path):
    first = (mirror / "xx" / "part-0.jsonl").stat().st_size
    record = fetch.fetch_hub_corpus(SPEC, tmp_path / "out", max_bytes=first + 1, log=lambda m: None)
    assert [f["path"] for f in record["files"]] == ["xx/part-0.jsonl", "xx/part-1.jsonl"]
    assert not record["complete"] and record["bytes"] == sum(f["size"] for f in record["files"])


def test_a_killed_fetch_resumes_without_fetching_a_finished_file_again(mirror, tmp_path, monkeypatch):
    out = tmp_path / "out"
    partial = out.with_name("out.partial")
    (partial / "xx").mkdir(parents=True)
    # finished before the kill
    shutil.copyfile(mirror / "xx" / "part-0.jsonl", partial / "xx" / "part-0.jsonl")
    # cut off
    (partial / "xx" / "part-1.jsonl").write_bytes((mirror / "xx" / "part-1.jsonl").read_bytes()[:100])
    copied = []
    real_copy = shutil.copyfile
    monkeypatch.setattr(fetch.shutil, "copyfile", lambda a, b: copied.append(Path(a).name) or real_copy(a, b))
    record = fetch.fetch_hub_corpus(SPEC, out, log=lambda m: None)
    assert copied == ["part-1.jsonl", "part-2.jsonl"] and record["complete"]
    assert (out / "xx" / "part-1.jsonl").read_bytes() == (mirror / "xx" / "part-1.jsonl").read_bytes()


def test_what_is_fetched_and_what_is_streamed(tmp_path):
    assert fetch.needs_fetch({"source": "cc100", "lang": "de"})
    assert not fetch.needs_fetch({"source": "cc100", "lang": "de", "fetch": False})
    # local files in the hub's layout
    assert not fetch.needs_fetch({"source": "oscar", "data_files": "x.jsonl"})
    # a local copy of the hub repository
    assert not fetch.needs_fetch({"source": "mc4", "dataset": str(tmp_path), "name": "de"})
    assert not fetch.needs_fetch({"source": "text", "path": "x.txt"})


@pytest.mark.slow
def test_the_corpus_job_reads_what_the_login_node_fetched(mirror, tmp_path):
    """The DAG fetches the corpus (download_corpus, a local rule) and the corpus job reads the fetched files;
    the corpus's stats.json names the fetch and its commit."""
    config = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())
    config["corpora"]["xx"] = dict(SPEC)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "1",
           "results/corpus/xx/stats.json", "--configfile", "config.yaml"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path / "work", env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "localrule download_corpus" in proc.stdout + proc.stderr
    stats = json.loads((tmp_path / "work" / "results" / "corpus" / "xx" / "stats.json").read_text())
    assert stats["source"]["origin"]["fetched"] == "resources/corpora/xx"
    assert stats["source"]["origin"]["resolved_revision"] == "mirror"
    assert stats["train_docs"] + stats["heldout_docs"] == 150


class _RangeServer:
    """A local HTTP server that answers range requests (as the file servers of word vectors and dictionaries
    do) and can cut a response off after some bytes (a lost connection)."""

    def __init__(self, files: dict[str, bytes], ranges: bool = True):
        import http.server
        import threading

        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                body = files[self.path.lstrip("/")]
                start = (int(self.headers["Range"].split("=")[1].rstrip("-"))
                         if ranges and self.headers["Range"] else 0)
                if start >= len(body) and start:
                    self.send_response(416)
                    self.end_headers()
                    return
                server.requests.append(start)  # before the body: a client that has it all may look at once
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("ETag", '"v1"')
                self.end_headers()
                part = body[start:]
                self.wfile.write(part[:server.cut] if server.cut else part)

            def log_message(self, *args):
                pass

        self.cut, self.requests = None, []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"


def test_a_download_resumes_where_it_was_cut_off_and_checks_its_size(tmp_path):
    from vocab_transfer.io import fetch_url

    body = bytes(range(256)) * 4000
    server = _RangeServer({"v.bin": body})
    server.cut = 300_000  # the connection drops after 300 kB
    with pytest.raises(OSError, match=r"\d+ of 1024000 bytes arrived; run again to resume"):
        fetch_url(server.url + "v.bin", tmp_path / "v.bin", log=lambda m: None)
    arrived = (tmp_path / "v.bin.partial").stat().st_size
    assert 0 < arrived <= 300_000
    server.cut = None
    origin = fetch_url(server.url + "v.bin", tmp_path / "v.bin", log=lambda m: None)
    assert server.requests == [0, arrived]  # the second request asked for the rest only
    assert (tmp_path / "v.bin.partial").read_bytes() == body
    assert origin["bytes"] == len(body) and origin["etag"] == '"v1"'
    import hashlib

    assert origin["sha256"] == hashlib.sha256(body).hexdigest()
    # already whole: the server answers 416 to a range past the end, and nothing is fetched again
    assert fetch_url(server.url + "v.bin", tmp_path / "v.bin", log=lambda m: None)["bytes"] == len(body)
    server.httpd.shutdown()


def test_a_server_without_ranges_sends_the_whole_file_again(tmp_path):
    from vocab_transfer.io import fetch_url

    body = b"x" * 50_000
    server = _RangeServer({"d.txt": body}, ranges=False)
    (tmp_path / "d.txt.partial").write_bytes(body[:1000])
    assert fetch_url(server.url + "d.txt", tmp_path / "d.txt", log=lambda m: None)["bytes"] == len(body)
    assert (tmp_path / "d.txt.partial").read_bytes() == body
    server.httpd.shutdown()
