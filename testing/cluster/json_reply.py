"""The HTTP handler base of the test cluster's own small servers (admission_stand_in.py, probe_program.py,
token_webhook.py): JSON answers, no access log. The first two run as scripts from this folder, so they import it by
its plain name; token_webhook.py, a module of the package, imports it relatively."""

from __future__ import annotations

import http.server
import json
from typing import Any


class JsonHandler(http.server.BaseHTTPRequestHandler):
    def reply(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass
