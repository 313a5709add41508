"""A policy gate: the emulator refuses, as AWS would, what a role's policies do not allow.

moto authorizes nothing, so on its own an apply made as the apply role proves nothing about that
role's policy. A test registers one access key (a session of a role) with a decider, an HTTP
endpoint of its own on loopback:
  `POST /_reconcile/gate?access_key=KEY&decider=http://127.0.0.1:PORT/` (`&off=1` to stop)
From then on, every request made with that key is first sent to the decider as JSON: what the
launcher records of it (service, action, method, path, query, resource, account, region), and
what IAM would evaluate it with that the request alone does not say:
- `context`: the condition keys reconcile's policies use, from the emulator's own state:
  `aws:ResourceTag/KEY` (the repository's tags), `aws:RequestTag/KEY` and `aws:TagKeys` (the
  tags the request sets, or the keys it takes off; a new bucket's too), `iam:PermissionsBoundary`
  (the boundary the request puts, or the one the role carries);
- `passes_role`: the role a CodeBuild project is given, which IAM checks as `iam:PassRole`.
The decider answers `{"allowed": true}` or `{"allowed": false, "message": "..."}`; a refused
request is answered with AccessDenied in the service's own protocol and never reaches moto (nor
the CloudTrail history, which keeps what succeeded). A decider that cannot be reached refuses.

The policy evaluation itself is the Rust one (`reconcile_iam::evaluate`), in the test: one
evaluator, not two.
"""

import io
import json
import threading
import urllib.request
from urllib.parse import parse_qs

GATE_PATH = "/_reconcile/gate"
# Access key -> the decider's URL.
GATES = {}
LOCK = threading.Lock()


def control(path, environ, start_response):
    """Registers (or removes) a gated access key; None when `path` is not the gate's."""
    if path != GATE_PATH:
        return None
    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    with LOCK:
        if query.get("off"):
            GATES.pop(query["access_key"], None)
        else:
            GATES[query["access_key"]] = query["decider"]
    start_response("204 No Content", [])
    return [b""]


def check(environ, entry, start_response):
    """The refusal of a gated request the decider does not allow; None to serve it."""
    with LOCK:
        decider = GATES.get(entry["access_key"])
    if decider is None:
        return None
    try:
        context, passes_role = facts(environ, entry)
        question = dict(entry, context=context, passes_role=passes_role)
        request = urllib.request.Request(
            decider, data=json.dumps(question).encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            decision = json.loads(answer.read())
    except Exception as error:  # noqa: BLE001 - any failure to decide refuses
        decision = {"allowed": False, "message": f"the test's policy gate could not decide: {error}"}
    if decision.get("allowed"):
        return None
    return refuse(environ, entry, start_response, decision.get("message", "not allowed"))


def body_of(environ):
    stream = environ.get("wsgi.input")
    return stream.getvalue() if isinstance(stream, io.BytesIO) else b""


def facts(environ, entry):
    """The condition keys IAM would have for this request, and the role it passes."""
    account, region = entry["account"], entry["region"]
    body = body_of(environ)
    context = {}
    passes_role = None
    if entry["service"] == "ecr":
        from moto.ecr.models import ecr_backends

        try:
            fields = json.loads(body or b"{}")
        except ValueError:
            fields = {}
        name = fields.get("repositoryName") or fields.get("resourceArn", "").rpartition("repository/")[2]
        backend = ecr_backends[account][region]
        repository = backend.repositories.get(name) if name else None
        if repository is not None:
            for key, value in backend.tagger.get_tag_dict_for_resource(repository.arn).items():
                context[f"aws:ResourceTag/{key}"] = [value]
        tags = fields.get("tags") or []
        for tag in tags:
            context[f"aws:RequestTag/{tag['Key']}"] = [tag["Value"]]
        if tags:
            context["aws:TagKeys"] = [tag["Key"] for tag in tags]
        # UntagResource names the keys it takes off.
        if fields.get("tagKeys"):
            context["aws:TagKeys"] = list(fields["tagKeys"])
    elif entry["service"] == "s3" and entry["action"] == "CreateBucket":
        tags = creation_tags(body) or {}
        for key, value in tags.items():
            context[f"aws:RequestTag/{key}"] = [value]
        if tags:
            context["aws:TagKeys"] = list(tags)
    elif entry["service"] == "iam":
        from moto.iam.models import iam_backends

        form = parse_qs(body.decode("utf-8", "replace"))
        boundary = form.get("PermissionsBoundary", [None])[0]
        if entry["action"] not in ("CreateRole", "PutRolePermissionsBoundary") and form.get("RoleName"):
            backend = iam_backends[account]["aws"]
            role = next((r for r in backend.get_roles() if r.name == form["RoleName"][0]), None)
            boundary = role.permissions_boundary_arn if role is not None else None
        if boundary:
            context["iam:PermissionsBoundary"] = [boundary]
    elif entry["service"] == "codebuild" and entry["action"] in ("CreateProject", "UpdateProject"):
        try:
            passes_role = json.loads(body or b"{}").get("serviceRole")
        except ValueError:
            passes_role = None
    return context, passes_role


def creation_tags(body):
    """The tags of a `CreateBucketConfiguration`, as a dict; None when it has none."""
    import xmltodict

    if not body:
        return None
    try:
        configuration = xmltodict.parse(body).get("CreateBucketConfiguration") or {}
    except Exception:  # noqa: BLE001 - not XML: moto's own parse said so already
        return None
    tags = (configuration.get("Tags") or {}).get("Tag")
    if not tags:
        return None
    if not isinstance(tags, list):
        tags = [tags]
    return {tag["Key"]: tag.get("Value") or "" for tag in tags}


def refuse(environ, entry, start_response, message):
    """AccessDenied, as the service answers it."""
    message = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if entry["service"] == "s3":
        body = f"<Error><Code>AccessDenied</Code><Message>{message}</Message></Error>".encode()
        status, content_type = "403 Forbidden", "application/xml"
    elif environ.get("HTTP_X_AMZ_TARGET"):
        body = json.dumps({"__type": "AccessDeniedException", "message": message}).encode()
        status, content_type = "400 Bad Request", "application/x-amz-json-1.1"
    else:
        body = (
            '<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type>'
            f"<Code>AccessDenied</Code><Message>{message}</Message></Error>"
            "<RequestId>refused-by-the-policy-gate</RequestId></ErrorResponse>"
        ).encode()
        status, content_type = "403 Forbidden", "text/xml"
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
