"""A local stand-in for the Hugging Face Hub's HTTP API, as far as ``huggingface_hub.HfApi.create_repo`` and
``upload_folder`` use it: repository creation, the README metadata check (``/api/validate-yaml``), the
preupload check and NDJSON commits. It has no Xet storage (the hub's large-file backend, spoken by the
``hf_xet`` extension), so its preupload answer makes every file a regular git blob, sent inside the commit;
the large-file protocol is huggingface_hub's own. The Git LFS batch API is served too, for clients without
``hf_xet``. It keeps each repository's files in memory and checks the bearer token, so a test sees exactly
what a push sent. Used by tests/test_push_export.py; the real client code runs against it
(``HfApi(endpoint=hub.url)``)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The license identifiers the hub accepts in a card's metadata (its documented list).
LICENSES = frozenset((
    "apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0\n"
    "bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda "
    "cc cc0-1.0\n"
    "cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 "
    "cc-by-nc-4.0 cc-by-nd-4.0\n"
    "cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 "
    "cdla-permissive-1.0\n"
    "cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 "
    "lgpl\n"
    "lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl apple-ascl mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql "
    "ofl-1.1 ncsa\n"
    "unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 llama3 llama3.1 llama3.2 llama3.3 gemma "
    "unknown\n"
    "other"
).split())


@dataclass
class Repo:
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)  # summaries, oldest first


class FakeHub:
    """``with FakeHub(token="hf_test") as hub:`` serves on ``hub.url`` until the block ends."""

    def __init__(self, token: str):
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.lfs: dict[str, bytes] = {}  # uploaded LFS objects by sha256
        self.requests: list[str] = []  # "METHOD path", in order
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                hub.handle(self, "POST")

            def do_PUT(self):
                hub.handle(self, "PUT")

            def do_GET(self):
                hub.handle(self, "GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ----------------------------------------------------------------------------------------------- requests
    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        path = req.path.split("?")[0]
        self.requests.append(f"{method} {path}")
        body = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        if req.headers.get("Authorization") != f"Bearer {self.token}" and not path.startswith("/lfs-upload/"):
            return self.reply(req, 401, {"error": "Invalid credentials in Authorization header"})
        if method == "POST" and path == "/api/validate-yaml":
            return self.validate(req, json.loads(body)["content"])
        if method == "POST" and path == "/api/repos/create":
            return self.create(req, json.loads(body))
        if m := re.fullmatch(r"/api/models/(.+)/preupload/([^/]+)", path):
            return self.preupload(req, m.group(1), json.loads(body))
        if m := re.fullmatch(r"/(.+)\.git/info/lfs/objects/batch", path):
            return self.batch(req, m.group(1), json.loads(body))
        if method == "PUT" and (m := re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path)):
            if hashlib.sha256(body).hexdigest() != m.group(1):
                return self.reply(req, 400, {"error": "sha256 mismatch"})
            self.lfs[m.group(1)] = body
            return self.reply(req, 200, {})
        if m := re.fullmatch(r"/api/models/(.+)/commit/([^/]+)", path):
            return self.commit(req, m.group(1), body)
        return self.reply(req, 404, {"error": f"not served by the fake hub: {method} {path}"})

    def reply(self, req, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def validate(self, req, content: str) -> None:
        """The hub's check of a README's metadata: a YAML mapping, a known license, a model-index
        huggingface_hub reads, list-valued language/tags/datasets."""
        import yaml
        from huggingface_hub import ModelCard

        errors = []
        try:
            card = ModelCard(content)
            meta = card.data.to_dict()
        except Exception as e:  # no YAML mapping, or a model-index that does not parse
            errors.append(f"metadata does not parse: {e}")
            meta = {}
        if meta.get("license") is not None and meta["license"] not in LICENSES:
            errors.append(
                f"\"license\" must be one of the hub's license identifiers, got {meta['license']!r}")
        for key in ("language", "tags", "datasets"):
            if key in meta and not isinstance(meta[key], (list, str)):
                errors.append(f"\"{key}\" must be a list of strings")
        front = yaml.safe_load(content.split("---")[1]) if content.startswith("---") else {}
        if not isinstance(front, dict):
            errors.append("the front matter is no YAML mapping")
        if errors:
            return self.reply(req, 400, {"errors": [{"message": m} for m in errors]})
        return self.reply(req, 200, {"warnings": []})

    def create(self, req, body: dict) -> None:
        repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}", repo_id):
            return self.reply(req, 400, {"error": f"invalid repository name {repo_id!r}"})
        if repo_id in self.repos:
            return self.reply(req, 409,
                              {"error": "You already created this model repo",
                               "url": f"{self.url}/{repo_id}"})
        self.repos[repo_id] = Repo(private=body.get("visibility",
                                                    "private" if body.get("private") else "public")
                                   == "private")  # huggingface_hub 1.x sends visibility, older ones private
        return self.reply(req, 200, {"url": f"{self.url}/{repo_id}", "name": repo_id})

    def preupload(self, req, repo_id: str, body: dict) -> None:
        if repo_id not in self.repos:
            return self.reply(req, 404, {"error": "Repository not found"})
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in body["files"]]
        return self.reply(req, 200, {"files": files})

    def batch(self, req, repo_id: str, body: dict) -> None:
        objects = [{"oid": o["oid"], "size": o["size"],
                    "actions": {"upload": {"href": f"{self.url}/lfs-upload/{o['oid']}", "header": {}}}}
                   for o in body["objects"]]
        return self.reply(req, 200, {"transfer": "basic", "objects": objects})

    def commit(self, req, repo_id: str, body: bytes) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self.reply(req, 404, {"error": "Repository not found"})
        added, summary = {}, ""
        for line in body.decode().splitlines():
            entry = json.loads(line)
            value = entry["value"]
            if entry["key"] == "header":
                summary = value.get("summary", "")
            elif entry["key"] == "file":
                added[value["path"]] = base64.b64decode(value["content"])
            elif entry["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    return self.reply(req, 400,
                                      {"error": f"LFS object of {value['path']} was never uploaded"})
                added[value["path"]] = self.lfs[value["oid"]]
        repo.files.update(added)
        repo.commits.append(summary)
        oid = hashlib.sha1(json.dumps(sorted(repo.files)).encode() + summary.encode()).hexdigest()
        return self.reply(req, 200, {"commitUrl": f"{self.url}/{repo_id}/commit/{oid}", "commitOid": oid,
                                     "pullRequestUrl": None})
