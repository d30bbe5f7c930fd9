#!/usr/bin/python3
"""A stand-in for an OpenTelemetry collector's OTLP/HTTP receiver, for tests: every POST to
/v1/traces with a JSON body is decoded and appended to OUT as one line; anything else is
refused (415 for another content type, 400 for a body that is not JSON, 404 elsewhere).

  otlp_receiver.py PORT OUT
"""
import http.server
import json
import sys


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/traces":
            return self.reply(404)
        if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
            return self.reply(415)
        try:
            request = json.loads(body)
        except ValueError:
            return self.reply(400)
        with open(sys.argv[2], "a", encoding="utf-8") as out:
            out.write(json.dumps(request) + "\n")
        self.reply(200)

    def reply(self, status):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
