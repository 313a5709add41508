"""Starts the local AWS emulator (moto in server mode) on loopback for reconcile's tests and demo.

Beyond plain `python -m moto.server` it:
- prints `listening http://HOST:PORT` once it accepts connections, so a free port (0) can be
  asked for and learned;
- records every request (service, action, access key) in memory, served as JSON at
  `GET /_reconcile/requests` (`?access_key=KEY`: one caller's) and cleared by
  `POST /_reconcile/requests/reset`, so tests can count the calls one test account made, even
  with many tests sharing one server;
- exits when its standard input closes (`--exit-with-parent`), so a test process that dies
  never leaves a server behind;
- adds to CodeBuild what moto 5.2.5 lacks (see `patch_codebuild`), and a switch that makes
  `CreateProject` fail with IAM's propagation error for the next N calls of one account:
  `POST /_reconcile/codebuild/fail-create-project?account=ID&count=N` (or `--fail-create-project N`
  for every account); `&reason=TEXT` fails them with an input error instead, which no retry fixes;
- answers AccessDenied, as IAM does, to every call of one action by one access key:
  `POST /_reconcile/deny?access_key=KEY&action=GetRole&service=iam&caller=ARN&resource=TEXT`
  (query protocol services only: moto's own authorization answers JSON services in XML);
  `&code=CODE&message=TEXT` answers another error instead, such as `ExpiredToken`.

- behaves as AWS does where moto differs in a way a plan would see (see `patch_defaults`);
- is as strict as AWS about how CodeBuild reaches GitHub (see `patch_source_credentials`):
  it serves `ImportSourceCredentials`, `ListSourceCredentials` and `DeleteSourceCredentials`, a
  stand-in of CodeConnections' `GetConnection` (connections made with
  `POST /_reconcile/codeconnections/connection?arn=ARN&status=AVAILABLE|PENDING|ERROR`), and
  `POST /_reconcile/codebuild/source-credential?account=ID&region=R[&delete=1]` to give (or take)
  an account's GitHub credential without a request of its own, and
  refuses `CreateProject`, `UpdateProject` and `CreateWebhook` for a GitHub source without a
  credential or an `AVAILABLE` connection, with AWS's exceptions and messages;
- keeps a CloudTrail event history of every write it serves and answers `LookupEvents` from it
  (see `cloudtrail.py`);
- serves what a night's cost is read from (see `billing.py`): builds with given times, the Price
  List, CloudWatch's bucket size in CBOR; and pushes images at a time the demo sets
  (`POST /_reconcile/ecr/push-time?account=ID&at=EPOCH`, 0 for now);
- refuses, as AWS would, what a gated role's policies do not allow, deciding through the test
  (see `gate.py`);
- pages every list operation reconcile calls as AWS does (`maxResults`/`nextToken`,
  `MaxItems`/`Marker`), and, for one account, in pages of at most N items:
  `POST /_reconcile/page-size?account=ID&size=N` (see `patch_pagination`).

Patches to moto's own behaviour must be applied in this process before the first request,
which is why the harness starts this script rather than `python -m moto.server`.
"""

import argparse
import io
import json
import logging
import sys
import time
import threading
from urllib.parse import parse_qs

import billing
import cloudtrail
import gate

RECORDS_PATH = "/_reconcile/requests"
FAIL_CREATE_PROJECT_PATH = "/_reconcile/codebuild/fail-create-project"

# Account id (or "*") -> [how many more CreateProject calls fail, and how: "iam" as if the role
# had not propagated, anything else as an input error that no retry fixes].
FAIL_CREATE_PROJECT = {}
FAIL_LOCK = threading.Lock()

# Every webhook secret CreateWebhook has answered, for tests that prove no output holds one.
WEBHOOK_SECRETS_PATH = "/_reconcile/codebuild/webhook-secrets"
WEBHOOK_SECRETS = []

SOURCE_CREDENTIAL_PATH = "/_reconcile/codebuild/source-credential"
# (account, region) -> {server type: what ListSourceCredentials answers of it}.
SOURCE_CREDENTIALS = {}

CONNECTIONS_PATH = "/_reconcile/codeconnections/connection"
# Connection ARN -> status; what GetConnection answers.
CONNECTIONS = {}

PAGE_SIZE_PATH = "/_reconcile/page-size"
# Account id -> the largest page any list operation answers.
PAGE_SIZE = {}
# Account id -> when its next image is pushed (seconds since the epoch), each next one a second
# later; 0 or missing: now. For the demo's history (`seed.py --history`).
PUSH_TIME_PATH = "/_reconcile/ecr/push-time"
PUSH_CLOCK = {}

DENY_PATH = "/_reconcile/deny"
# (access key, action) -> the error code and message to answer with.
DENY = {}


class RequestRecorder:
    """WSGI middleware that remembers who called what."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.records = []
        # Access key -> its records, so one caller's are read without a walk through every
        # test's (the suite makes hundreds of thousands of requests).
        self.by_key = {}

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == RECORDS_PATH:
            # `?access_key=KEY`: one caller's requests only, so a check after each of a
            # thousand runs does not read every other test's requests each time.
            keys = parse_qs(environ.get("QUERY_STRING", "")).get("access_key")
            with self.lock:
                if not keys:
                    records = self.records
                elif len(keys) == 1:
                    records = self.by_key.get(keys[0], [])
                else:
                    # In the order they arrived, as the whole list has them.
                    records = sorted((r for key in set(keys) for r in self.by_key.get(key, [])), key=lambda r: r["seq"])
                body = json.dumps(records).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if path == RECORDS_PATH + "/reset":
            with self.lock:
                self.records.clear()
                self.by_key.clear()
            start_response("204 No Content", [])
            return [b""]
        if path == FAIL_CREATE_PROJECT_PATH:
            query = parse_qs(environ.get("QUERY_STRING", ""))
            with FAIL_LOCK:
                FAIL_CREATE_PROJECT[query["account"][0]] = [int(query["count"][0]), query.get("reason", ["iam"])[0]]
            start_response("204 No Content", [])
            return [b""]
        if path == WEBHOOK_SECRETS_PATH:
            with FAIL_LOCK:
                body = json.dumps(WEBHOOK_SECRETS).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if path == SOURCE_CREDENTIAL_PATH:
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            account, region = query["account"], query["region"]
            with FAIL_LOCK:
                mine = SOURCE_CREDENTIALS.setdefault((account, region), {})
                if query.get("delete"):
                    mine.clear()
                else:
                    mine["GITHUB"] = {"arn": f"arn:aws:codebuild:{region}:{account}:token/github",
                                      "serverType": "GITHUB", "authType": "PERSONAL_ACCESS_TOKEN"}
            start_response("204 No Content", [])
            return [b""]
        if path == CONNECTIONS_PATH:
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            with FAIL_LOCK:
                CONNECTIONS[query["arn"]] = query.get("status", "AVAILABLE")
            start_response("204 No Content", [])
            return [b""]
        if path == PUSH_TIME_PATH:
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            with FAIL_LOCK:
                PUSH_CLOCK[query["account"]] = int(query["at"])
            start_response("204 No Content", [])
            return [b""]
        if path == PAGE_SIZE_PATH:
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            with FAIL_LOCK:
                PAGE_SIZE[query["account"]] = int(query["size"])
            start_response("204 No Content", [])
            return [b""]
        if path == DENY_PATH:
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            action = f"{query['service']}:{query['action']}"
            message = query.get("message") or (
                f"User: {query['caller']} is not authorized to perform: {action} on resource: "
                f"{query['resource']} because no identity-based policy allows the {action} action"
            )
            with FAIL_LOCK:
                DENY[(query["access_key"], query["action"])] = (query.get("code", "AccessDenied"), message)
            start_response("204 No Content", [])
            return [b""]
        answered = (
            billing.control(path, environ, start_response)
            or cloudtrail.control(path, environ, start_response)
            or gate.control(path, environ, start_response)
        )
        if answered is not None:
            return answered
        if not path.startswith("/moto-api"):
            entry = self.record(environ, path)
            refused = gate.check(environ, entry, start_response)
            if refused is not None:
                self.trail_failure(environ, entry, ("AccessDenied", "refused by the test's policy gate"))
                return refused
            with FAIL_LOCK:
                denied = DENY.get((entry["access_key"], entry["action"]))
            if entry["service"] == "codeconnections":
                return get_connection(environ, entry, start_response)
            if denied is not None and environ.get("HTTP_X_AMZ_TARGET"):
                # JSON protocol services (Price List, Cost Explorer) answer errors in JSON.
                code, message = denied
                return billing.json_error(start_response, code, message)
            if denied is None:
                account = entry["account"]
                if entry["service"] == "cloudtrail" and entry["action"] == "LookupEvents":
                    return cloudtrail.lookup_events(environ, start_response, account, entry["region"])
                answered = billing.serve(environ, entry, start_response, account, entry["region"])
                if answered is not None:
                    return answered
                return self.traced(environ, start_response, entry, account)
            if denied is not None:
                code, message = denied
                self.trail_failure(environ, entry, denied)
                body = (
                    '<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type>'
                    f"<Code>{code}</Code><Message>{message}</Message></Error>"
                    "<RequestId>denied-by-the-test-launcher</RequestId></ErrorResponse>"
                ).encode()
                start_response("403 Forbidden", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
                return [body]
        return self.app(environ, start_response)

    def traced(self, environ, start_response, entry, account):
        """Serves the request with moto, and keeps it in the CloudTrail stand-in's history, a failure
        with its error code (what CloudTrail records of a write: see `cloudtrail.py`)."""
        body = b""
        if isinstance(environ.get("wsgi.input"), io.BytesIO):
            body = environ["wsgi.input"].getvalue()
        status = []

        def remembering(code, headers, *rest):
            status.append(code)
            return start_response(code, headers, *rest)

        answer = self.app(environ, remembering)
        if status and account:
            failure = None if status[0].startswith("2") else ("Error" + status[0].split()[0], "the request failed")
            cloudtrail.record(environ, entry, account, body, failure)
        return answer

    def trail_failure(self, environ, entry, failure):
        """Keeps a refused write in the CloudTrail stand-in's history, as CloudTrail keeps a denied
        call."""
        if entry.get("account"):
            body = environ["wsgi.input"].getvalue() if isinstance(environ.get("wsgi.input"), io.BytesIO) else b""
            cloudtrail.record(environ, entry, entry["account"], body, failure)

    def record(self, environ, path):
        access_key, service, region = "", "", ""
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if "Credential=" in authorization:
            scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
            access_key = scope[0]
            region = scope[2] if len(scope) > 2 else ""
            service = scope[3] if len(scope) > 3 else ""
        action = environ.get("HTTP_X_AMZ_TARGET", "").rsplit(".", 1)[-1]
        if path.startswith(billing.CBOR_PREFIX):
            # Smithy RPC v2 CBOR (CloudWatch): the operation is the path's last part.
            action = path.rsplit("/", 1)[-1]
        content_type = environ.get("CONTENT_TYPE", "")
        # What the request acts on, for the tests that hold each request to a policy: the
        # repository, project, role or provider it names (S3's is in its path).
        resource = ""
        if (action and not path.startswith(billing.CBOR_PREFIX)) or content_type.startswith(
                "application/x-www-form-urlencoded"):
            # Read the body and put it back.
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            if action:
                # JSON protocol (ECR, CodeBuild).
                try:
                    fields = json.loads(body or b"{}")
                except ValueError:
                    fields = {}
                if isinstance(fields, dict):
                    for key in ("repositoryName", "projectName", "name", "projectArn", "resourceArn", "ConnectionArn"):
                        if isinstance(fields.get(key), str):
                            resource = fields[key]
                            break
                    else:
                        for key in ("names", "ids"):
                            if isinstance(fields.get(key), list):
                                resource = ",".join(str(name) for name in fields[key])
                                break
            else:
                # Query protocol (IAM, STS): the action is a form field.
                form = parse_qs(body.decode("utf-8", "replace"))
                action = form.get("Action", [""])[0]
                for key in ("RoleName", "OpenIDConnectProviderArn", "Url", "RoleArn", "PolicyArn", "PolicyName"):
                    if form.get(key):
                        resource = form[key][0]
                        break
        from moto.iam.models import get_account_id_from

        entry = {
            "access_key": access_key,
            # The account the keys are of, so a test can derive the policy for that account.
            "account": get_account_id_from(access_key) if access_key else "",
            "service": service,
            "action": action,
            "method": environ.get("REQUEST_METHOD", ""),
            "path": path,
            "query": environ.get("QUERY_STRING", ""),
            "resource": resource,
            "region": region,
            # The SDK's user agent names the application (`app/reconcile`): what the binary
            # sent, told apart from a test's own calls with the same keys.
            "user_agent": environ.get("HTTP_USER_AGENT", ""),
            # The SDK numbers a request's attempts (`amz-sdk-request: attempt=2; max=8`).
            "attempt": attempt_of(environ),
            # When it arrived, comparable with the GitHub stand-in's log (both time.time()).
            "at": time.time(),
        }
        with self.lock:
            entry["seq"] = len(self.records)
            self.records.append(entry)
            self.by_key.setdefault(access_key, []).append(entry)
        return entry


def attempt_of(environ):
    for part in environ.get("HTTP_AMZ_SDK_REQUEST", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "attempt" and value.isdigit():
            return int(value)
    return 1


def patch_codebuild():
    """What moto 5.2.5's CodeBuild lacks or gets wrong, added the way moto dispatches.

    `CodeBuildResponse` finds a handler by the snake_case of the `X-Amz-Target` action among the
    plain functions of the class, so functions assigned onto it (before the first request) are
    served. moto's own validation is kept wherever it exists.
    """
    import secrets

    from moto.codebuild import models, responses
    from moto.codebuild.exceptions import (
        InvalidInputException,
        ResourceAlreadyExistsException,
        ResourceNotFoundException,
    )
    from moto.core.responses import ActionResult, EmptyResult
    from moto.core.utils import unix_time

    # moto knows only SMALL to 2XLARGE; the nightly runs on XLARGE. Validate the rest as moto does.
    validate_environment = responses._validate_required_params_environment

    def widened_validate_environment(environment):
        if environment.get("computeType") == "BUILD_GENERAL1_XLARGE":
            environment = dict(environment, computeType="BUILD_GENERAL1_LARGE")
        validate_environment(environment)

    responses._validate_required_params_environment = widened_validate_environment

    # AWS answers 60 and 480 for undeclared timeouts; moto answers 0. And AWS adds a variable of
    # its own to every new project's environment (terraform-provider-aws issue 37051).
    create_project_backend = models.CodeBuildBackend.create_project

    def create_project_with_default_timeouts(self, *args, **kwargs):
        metadata = create_project_backend(self, *args, **kwargs)
        metadata["timeoutInMinutes"] = metadata.get("timeoutInMinutes") or 60
        metadata["queuedTimeoutInMinutes"] = metadata.get("queuedTimeoutInMinutes") or 480
        environment = metadata.setdefault("environment", {})
        variables = environment.setdefault("environmentVariables", [])
        if not any(v.get("name") == "CODEBUILD_CONFIG_AUTO_DISCOVER" for v in variables):
            variables.append({"name": "CODEBUILD_CONFIG_AUTO_DISCOVER", "value": "true", "type": "PLAINTEXT"})
        return metadata

    models.CodeBuildBackend.create_project = create_project_with_default_timeouts

    # The IAM propagation error, on request (see the module doc).
    create_project_response = responses.CodeBuildResponse.create_project

    def create_project(self):
        with FAIL_LOCK:
            for key in (self.current_account, "*"):
                remaining, reason = FAIL_CREATE_PROJECT.get(key, [0, "iam"])
                if remaining > 0:
                    FAIL_CREATE_PROJECT[key] = [remaining - 1, reason]
                    if reason == "iam":
                        raise InvalidInputException(
                            f"CodeBuild is not authorized to perform: sts:AssumeRole on {self._get_param('serviceRole')}"
                        )
                    raise InvalidInputException(f"Invalid project environment: {reason}")
        return create_project_response(self)

    def project(self, name):
        project = self.codebuild_backend.codebuild_projects.get(name)
        if project is None:
            raise ResourceNotFoundException(f"Project not found: {name}")
        return project

    def update_project(self):
        name = self._get_param("name")
        found = project(self, name)
        if self._get_param("source") is not None:
            responses._validate_required_params_source(self._get_param("source"))
        if self._get_param("artifacts") is not None:
            responses._validate_required_params_artifacts(self._get_param("artifacts"))
        if self._get_param("environment") is not None:
            responses._validate_required_params_environment(self._get_param("environment"))
        if self._get_param("serviceRole") is not None:
            responses._validate_required_params_service_role(self.current_account, self.region, self._get_param("serviceRole"))
            found.service_role = self._get_param("serviceRole")
        metadata = found.project_metadata
        # A patch: what is sent replaces what was there, what is not sent stays; tags replace the set.
        for key in (
            "description", "source", "artifacts", "environment", "serviceRole", "timeoutInMinutes",
            "queuedTimeoutInMinutes", "logsConfig", "cache", "tags", "sourceVersion", "vpcConfig",
            "secondarySources", "secondarySourceVersions", "secondaryArtifacts", "fileSystemLocations",
            "buildBatchConfig", "encryptionKey", "badgeEnabled", "concurrentBuildLimit", "autoRetryLimit",
        ):
            value = self._get_param(key)
            if value is not None:
                metadata[key] = value
        if self._get_param("tags") is not None:
            found.tags = self._get_param("tags")
        metadata["lastModifiedDate"] = unix_time()
        return ActionResult({"project": metadata})

    def check_filter_groups(filter_groups):
        allowed = {
            "EVENT", "BASE_REF", "HEAD_REF", "ACTOR_ACCOUNT_ID", "FILE_PATH", "COMMIT_MESSAGE", "WORKFLOW_NAME",
            "TAG_NAME", "RELEASE_NAME", "REPOSITORY_NAME", "ORGANIZATION_NAME",
        }
        for group in filter_groups or []:
            if not any(f.get("type") == "EVENT" for f in group):
                raise InvalidInputException("Each filter group must contain a filter of type EVENT")
            for webhook_filter in group:
                if webhook_filter.get("type") not in allowed:
                    raise InvalidInputException(f"Invalid filter type: {webhook_filter.get('type')}")
                if not webhook_filter.get("pattern"):
                    raise InvalidInputException("Filter pattern is required")

    def create_webhook(self):
        name = self._get_param("projectName")
        metadata = project(self, name).project_metadata
        if metadata.get("webhook"):
            raise ResourceAlreadyExistsException(f"Webhook for project {name} already exists")
        check_filter_groups(self._get_param("filterGroups"))
        if self._get_param("branchFilter") and self._get_param("filterGroups"):
            raise InvalidInputException("You cannot use branchFilter and filterGroups at the same time")
        webhook = {
            "url": f"https://api.github.com/repos/example/{name}/hooks/{secrets.randbelow(10**8)}",
            "payloadUrl": f"https://codebuild.{self.region}.amazonaws.com/webhooks?t={secrets.token_hex(16)}",
            "branchFilter": self._get_param("branchFilter"),
            "filterGroups": self._get_param("filterGroups"),
            "buildType": self._get_param("buildType") or "BUILD",
            "manualCreation": bool(self._get_param("manualCreation")),
            "scopeConfiguration": self._get_param("scopeConfiguration"),
            "pullRequestBuildPolicy": self._get_param("pullRequestBuildPolicy"),
            "lastModifiedSecret": unix_time(),
            "status": "ACTIVE",
        }
        metadata["webhook"] = {k: v for k, v in webhook.items() if v is not None}
        # Only CreateWebhook ever shows the secret.
        secret = secrets.token_hex(20)
        with FAIL_LOCK:
            WEBHOOK_SECRETS.append(secret)
        return ActionResult({"webhook": dict(metadata["webhook"], secret=secret)})

    def update_webhook(self):
        name = self._get_param("projectName")
        webhook = project(self, name).project_metadata.get("webhook")
        if not webhook:
            raise ResourceNotFoundException(f"Webhook for project {name} not found")
        check_filter_groups(self._get_param("filterGroups"))
        for key in ("branchFilter", "filterGroups", "buildType", "pullRequestBuildPolicy"):
            if self._get_param(key) is not None:
                webhook[key] = self._get_param(key)
        if self._get_param("rotateSecret"):
            webhook["lastModifiedSecret"] = unix_time()
        return ActionResult({"webhook": webhook})

    def delete_webhook(self):
        name = self._get_param("projectName")
        metadata = project(self, name).project_metadata
        if not metadata.pop("webhook", None):
            raise ResourceNotFoundException(f"Webhook for project {name} not found")
        return EmptyResult()

    def update_project_visibility(self):
        """`UpdateProjectVisibility`, which moto lacks: `PUBLIC_READ` shows the project's builds
        and logs to anyone with its alias
        (https://docs.aws.amazon.com/codebuild/latest/APIReference/API_UpdateProjectVisibility.html)."""
        arn = self._get_param("projectArn") or ""
        visibility = self._get_param("projectVisibility")
        if visibility not in ("PUBLIC_READ", "PRIVATE"):
            raise InvalidInputException(f"Invalid project visibility: {visibility}")
        metadata = project(self, arn.rsplit("/", 1)[-1]).project_metadata
        metadata["projectVisibility"] = visibility
        if visibility == "PUBLIC_READ":
            metadata["publicProjectAlias"] = metadata.get("publicProjectAlias") or secrets.token_hex(8)
            if self._get_param("resourceAccessRole"):
                metadata["resourceAccessRole"] = self._get_param("resourceAccessRole")
        else:
            metadata.pop("resourceAccessRole", None)
        return ActionResult({
            "projectArn": arn,
            "publicProjectAlias": metadata.get("publicProjectAlias"),
            "projectVisibility": visibility,
        })

    responses.CodeBuildResponse.create_project = create_project
    responses.CodeBuildResponse.update_project = update_project
    responses.CodeBuildResponse.update_project_visibility = update_project_visibility
    responses.CodeBuildResponse.create_webhook = create_webhook
    responses.CodeBuildResponse.update_webhook = update_webhook
    responses.CodeBuildResponse.delete_webhook = delete_webhook


def get_connection(environ, entry, start_response):
    """CodeConnections' `GetConnection`, which moto lacks, as its API reference answers it
    (https://docs.aws.amazon.com/codeconnections/latest/APIReference/API_GetConnection.html):
    the connection, with its `ConnectionStatus` (`PENDING` until someone completes the handshake in
    the console, then `AVAILABLE`), or `ResourceNotFoundException`."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
    arn = body.get("ConnectionArn", "")
    with FAIL_LOCK:
        status = CONNECTIONS.get(arn)
    if entry["action"] != "GetConnection" or status is None:
        answer = {"__type": "ResourceNotFoundException", "Message": f"Connection {arn} does not exist"}
        code = "400 Bad Request"
    else:
        parts = arn.split(":")
        answer = {"Connection": {
            "ConnectionName": arn.rsplit("/", 1)[-1], "ConnectionArn": arn, "ProviderType": "GitHub",
            "OwnerAccountId": parts[4] if len(parts) > 4 else "", "ConnectionStatus": status,
        }}
        code = "200 OK"
    data = json.dumps(answer).encode()
    start_response(code, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(data)))])
    return [data]


def patch_source_credentials():
    """How CodeBuild reaches GitHub, which moto 5.2.5 does not model, as AWS does it.

    A GitHub source needs the account's source credential for GitHub in the region
    (`ImportSourceCredentials`: one per server type, listed by `ListSourceCredentials` without the
    token, https://docs.aws.amazon.com/codebuild/latest/APIReference/API_ImportSourceCredentials.html)
    or a connection named in the project's `source.auth` (`CODECONNECTIONS`) that is `AVAILABLE`.
    Without one, AWS answers `CreateProject` with `InvalidInputException: No Access token found,
    please visit AWS CodeBuild console to connect to GitHub` (aws-cdk issue 1844) and
    `CreateWebhook` with `ResourceNotFoundException: Could not find access token for server type
    github` (terraform-provider-aws PR 2814).
    """
    from moto.codebuild import responses
    from moto.codebuild.exceptions import InvalidInputException, ResourceNotFoundException
    from moto.core.responses import ActionResult

    credentials = SOURCE_CREDENTIALS

    def import_source_credentials(self):
        server_type = self._get_param("serverType")
        auth_type = self._get_param("authType")
        if not self._get_param("token") or server_type not in ("GITHUB", "GITHUB_ENTERPRISE", "BITBUCKET", "GITLAB",
                                                                 "GITLAB_SELF_MANAGED"):
            raise InvalidInputException("Invalid source credentials")
        arn = f"arn:aws:codebuild:{self.region}:{self.current_account}:token/{server_type.lower()}"
        with FAIL_LOCK:
            mine = credentials.setdefault((self.current_account, self.region), {})
            if server_type in mine and not self._get_param("shouldOverwrite"):
                raise InvalidInputException(f"Access token with server type {server_type} already exists")
            mine[server_type] = {"arn": arn, "serverType": server_type, "authType": auth_type}
        return ActionResult({"arn": arn})

    def list_source_credentials(self):
        with FAIL_LOCK:
            infos = list(credentials.get((self.current_account, self.region), {}).values())
        return ActionResult({"sourceCredentialsInfos": infos})

    def delete_source_credentials(self):
        arn = self._get_param("arn")
        with FAIL_LOCK:
            mine = credentials.get((self.current_account, self.region), {})
            found = [t for t, info in mine.items() if info["arn"] == arn]
            if not found:
                raise ResourceNotFoundException(f"Could not find source credentials with arn {arn}")
            del mine[found[0]]
        return ActionResult({"arn": arn})

    def way_to_github(self, source):
        """Why CodeBuild cannot reach GitHub for `source`, as (exception, message), or None."""
        if not source or source.get("type") != "GITHUB":
            return None
        auth = source.get("auth") or {}
        if auth.get("type") == "CODECONNECTIONS":
            with FAIL_LOCK:
                status = CONNECTIONS.get(auth.get("resource"))
            if status != "AVAILABLE":
                return (InvalidInputException,
                        f"Connection {auth.get('resource')} is not available (status: {status or 'not found'})")
            return None
        with FAIL_LOCK:
            has = "GITHUB" in credentials.get((self.current_account, self.region), {})
        return None if has else (InvalidInputException,
                                 "No Access token found, please visit AWS CodeBuild console to connect to GitHub")

    create_project = responses.CodeBuildResponse.create_project
    update_project = responses.CodeBuildResponse.update_project
    create_webhook = responses.CodeBuildResponse.create_webhook

    def strict_create_project(self):
        refused = way_to_github(self, self._get_param("source"))
        if refused:
            raise refused[0](refused[1])
        return create_project(self)

    def strict_update_project(self):
        refused = way_to_github(self, self._get_param("source"))
        if refused:
            raise refused[0](refused[1])
        return update_project(self)

    def strict_create_webhook(self):
        project = self.codebuild_backend.codebuild_projects.get(self._get_param("projectName"))
        source = project.project_metadata.get("source") if project is not None else None
        if way_to_github(self, source):
            raise ResourceNotFoundException("Could not find access token for server type github")
        return create_webhook(self)

    responses.CodeBuildResponse.import_source_credentials = import_source_credentials
    responses.CodeBuildResponse.list_source_credentials = list_source_credentials
    responses.CodeBuildResponse.delete_source_credentials = delete_source_credentials
    responses.CodeBuildResponse.create_project = strict_create_project
    responses.CodeBuildResponse.update_project = strict_update_project
    responses.CodeBuildResponse.create_webhook = strict_create_webhook


def patch_pagination():
    """The list operations reconcile calls, paged as AWS pages them (moto answers every list
    in one page, whatever the page size asked): ECR's `DescribeRepositories` and
    `DescribeImages` (`maxResults` 1 to 1000, `nextToken`,
    https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeRepositories.html),
    IAM's `ListRolePolicies` and `ListAttachedRolePolicies` (`MaxItems` 1 to 1000, `Marker`,
    `IsTruncated`, https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListRolePolicies.html).
    A page is never larger than the account's forced size, when a test set one.
    """
    from moto.core.responses import ActionResult
    from moto.ecr import responses as ecr_responses
    from moto.iam import responses as iam_responses

    def page(self, items, size, token):
        with FAIL_LOCK:
            forced = PAGE_SIZE.get(self.current_account)
        size = min(size, forced) if forced else size
        start = int(token) if token else 0
        chunk = items[start:start + size]
        more = start + size < len(items)
        return chunk, (str(start + size) if more else None)

    def ecr_paged(original, key):
        def paged(self):
            result = original(self).result
            size = int(self._get_param("maxResults") or 100)
            chunk, token = page(self, list(result.get(key, [])), size, self._get_param("nextToken"))
            result = dict(result, **{key: chunk})
            if token:
                result["nextToken"] = token
            return ActionResult(result)
        return paged

    def list_role_policies(self):
        names = self.backend.list_role_policies(self._get_param("RoleName"))
        chunk, marker = page(self, names, int(self._get_param("MaxItems") or 100), self._get_param("Marker"))
        result = {"PolicyNames": chunk, "IsTruncated": bool(marker)}
        if marker:
            result["Marker"] = marker
        return ActionResult(result)

    def list_attached_role_policies(self):
        policies, _ = self.backend.list_attached_role_policies(
            self._get_param("RoleName"), marker=None, max_items=1_000_000,
            path_prefix=self._get_param("PathPrefix", "/"))
        everything = [{"PolicyName": p.name, "PolicyArn": p.arn} for p in policies]
        chunk, marker = page(self, everything, int(self._get_param("MaxItems") or 100), self._get_param("Marker"))
        result = {"AttachedPolicies": chunk, "IsTruncated": bool(marker)}
        if marker:
            result["Marker"] = marker
        return ActionResult(result)

    ecr_responses.ECRResponse.describe_repositories = ecr_paged(
        ecr_responses.ECRResponse.describe_repositories, "repositories")
    ecr_responses.ECRResponse.describe_images = ecr_paged(ecr_responses.ECRResponse.describe_images, "imageDetails")
    iam_responses.IamResponse.list_role_policies = list_role_policies
    iam_responses.IamResponse.list_attached_role_policies = list_attached_role_policies


def patch_defaults():
    """Where moto 5.2.5 differs from AWS in a way a plan would see, behave as AWS does.

    - S3: a new bucket has Object Ownership `BucketOwnerEnforced` (ACLs disabled), AWS's default
      since April 2023; moto gives it none.
    - S3: `GetBucketVersioning` answers a `VersioningConfiguration`, as S3 does; moto's answer
      has a root element the SDK cannot parse.
    - ECR: `PutImageScanningConfiguration` with no `scanOnPush` (what the SDK sends for `false`)
      turns scanning off, as ECR reads a missing value; moto ignored the empty object, so a
      repository once scanned could never stop.
    - ECR: each pushed image gets a push time later than the one before, as pushes a second
      apart would: moto keeps whole seconds, so images pushed in one test second would tie, and
      which of them a count-based lifecycle rule keeps would be a coin toss.
    - S3: `CreateBucket` makes the bucket with the tags of its `CreateBucketConfiguration.Tags`,
      in the same call, as S3 does
      (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucketConfiguration.html);
      moto ignores them, so a bucket would be made untagged and tagged by no one.
    """
    from moto.ecr import models as ecr_models
    from moto.s3 import models as s3_models
    from moto.s3 import responses as s3_responses

    create_bucket = s3_models.S3Backend.create_bucket

    def create_bucket_owner_enforced(self, *args, **kwargs):
        bucket = create_bucket(self, *args, **kwargs)
        bucket.ownership_rule = bucket.ownership_rule or "BucketOwnerEnforced"
        return bucket

    s3_models.S3Backend.create_bucket = create_bucket_owner_enforced

    def get_versioning_as_s3_answers(self):
        status = self.backend.get_bucket_versioning(self.bucket_name)
        inner = f"<Status>{status}</Status>" if status else ""
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{inner}</VersioningConfiguration>'
        )
        return 200, {"Content-Type": "application/xml"}, body

    s3_responses.S3Response.get_bucket_versioning = get_versioning_as_s3_answers

    bucket_put = s3_responses.S3Response._bucket_response_put

    def bucket_put_with_its_tags(self, request, bucket_name, querystring):
        creating = not querystring
        existed = creating and bucket_name in self.backend.buckets
        answer = bucket_put(self, request, bucket_name, querystring)
        tags = gate.creation_tags(self.body) if creating and not existed else None
        if tags:
            self.backend.put_bucket_tagging(bucket_name, tags)
        return answer

    s3_responses.S3Response._bucket_response_put = bucket_put_with_its_tags

    put_scanning = ecr_models.ECRBackend.put_image_scanning_configuration

    def put_scanning_as_ecr_reads_it(self, registry_id, repository_name, image_scan_config):
        image_scan_config = dict(image_scan_config or {})
        image_scan_config.setdefault("scanOnPush", False)
        return put_scanning(self, registry_id, repository_name, image_scan_config)

    ecr_models.ECRBackend.put_image_scanning_configuration = put_scanning_as_ecr_reads_it

    image_init = ecr_models.Image.__init__
    last_push = [0]

    def image_pushed_after_the_last(self, *args, **kwargs):
        image_init(self, *args, **kwargs)
        with FAIL_LOCK:
            if PUSH_CLOCK.get(self.registry_id):
                # The demo's history: pushes at the times it set, a second apart.
                self.image_pushed_at = PUSH_CLOCK[self.registry_id]
                PUSH_CLOCK[self.registry_id] += 1
                return
        self.image_pushed_at = max(self.image_pushed_at, last_push[0] + 1)
        last_push[0] = self.image_pushed_at

    ecr_models.Image.__init__ = image_pushed_after_the_last


def patch_oidc_providers():
    """What moto 5.2.5's IAM lacks for GitHub's identity provider, as IAM does it:
    `AddClientIDToOpenIDConnectProvider` and `RemoveClientIDFromOpenIDConnectProvider`
    (https://docs.aws.amazon.com/IAM/latest/APIReference/API_AddClientIDToOpenIDConnectProvider.html:
    adding one already there, or removing one that is not, succeeds), and `ListRoles` paged with
    `MaxItems` and `Marker` like the other lists.
    """
    from moto.core.responses import ActionResult, EmptyResult
    from moto.iam import responses as iam_responses

    def add_client_id(self):
        provider = self.backend.get_open_id_connect_provider(self._get_param("OpenIDConnectProviderArn"))
        client_id = self._get_param("ClientID")
        if client_id not in provider.client_id_list:
            provider.client_id_list.append(client_id)
        return EmptyResult()

    def remove_client_id(self):
        provider = self.backend.get_open_id_connect_provider(self._get_param("OpenIDConnectProviderArn"))
        client_id = self._get_param("ClientID")
        if client_id in provider.client_id_list:
            provider.client_id_list.remove(client_id)
        return EmptyResult()

    iam_responses.IamResponse.add_client_id_to_open_id_connect_provider = add_client_id
    iam_responses.IamResponse.remove_client_id_from_open_id_connect_provider = remove_client_id


def patch_lookups():
    """Remembers three answers moto works out again on every request, each at a cost that grows
    with what the server holds: the account of an access key (moto walks every account's IAM
    backend, and the suite makes thousands of accounts, so late in a run this was the costliest
    part of a request), the names of moto's service modules (a directory listing), and a response
    class's method names. The answers are the same ones; only the work is not redone."""
    import functools

    import moto.backends
    import moto.core.responses
    import moto.iam.models
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.utilities.utils import PARTITION_NAMES

    walk = moto.iam.models.get_account_id_from
    accounts = {}

    def get_account_id_from(access_key):
        account = accounts.get(access_key)
        # A key deleted since is looked for again, as moto would.
        if account is not None and any(
            access_key in moto.iam.models.iam_backends[account][partition].access_keys for partition in PARTITION_NAMES
        ):
            return account
        account = walk(access_key)
        # An unknown key answers the default account; it may be made later, so that is not kept.
        if account != DEFAULT_ACCOUNT_ID:
            accounts[access_key] = account
        return account

    moto.iam.models.get_account_id_from = get_account_id_from
    modules = list(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: iter(modules)
    moto.core.responses.method_names_from_class = functools.lru_cache(maxsize=None)(
        moto.core.responses.method_names_from_class
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-with-parent", action="store_true", help="exit when stdin closes")
    parser.add_argument("--fail-create-project", type=int, default=0, metavar="N",
                        help="fail the next N CodeBuild CreateProject calls (any account) as IAM propagation does")
    args = parser.parse_args()
    FAIL_CREATE_PROJECT["*"] = [args.fail_create_project, "iam"]
    patch_codebuild()
    patch_source_credentials()
    patch_pagination()
    patch_defaults()
    patch_oidc_providers()
    patch_lookups()

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
