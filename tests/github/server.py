"""A local stand-in for the GitHub REST API endpoints reconcile uses, for its tests.

Started by the test harness like the AWS emulator: `python server.py`, on a free loopback port,
printing `listening http://127.0.0.1:PORT`, exiting when its standard input closes. It keeps one
state per repository (made on first use, so each test takes its own `owner/name`) and behaves
as the REST reference (API version 2022-11-28) documents, and no further:

- Repository variables, https://docs.github.com/en/rest/actions/variables:
  list `GET /repos/{o}/{r}/actions/variables` (`per_page` default 10, at most 30; `page`;
  `{"total_count", "variables": [...]}`; a `Link` header when there are more pages), create
  `POST` (201; 409 when the name exists; 422 for a bad name), get `GET .../{name}` (404 when
  missing), update `PATCH .../{name}` (204), delete `DELETE .../{name}` (204). Names are
  case-insensitive and stored in upper case.
- Fork pull-request approval, https://docs.github.com/en/rest/actions/permissions (get/set
  fork PR contributor approval permissions for a repository): `GET`/`PUT
  /repos/{o}/{r}/actions/permissions/fork-pr-contributor-approval`, `{"approval_policy"}`,
  one of three values (422 otherwise), `PUT` answers 204.
- Default workflow permissions, same page: `GET`/`PUT /repos/{o}/{r}/actions/permissions/workflow`,
  `{"default_workflow_permissions": "read"|"write", "can_approve_pull_request_reviews": bool}`,
  `PUT` answers 204.
- Repository webhooks, https://docs.github.com/en/rest/repos/webhooks: list `GET
  /repos/{o}/{r}/hooks` (`per_page` default 30, at most 100), create `POST` (201), update
  `PATCH .../hooks/{id}` (200), delete `DELETE .../hooks/{id}` (204).
- Authentication (https://docs.github.com/en/rest/authentication): no `Authorization` is 401
  `Requires authentication`. A token the test has denied a permission answers 403 `Resource not
  accessible by personal access token` with `X-Accepted-GitHub-Permissions` naming the
  permission, as GitHub does for fine-grained tokens.
- Rate limits (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
  on demand, the next N requests to a repository answer 403 with `retry-after` (a secondary
  limit) or with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (the primary limit).

A new repository starts as GitHub left repositories made before February 2023: fork approval
`first_time_contributors`, workflow permissions `write`, Actions allowed to approve.

Test controls, outside GitHub's API:
- `POST /_test/deny` `{"token", "permissions": ["actions_variables", ...]}`
- `POST /_test/rate-limit` `{"repository": "o/r", "count": N, "kind": "secondary"|"primary"}`
- `POST /_test/fail` `{"repository": "o/r", "count": N, "status": 502}`: the next N requests to
  the repository answer with that server error, as GitHub's front end does when a backend is
  down (`{"message": "Server Error"}`).
- `GET /_test/log?repository=o/r`: every request to the repository, in order, with the time
  (`time.time()`, comparable with the AWS emulator's record) it was answered.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

APPROVAL_POLICIES = ["first_time_contributors_new_to_github", "first_time_contributors", "all_external_contributors"]
NOT_ACCESSIBLE = "Resource not accessible by personal access token"

lock = threading.Lock()
repositories = {}
denied = {}  # token -> set of permissions
rate_limits = {}  # repository -> [count, kind]
failures = {}  # repository -> [count, status]
log = []
next_hook_id = [1]


def repository(key):
    if key not in repositories:
        repositories[key] = {
            "variables": {},
            "approval_policy": "first_time_contributors",
            "workflow": {"default_workflow_permissions": "write", "can_approve_pull_request_reviews": True},
            "hooks": [],
        }
    return repositories[key]


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def valid_variable_name(name):
    return (
        bool(name)
        and not name[0].isdigit()
        and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
        and not name.upper().startswith("GITHUB_")
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PATCH(self):
        self.route("PATCH")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")

    def route(self, method):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        body = self.body() if method in ("POST", "PATCH", "PUT") else {}
        if parts[:1] == ["_test"]:
            return self.control(method, parts[1:], query, body)
        if len(parts) < 3 or parts[0] != "repos":
            return self.answer(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        key = f"{parts[1]}/{parts[2]}"
        rest = parts[3:]
        with lock:
            result = self.repository_route(method, key, rest, query, body, url.path)
            log.append({"method": method, "path": url.path, "repository": key, "status": result[0],
                        "at": time.time()})
        self.answer(*result)

    def repository_route(self, method, key, rest, query, body, path):
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith(("Bearer ", "token ")):
            return 401, {"message": "Requires authentication", "documentation_url": "https://docs.github.com/rest"}, ()
        token = authorization.split(" ", 1)[1]
        failure = failures.get(key)
        if failure and failure[0] > 0:
            failure[0] -= 1
            return failure[1], {"message": "Server Error"}, ()
        limit = rate_limits.get(key)
        if limit and limit[0] > 0:
            limit[0] -= 1
            if limit[1] == "primary":
                reset = int(time.time()) + 1
                return 403, {"message": "API rate limit exceeded for user ID 1."}, (
                    ("x-ratelimit-limit", "5000"), ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-used", "5000"), ("x-ratelimit-reset", str(reset)))
            return 403, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                                    "try again."}, (("retry-after", "1"),)
        permission = {"actions": "actions_variables" if rest[1:2] == ["variables"] else "administration",
                      "hooks": "repository_hooks"}.get(rest[0] if rest else "", "metadata")
        level = "read" if method == "GET" else "write"
        if permission in denied.get(token, set()):
            return 403, {"message": NOT_ACCESSIBLE,
                         "documentation_url": "https://docs.github.com/rest"}, (
                ("X-Accepted-GitHub-Permissions", f"{permission}={level}"),)
        repo = repository(key)
        if rest[:2] == ["actions", "variables"]:
            return self.variables(method, repo, rest[2:], query, body, path)
        if rest == ["actions", "permissions", "fork-pr-contributor-approval"]:
            if method == "GET":
                return 200, {"approval_policy": repo["approval_policy"]}, ()
            if method == "PUT":
                if body is None or body.get("approval_policy") not in APPROVAL_POLICIES:
                    return 422, {"message": "Invalid request.\n\nInvalid approval_policy."}, ()
                repo["approval_policy"] = body["approval_policy"]
                return 204, None, ()
        if rest == ["actions", "permissions", "workflow"]:
            if method == "GET":
                return 200, dict(repo["workflow"]), ()
            if method == "PUT":
                if body is None or body.get("default_workflow_permissions", "read") not in ("read", "write"):
                    return 422, {"message": "Invalid request."}, ()
                repo["workflow"].update({k: v for k, v in body.items() if k in repo["workflow"]})
                return 204, None, ()
        if rest[:1] == ["hooks"]:
            return self.hooks(method, repo, rest[1:], query, body, path)
        return 404, {"message": "Not Found"}, ()

    def page(self, items, query, default, largest, path):
        per_page = max(1, min(int(query.get("per_page", default)), largest))
        page = max(1, int(query.get("page", 1)))
        chosen = items[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        host = self.headers.get("Host")
        if page < last:
            links.append(f'<http://{host}{path}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<http://{host}{path}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<http://{host}{path}?per_page={per_page}&page={page - 1}>; rel="prev"')
            links.append(f'<http://{host}{path}?per_page={per_page}&page=1>; rel="first"')
        return chosen, ((("Link", ", ".join(links)),) if links else ())

    def variables(self, method, repo, rest, query, body, path):
        variables = repo["variables"]
        if not rest:
            if method == "GET":
                items = [variables[name] for name in sorted(variables)]
                chosen, headers = self.page(items, query, 10, 30, path)
                return 200, {"total_count": len(items), "variables": chosen}, headers
            if method == "POST":
                name = (body or {}).get("name", "")
                if not valid_variable_name(name) or not isinstance((body or {}).get("value"), str):
                    return 422, {"message": "Invalid request.\n\nInvalid name or value."}, ()
                if name.upper() in variables:
                    return 409, {"message": "Already exists - Variable already exists"}, ()
                variables[name.upper()] = {"name": name.upper(), "value": body["value"],
                                           "created_at": now_iso(), "updated_at": now_iso()}
                return 201, {}, ()
        else:
            name = rest[0].upper()
            if name not in variables:
                return 404, {"message": "Not Found"}, ()
            if method == "GET":
                return 200, variables[name], ()
            if method == "PATCH":
                variables[name].update(value=(body or {}).get("value", variables[name]["value"]),
                                       updated_at=now_iso())
                new = (body or {}).get("name", name).upper()
                variables[new] = dict(variables.pop(name), name=new)
                return 204, None, ()
            if method == "DELETE":
                del variables[name]
                return 204, None, ()
        return 404, {"message": "Not Found"}, ()

    def hooks(self, method, repo, rest, query, body, path):
        hooks = repo["hooks"]
        if not rest:
            if method == "GET":
                chosen, headers = self.page(hooks, query, 30, 100, path)
                return 200, chosen, headers
            if method == "POST":
                config = (body or {}).get("config") or {}
                if not config.get("url"):
                    return 422, {"message": "Validation Failed"}, ()
                hook = {"id": next_hook_id[0], "type": "Repository", "name": "web",
                        "active": body.get("active", True), "events": body.get("events", ["push"]),
                        "config": config, "created_at": now_iso(), "updated_at": now_iso()}
                next_hook_id[0] += 1
                hooks.append(hook)
                return 201, hook, ()
        else:
            found = [h for h in hooks if str(h["id"]) == rest[0]]
            if not found:
                return 404, {"message": "Not Found"}, ()
            if method == "PATCH":
                found[0].update({k: v for k, v in (body or {}).items() if k in ("active", "events", "config")})
                return 200, found[0], ()
            if method == "DELETE":
                hooks.remove(found[0])
                return 204, None, ()
        return 404, {"message": "Not Found"}, ()

    def control(self, method, parts, query, body):
        with lock:
            if method == "POST" and parts == ["deny"]:
                denied.setdefault(body["token"], set()).update(body["permissions"])
                return self.answer(204)
            if method == "POST" and parts == ["fail"]:
                failures[body["repository"]] = [body.get("count", 1), body.get("status", 502)]
                return self.answer(204)
            if method == "POST" and parts == ["rate-limit"]:
                rate_limits[body["repository"]] = [body.get("count", 1), body.get("kind", "secondary")]
                return self.answer(204)
            if method == "GET" and parts == ["log"]:
                wanted = query.get("repository")
                return self.answer(200, [entry for entry in log if entry["repository"] == wanted])
        return self.answer(404, {"message": "Not Found"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
