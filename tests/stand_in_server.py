"""One local HTTP server that stands in for the real hosts (raw.githubusercontent.com, COCO, Visual
Genome, the archives' owners) in the download tests: it serves ``files`` by path, honours HTTP Range,
answers 503 ``flaky[path]`` times before serving, cuts ``cut[path]`` responses short half-way, and
records every request. Use the ``stand_in_server`` fixture (tests/conftest.py)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path


class StandInServer:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.flaky: dict[str, int] = {}  # path -> 503s still to give
        self.cut: dict[str, int] = {}  # path -> responses still to cut after half the body
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.hits: list[str] = []  # the paths requested, in order
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def serve_folder(self, root: Path, prefix: str) -> None:
        """Serve every file under ``root`` at ``prefix`` + its path relative to ``root``."""
        for file in sorted(root.rglob("*")):
            if file.is_file():
                self.files[prefix + file.relative_to(root).as_posix()] = file.read_bytes()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                path, rng = self.path, self.headers.get("Range")
                server.requests.append((path, rng))
                server.hits.append(path)
                if server.flaky.get(path, 0) > 0:
                    server.flaky[path] -= 1
                    self.send_error(503)
                    return
                body = server.files.get(path)
                if body is None:
                    self.send_error(404)
                    return
                start = int(rng.split("=")[1].split("-")[0]) if rng else 0
                chunk = body[start:]
                self.send_response(206 if rng else 200)
                if rng:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.send_header("Content-Length", str(len(chunk)))
                self.end_headers()
                if server.cut.get(path, 0) > 0:
                    server.cut[path] -= 1
                    self.wfile.write(chunk[: len(chunk) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

            def log_message(self, *args):
                pass

        return Handler
