"""Starts the local AWS emulator (moto in server mode) on loopback for reconcile's tests and demo.

Beyond plain `python -m moto.server` it:
- prints `listening http://HOST:PORT` once it accepts connections, so a free port (0) can be
  asked for and learned;
- records every request (service, action, access key) in memory, served as JSON at
  `GET /_reconcile/requests` and cleared by `POST /_reconcile/requests/reset`, so tests can count
  the calls one test account made, even with many tests sharing one server;
- exits when its standard input closes (`--exit-with-parent`), so a test process that dies
  never leaves a server behind.

Patches to moto's own behaviour must be applied in this process before the first request,
which is why the harness starts this script rather than `python -m moto.server`.
"""

import argparse
import io
import json
import logging
import sys
import threading
from urllib.parse import parse_qs

RECORDS_PATH = "/_reconcile/requests"


class RequestRecorder:
    """WSGI middleware that remembers who called what."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.records = []

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == RECORDS_PATH:
            with self.lock:
                body = json.dumps(self.records).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if path == RECORDS_PATH + "/reset":
            with self.lock:
                self.records.clear()
            start_response("204 No Content", [])
            return [b""]
        if not path.startswith("/moto-api"):
            self.record(environ, path)
        return self.app(environ, start_response)

    def record(self, environ, path):
        access_key, service = "", ""
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if "Credential=" in authorization:
            scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
            access_key = scope[0]
            service = scope[3] if len(scope) > 3 else ""
        action = environ.get("HTTP_X_AMZ_TARGET", "").rsplit(".", 1)[-1]
        content_type = environ.get("CONTENT_TYPE", "")
        if not action and content_type.startswith("application/x-www-form-urlencoded"):
            # Query protocol (IAM, STS): the action is a form field. Read the body and put it back.
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
        entry = {
            "access_key": access_key,
            "service": service,
            "action": action,
            "method": environ.get("REQUEST_METHOD", ""),
            "path": path,
            "query": environ.get("QUERY_STRING", ""),
        }
        with self.lock:
            self.records.append(entry)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-with-parent", action="store_true", help="exit when stdin closes")
    args = parser.parse_args()

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    # One access-log line per request drowns the output of whatever runs beside the emulator.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = RequestRecorder(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    host, port = server.server_address[:2]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"listening http://{host}:{port}", flush=True)

    if args.exit_with_parent:
        sys.stdin.read()
    else:
        threading.Event().wait()
    server.shutdown()


if __name__ == "__main__":
    main()
