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
- Pull requests, https://docs.github.com/en/rest/pulls/pulls: list `GET /repos/{o}/{r}/pulls`
  (`state` open by default, `per_page` default 30, at most 100), each with `head.sha`,
  `head.ref` and `head.repo.full_name` (a fork's for a fork's pull request).
- Issues, https://docs.github.com/en/rest/issues/issues: list `GET /repos/{o}/{r}/issues`
  (`state` open|closed|all, `labels` comma-separated, all required, `creator`, newest first; pull
  requests are listed too, with a `pull_request` key), create `POST` (201), read `GET
  .../issues/{n}` (with `closed_by`, who last closed it, which the list leaves out), update
  `PATCH .../issues/{n}` (`body`, `state`, `state_reason`; 200). Pull requests share the numbering.
- Collaborators, https://docs.github.com/en/rest/collaborators/collaborators: `GET
  .../collaborators/{username}/permission` (`permission`: admin|write|read|none, `role_name`).
- Issue comments, https://docs.github.com/en/rest/issues/comments: list `GET
  .../issues/{n}/comments` (oldest first), create `POST` (201), update `PATCH
  .../issues/comments/{id}` (200; 403 for a comment of another user's, as for a token without
  the right to moderate).
- Repository contents, https://docs.github.com/en/rest/repos/contents: `GET
  /repos/{o}/{r}/contents/{path}?ref=SHA` of a commit the test registered: a file in base64 (with
  its `size`), a symbolic link as `symlink`, a directory as a list, anything else 404.
- Commit statuses, https://docs.github.com/en/rest/commits/statuses: `POST
  /repos/{o}/{r}/statuses/{sha}` (`state` error|failure|pending|success, `context`,
  `description`; 201).
- The OIDC subject claim template, https://docs.github.com/en/rest/actions/oidc: `GET`/`PUT
  /repos/{o}/{r}/actions/oidc/customization/sub` (`use_default`, `include_claim_keys`, keys of
  letters, digits and `_`; `PUT` answers 201). A new repository uses the default.
- Who the token is: `GET /user` answers a personal token's login; a workflow's token (as the test
  registers one) answers 403 `Resource not accessible by integration`, and what it writes is by
  `github-actions[bot]`, a `Bot` of user id 41898282; another app's token (`type: Bot`, its
  `login` and `id`) answers the same, and writes as its own bot.
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
- `POST /_test/race` `{"repository", "issue": {"token", "title", "body", "labels"}}`: the next
  issue opened there is preceded by this one, as if another run opened it at the same moment.
- `POST /_test/refuse-duplicate` `{"repository", "count"}`: the next N closes as `duplicate` answer
  422, as GitHub has for some repositories and tokens.
- `POST /_test/token` `{"token", "login", "permission"}` for a person's token (the permission the
  collaborators API answers for that login: `admin` unless said), or `{"token", "workflow": true,
  "read_only": bool}` for a workflow's `GITHUB_TOKEN` (a fork's pull request gets a read-only one:
  every write answers 403, as GitHub's maximum for forks says).
- `POST /_test/commit` `{"repository", "sha", "files": {path: text}, "links": {path: target}}`:
  what the contents API answers of that commit.
- `POST /_test/pull` `{"repository", "head_sha", "head_repository", "head_ref"}`: opens a pull
  request, answers `{"number"}`.
- `GET /_test/state?repository=o/r`: the repository's pull requests, issues, comments, statuses
  and OIDC subject template, for the test to read.
- `POST /_test/rate-limit` `{"repository": "o/r", "count": N, "kind": "secondary"|"primary"}`
- `POST /_test/fail` `{"repository": "o/r", "count": N, "status": 502}`: the next N requests to
  the repository answer with that server error, as GitHub's front end does when a backend is
  down (`{"message": "Server Error"}`).
- `POST /_test/lose-answer` `{"repository": "o/r", "count": N}`: the next N writes (POST, PATCH)
  to the repository are made, and the connection closed instead of answering: GitHub did it, and
  the caller never hears so.
- `GET /_test/log?repository=o/r`: every request to the repository, in order, with the time
  (`time.time()`, comparable with the AWS emulator's record) it was answered.
"""

import base64
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
identities = {}  # token -> {"login"} or {"workflow": True, "read_only": bool}
BOT = {"login": "github-actions[bot]", "type": "Bot", "id": 41898282}
next_id = [1000]
rate_limits = {}  # repository -> [count, kind]
failures = {}  # repository -> [count, status]
lost_answers = {}  # repository -> count of writes made and never answered
log = []
next_hook_id = [1]


def repository(key):
    if key not in repositories:
        repositories[key] = {
            "variables": {},
            "approval_policy": "first_time_contributors",
            "workflow": {"default_workflow_permissions": "write", "can_approve_pull_request_reviews": True},
            "hooks": [],
            "oidc_sub": {"use_default": True},
            "issues": {},  # number -> issue (pull requests included)
            "comments": [],
            "statuses": [],
            "next_number": 1,
        }
    return repositories[key]


def author(token):
    identity = identities.get(token, {})
    if identity.get("workflow"):
        return dict(BOT)
    if identity.get("type") == "Bot":
        # Another GitHub App's bot (its token, like a workflow's, has no `GET /user`).
        return {"login": identity["login"], "type": "Bot", "id": identity.get("id", 1)}
    return {"login": identity.get("login", "reconcile-tester"), "type": "User"}


def new_id():
    next_id[0] += 1
    return next_id[0]


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
        if parts == ["user"] and method == "GET":
            token = self.headers.get("Authorization", " ").split(" ", 1)[1]
            identity = identities.get(token, {})
            if identity.get("workflow") or identity.get("type") == "Bot":
                return self.answer(403, {"message": "Resource not accessible by integration"})
            return self.answer(200, author(token))
        if len(parts) < 3 or parts[0] != "repos":
            return self.answer(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        key = f"{parts[1]}/{parts[2]}"
        rest = parts[3:]
        with lock:
            result = self.repository_route(method, key, rest, query, body, url.path)
            log.append({"method": method, "path": url.path, "repository": key, "status": result[0],
                        "at": time.time()})
            lose = method in ("POST", "PATCH") and lost_answers.get(key, 0) > 0
            if lose:
                lost_answers[key] -= 1
        if lose:
            self.close_connection = True
            return
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
        repo = repository(key)
        is_pull = rest[:1] == ["issues"] and rest[1:2] and rest[1].isdigit() and \
            "pull_request" in repo["issues"].get(int(rest[1]), {})
        permission = {"actions": "actions_variables" if rest[1:2] == ["variables"] else "administration",
                      "hooks": "repository_hooks", "pulls": "pull_requests",
                      "issues": "pull_requests" if is_pull else "issues",
                      "statuses": "statuses", "contents": "contents"}.get(rest[0] if rest else "", "metadata")
        level = "read" if method == "GET" else "write"
        if level == "write" and identities.get(token, {}).get("read_only"):
            return 403, {"message": "Resource not accessible by integration",
                         "documentation_url": "https://docs.github.com/rest"}, (
                ("X-Accepted-GitHub-Permissions", f"{permission}={level}"),)
        if permission in denied.get(token, set()):
            return 403, {"message": NOT_ACCESSIBLE,
                         "documentation_url": "https://docs.github.com/rest"}, (
                ("X-Accepted-GitHub-Permissions", f"{permission}={level}"),)
        if rest[:2] == ["actions", "variables"]:
            return self.variables(method, repo, rest[2:], query, body, path)
        if rest[:1] == ["contents"] and method == "GET":
            return self.contents(repo, "/".join(rest[1:]), query.get("ref", "main"))
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
        if rest == ["actions", "oidc", "customization", "sub"]:
            if method == "GET":
                return 200, dict(repo["oidc_sub"]), ()
            if method == "PUT":
                keys = (body or {}).get("include_claim_keys")
                if body is None or not isinstance(body.get("use_default"), bool) or (
                        keys is not None and not all(isinstance(k, str) and k.replace("_", "").isalnum()
                                                     for k in keys)):
                    return 422, {"message": "Invalid request."}, ()
                repo["oidc_sub"] = {"use_default": body["use_default"]}
                if keys is not None:
                    repo["oidc_sub"]["include_claim_keys"] = list(keys)
                return 201, {}, ()
        if rest[:1] == ["hooks"]:
            return self.hooks(method, repo, rest[1:], query, body, path)
        if rest[:1] == ["pulls"] and method == "GET" and len(rest) == 1:
            wanted = query.get("state", "open")
            pulls = [issue["pull"] for _, issue in sorted(repo["issues"].items())
                     if "pull_request" in issue and (wanted == "all" or issue["state"] == wanted)]
            chosen, headers = self.page(pulls, query, 30, 100, path)
            return 200, chosen, headers
        if rest[:1] == ["issues"]:
            return self.issues(method, repo, rest[1:], query, body, path, token)
        if rest[:1] == ["collaborators"] and len(rest) == 3 and rest[2] == "permission" and method == "GET":
            return self.collaborator_permission(rest[1])
        if rest[:1] == ["statuses"] and method == "POST" and len(rest) == 2:
            if (body or {}).get("state") not in ("error", "failure", "pending", "success"):
                return 422, {"message": "Validation Failed"}, ()
            status = {"id": new_id(), "sha": rest[1], "state": body["state"], "context": body.get("context", "default"),
                      "description": body.get("description"), "creator": author(token)}
            repo["statuses"].append(status)
            return 201, status, ()
        return 404, {"message": "Not Found"}, ()

    def issues(self, method, repo, rest, query, body, path, token):
        issues = repo["issues"]
        if not rest:
            if method == "GET":
                wanted = query.get("state", "open")
                labels = [label for label in query.get("labels", "").split(",") if label]
                found = [
                    self.issue_view(issue) for _, issue in sorted(issues.items(), reverse=True)
                    if (wanted == "all" or issue["state"] == wanted)
                    and all(label in issue["labels"] for label in labels)
                    and ("creator" not in query or issue["user"]["login"] == query["creator"])
                ]
                chosen, headers = self.page(found, query, 30, 100, path)
                return 200, chosen, headers
            if method == "POST":
                if not isinstance((body or {}).get("title"), str) or not body["title"]:
                    return 422, {"message": "Validation Failed"}, ()
                # Another run's issue, opened just before this one (`/_test/race`).
                for racing in repo.pop("racing", []):
                    number = repo["next_number"]
                    repo["next_number"] += 1
                    issues[number] = {"number": number, "title": racing["title"], "body": racing["body"],
                                      "labels": list(racing["labels"]), "state": "open", "state_reason": None,
                                      "user": author(racing["token"]), "created_at": now_iso()}
                number = repo["next_number"]
                repo["next_number"] += 1
                issues[number] = {"number": number, "title": body["title"], "body": body.get("body") or "",
                                  "labels": list(body.get("labels") or []), "state": "open", "state_reason": None,
                                  "user": author(token), "created_at": now_iso()}
                return 201, self.issue_view(issues[number]), ()
            return 404, {"message": "Not Found"}, ()
        if rest[0] == "comments" and len(rest) == 2 and method == "PATCH":
            found = [c for c in repo["comments"] if str(c["id"]) == rest[1]]
            if not found:
                return 404, {"message": "Not Found"}, ()
            if found[0]["user"] != author(token):
                return 403, {"message": "Must have admin rights to Repository."}, ()
            if not isinstance((body or {}).get("body"), str):
                return 422, {"message": "Validation Failed"}, ()
            found[0]["body"] = body["body"]
            return 200, found[0], ()
        if not rest[0].isdigit() or int(rest[0]) not in issues:
            return 404, {"message": "Not Found"}, ()
        issue = issues[int(rest[0])]
        if len(rest) == 1 and method == "GET":
            return 200, self.issue_view(issue, whole=True), ()
        if len(rest) == 1 and method == "PATCH":
            if "body" in (body or {}):
                issue["body"] = body["body"]
            if (body or {}).get("state") in ("open", "closed"):
                if body["state"] == "closed" and body.get("state_reason") == "duplicate" \
                        and repo.get("refuse_duplicate", 0) > 0:
                    repo["refuse_duplicate"] -= 1
                    return 422, {"message": "Validation Failed", "errors": [
                        {"resource": "Issue", "field": "state_reason", "code": "invalid"}]}, ()
                issue["state"] = body["state"]
                issue["state_reason"] = body.get("state_reason") if body["state"] == "closed" else "reopened"
                if body["state"] == "closed":
                    issue["closed_by"] = author(token)
            return 200, self.issue_view(issue), ()
        if rest[1:] == ["comments"]:
            if method == "GET":
                mine = [c for c in repo["comments"] if c["issue_number"] == issue["number"]]
                chosen, headers = self.page(mine, query, 30, 100, path)
                return 200, chosen, headers
            if method == "POST":
                if not isinstance((body or {}).get("body"), str) or len(body["body"]) > 65536:
                    return 422, {"message": "Validation Failed"}, ()
                comment = {"id": new_id(), "issue_number": issue["number"], "body": body["body"],
                           "user": author(token), "created_at": now_iso()}
                repo["comments"].append(comment)
                return 201, comment, ()
        return 404, {"message": "Not Found"}, ()

    @staticmethod
    def contents(repo, path, ref):
        """A file of a commit, as the contents API answers it: base64, with its size and type; a
        symbolic link as a `symlink`, a directory as a list."""
        tree = repo.get("commits", {}).get(ref)
        if tree is None or not path:
            return 404, {"message": "No commit found for the ref " + ref}, ()
        if path in tree.get("links", {}):
            return 200, {"type": "symlink", "target": tree["links"][path], "path": path, "size": 0}, ()
        if path in tree.get("files", {}):
            data = tree["files"][path].encode()
            encoded = base64.b64encode(data).decode()
            # GitHub wraps the base64 at 60 characters.
            wrapped = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60))
            return 200, {"type": "file", "encoding": "base64", "content": wrapped, "size": len(data),
                         "path": path, "name": path.rsplit("/", 1)[-1]}, ()
        if any(name.startswith(path + "/") for name in tree.get("files", {})):
            return 200, [{"type": "file", "path": name} for name in tree["files"] if name.startswith(path + "/")], ()
        return 404, {"message": "Not Found"}, ()

    @staticmethod
    def collaborator_permission(login):
        """`GET /repos/{o}/{r}/collaborators/{username}/permission`: a person's token's login has
        the permission the test gave it (`admin` unless said), the default tester is an admin, a
        bot is no user (404), and anyone else may read (a public repository)."""
        if login.endswith("[bot]"):
            return 404, {"message": f"{login} is not a user"}, ()
        people = [i for i in identities.values()
                  if i.get("login") == login and not i.get("workflow") and i.get("type") != "Bot"]
        if people or login == "reconcile-tester":
            permission = people[0].get("permission", "admin") if people else "admin"
        else:
            permission = "read"
        role = {"admin": "admin", "write": "write", "read": "read", "none": "none"}.get(permission, permission)
        level = "write" if permission in ("maintain", "write") else "read" if permission in ("triage", "read") \
            else permission
        return 200, {"permission": level, "role_name": role, "user": {"login": login, "type": "User"}}, ()

    @staticmethod
    def issue_view(issue, whole=False):
        # `closed_by` is in an issue's own answer only, not in the list's.
        view = {k: v for k, v in issue.items() if k != "pull" and (whole or k != "closed_by")}
        view["labels"] = [{"name": label} for label in issue["labels"]]
        return view

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
            if method == "POST" and parts == ["commit"]:
                repo = repository(body["repository"])
                repo.setdefault("commits", {})[body["sha"]] = {"files": body.get("files", {}),
                                                               "links": body.get("links", {})}
                return self.answer(204)
            if method == "POST" and parts == ["token"]:
                identities[body["token"]] = {k: v for k, v in body.items() if k != "token"}
                return self.answer(204)
            if method == "POST" and parts == ["pull"]:
                repo = repository(body["repository"])
                number = repo["next_number"]
                repo["next_number"] += 1
                pull = {"number": number, "state": "open",
                        "head": {"sha": body["head_sha"], "ref": body.get("head_ref", "topic"),
                                 "repo": {"full_name": body.get("head_repository", body["repository"])}},
                        "base": {"ref": "main", "repo": {"full_name": body["repository"]}}}
                repo["issues"][number] = {"number": number, "title": body.get("title", "a pull request"), "body": "",
                                          "labels": [], "state": "open", "state_reason": None,
                                          "user": {"login": "contributor", "type": "User"},
                                          "created_at": now_iso(), "pull_request": {"url": ""}, "pull": pull}
                return self.answer(201, {"number": number})
            if method == "GET" and parts == ["state"]:
                repo = repository(query["repository"])
                return self.answer(200, {
                    "issues": [self.issue_view(issue) for _, issue in sorted(repo["issues"].items())],
                    "comments": repo["comments"], "statuses": repo["statuses"], "oidc_sub": repo["oidc_sub"]})
            if method == "POST" and parts == ["fail"]:
                failures[body["repository"]] = [body.get("count", 1), body.get("status", 502)]
                return self.answer(204)
            if method == "POST" and parts == ["lose-answer"]:
                lost_answers[body["repository"]] = body.get("count", 1)
                return self.answer(204)
            if method == "POST" and parts == ["race"]:
                repository(body["repository"]).setdefault("racing", []).append(body["issue"])
                return self.answer(204)
            if method == "POST" and parts == ["refuse-duplicate"]:
                repository(body["repository"])["refuse_duplicate"] = body.get("count", 1)
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
