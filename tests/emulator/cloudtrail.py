"""A CloudTrail event history for the emulator, which moto 5.2.5 lacks: every write the emulator
serves is recorded as a management event, and `LookupEvents` answers from them as CloudTrail's
API reference documents it
(https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html):

- exactly one `LookupAttributes` item (`EventName`, `EventSource`, `Username`, `ResourceName`,
  `AccessKeyId`, `EventId`, `ReadOnly`, `ResourceType`), else `InvalidLookupAttributesException`;
- `StartTime` and `EndTime`, newest events first, `MaxResults` 1 to 50 (default 50), `NextToken`
  only with the same parameters;
- 2 requests a second per account and region, above which `ThrottlingException`;
- each event: `EventId`, `EventName`, `ReadOnly`, `AccessKeyId`, `EventTime`, `EventSource`,
  `Username`, `Resources`, and `CloudTrailEvent`, the record as a JSON string (the record's fields:
  https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html):
  `userIdentity` (for an assumed role, `type` AssumedRole, its `arn`, and `sessionContext.sessionIssuer`
  naming the role), `eventTime`, `eventSource`, `eventName`, `awsRegion`, `sourceIPAddress`,
  `userAgent`, `requestParameters` (the request's own parameters, as the service's API names
  them; S3's with `bucketName`), `eventID`, `readOnly`, `managementEvent`.

IAM is global: its events are kept in us-east-1, whatever region the request was signed for.
Test controls: `POST /_reconcile/cloudtrail/throttle?account=ID&region=R&count=N` throttles the
next N lookups whatever their rate; `POST /_reconcile/cloudtrail/event?account=ID&region=R`
with a JSON event (`eventName`, `eventSource`, `eventTime`, `requestParameters`, `arn`,
`errorCode`, `resources`, `recipientAccountId`, `awsRegion`, ...) records one as if a request had
made it (for an old event, or two hundred, or a failed call). A write the emulator refuses (the
policy gate, a denial a test set) is recorded with its `errorCode` and no resources, as
CloudTrail records a denied call; `ResourceName` lookups find an event by the resources it names
(S3 buckets and IAM roles).
"""

import datetime
import json
import threading
import time
import uuid
from urllib.parse import parse_qs

LOCK = threading.Lock()
# (account, region) -> [event record (dict)], oldest first
EVENTS = {}
# (account, region) -> [times of the last lookups]
LOOKUPS = {}
# (account, region) -> how many lookups to throttle next
THROTTLE = {}

THROTTLE_PATH = "/_reconcile/cloudtrail/throttle"
EVENT_PATH = "/_reconcile/cloudtrail/event"
ATTRIBUTES = {"EventName": "eventName", "EventSource": "eventSource", "Username": "username",
              "ResourceName": "resourceName", "AccessKeyId": "accessKeyId", "EventId": "eventID",
              "ReadOnly": "readOnly", "ResourceType": "resourceType"}
SOURCES = {"ecr": "ecr.amazonaws.com", "s3": "s3.amazonaws.com", "iam": "iam.amazonaws.com",
           "codebuild": "codebuild.amazonaws.com", "sts": "sts.amazonaws.com"}


def respond(start_response, status, body, content_type="application/x-amz-json-1.1"):
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]


def error(start_response, code, message, status="400 Bad Request"):
    return respond(start_response, status, json.dumps({"__type": code, "message": message}).encode())


def principal(access_key, account, region):
    """`userIdentity` for an access key, as CloudTrail writes it: the caller moto knows it as."""
    from moto.sts.models import sts_backends

    try:
        _, arn, account = sts_backends[account]["global"].get_caller_identity(access_key, region)
    except Exception:  # an unsigned or unknown key: CloudTrail would name what it could
        arn = f"arn:aws:sts::{account}:user/unknown"
    identity = {"type": "IAMUser", "arn": arn, "accountId": account, "accessKeyId": access_key}
    if ":assumed-role/" in arn:
        role, session = arn.split(":assumed-role/", 1)[1].split("/", 1)
        identity["type"] = "AssumedRole"
        identity["sessionContext"] = {
            "sessionIssuer": {"type": "Role", "arn": f"arn:aws:iam::{account}:role/{role}", "userName": role,
                              "accountId": account},
            "attributes": {"creationDate": datetime.datetime.now(datetime.timezone.utc).isoformat()},
        }
    return identity


def request_parameters(environ, entry, body):
    """A request's parameters as CloudTrail logs them."""
    if entry["service"] == "s3":
        parts = entry["path"].strip("/").split("/", 1)
        parameters = {"bucketName": parts[0], "Host": environ.get("HTTP_HOST", "")}
        if len(parts) > 1:
            parameters["key"] = parts[1]
        for key in parse_qs(entry["query"], keep_blank_values=True):
            parameters[key] = ""
        return parameters
    if environ.get("HTTP_X_AMZ_TARGET"):
        try:
            parameters = json.loads(body or b"{}")
        except ValueError:
            parameters = {}
        return parameters if isinstance(parameters, dict) else {}
    form = parse_qs(body.decode("utf-8", "replace"))
    # The query protocol's parameters, with CloudTrail's lower-case first letter (`roleName`).
    return {k[0].lower() + k[1:]: v[0] for k, v in form.items() if k not in ("Action", "Version")}


def resources(entry, parameters):
    """The resources CloudTrail indexes a successful event under (`ResourceName` lookups find it
    by them): S3's bucket, IAM's role, and ECR's repository and CodeBuild's project only when the
    request names them by name (not reliably: a `resourceArn` call, `TagResource`, is not
    indexed here); a failed call names none."""
    kinds = {"s3": ("bucketName", "AWS::S3::Bucket"), "iam": ("roleName", "AWS::IAM::Role"),
             "ecr": ("repositoryName", "AWS::ECR::Repository"), "codebuild": ("name", "AWS::CodeBuild::Project")}
    key, kind = kinds.get(entry["service"], (None, None))
    name = parameters.get(key) if key else None
    if entry["service"] == "codebuild":
        name = name or parameters.get("projectName")
    return [{"ResourceType": kind, "ResourceName": name}] if isinstance(name, str) and name else []


def record(environ, entry, account, body, failure=None):
    """Keeps a write as CloudTrail would: reads and the emulator's own requests are not events.
    A write that failed is kept too, with its `errorCode` and `errorMessage` (`failure`, a pair)
    and no resources, as CloudTrail keeps a denied call."""
    if not entry["action"] and entry["service"] != "s3":
        return
    if entry["service"] not in SOURCES or entry["service"] == "sts":
        return
    if entry["service"] == "s3":
        if entry["method"] in ("GET", "HEAD"):
            return
        name = s3_event_name(entry)
    else:
        name = entry["action"]
        if any(name.startswith(read) for read in ("Get", "List", "Describe", "BatchGet", "Head")):
            return
    region = "us-east-1" if entry["service"] == "iam" else entry["region"]
    now = datetime.datetime.now(datetime.timezone.utc)
    parameters = request_parameters(environ, entry, body)
    event = {
        "eventVersion": "1.09",
        "userIdentity": principal(entry["access_key"], account, region),
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "_at": time.time(),
        "eventSource": SOURCES[entry["service"]],
        "eventName": name,
        "awsRegion": region,
        "sourceIPAddress": environ.get("REMOTE_ADDR", "127.0.0.1"),
        "userAgent": environ.get("HTTP_USER_AGENT", ""),
        "requestParameters": parameters,
        "responseElements": None,
        "eventID": str(uuid.uuid4()),
        "readOnly": False,
        "eventType": "AwsApiCall",
        "managementEvent": True,
        "recipientAccountId": account,
        "_resources": [] if failure else resources(entry, parameters),
    }
    if failure:
        event["errorCode"], event["errorMessage"] = failure
    with LOCK:
        EVENTS.setdefault((account, region), []).append(event)


def s3_event_name(entry):
    """S3's REST calls by the name CloudTrail gives them."""
    setting = entry["query"].split("&")[0].split("=")[0]
    is_object = "/" in entry["path"].strip("/")
    method = entry["method"]
    if is_object:
        return {"PUT": "PutObject", "DELETE": "DeleteObject", "POST": "PostObject"}.get(method, method)
    names = {
        ("PUT", ""): "CreateBucket", ("DELETE", ""): "DeleteBucket",
        ("PUT", "policy"): "PutBucketPolicy", ("DELETE", "policy"): "DeleteBucketPolicy",
        ("PUT", "versioning"): "PutBucketVersioning", ("PUT", "acl"): "PutBucketAcl",
        ("PUT", "publicAccessBlock"): "PutBucketPublicAccessBlock",
        ("DELETE", "publicAccessBlock"): "DeleteBucketPublicAccessBlock",
        ("PUT", "encryption"): "PutBucketEncryption", ("DELETE", "encryption"): "DeleteBucketEncryption",
        ("PUT", "ownershipControls"): "PutBucketOwnershipControls",
        ("DELETE", "ownershipControls"): "DeleteBucketOwnershipControls",
        ("PUT", "tagging"): "PutBucketTagging", ("DELETE", "tagging"): "DeleteBucketTagging",
        ("PUT", "replication"): "PutBucketReplication", ("DELETE", "replication"): "DeleteBucketReplication",
        ("PUT", "website"): "PutBucketWebsite", ("DELETE", "website"): "DeleteBucketWebsite",
        ("PUT", "logging"): "PutBucketLogging",
        ("PUT", "lifecycle"): "PutBucketLifecycle", ("DELETE", "lifecycle"): "DeleteBucketLifecycle",
    }
    return names.get((method, setting), f"{method}Bucket{setting[:1].upper()}{setting[1:]}")


def control(path, environ, start_response):
    if path == THROTTLE_PATH:
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        with LOCK:
            THROTTLE[(query["account"], query["region"])] = int(query["count"])
        return respond(start_response, "204 No Content", b"")
    if path == EVENT_PATH:
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        length = int(environ.get("CONTENT_LENGTH") or 0)
        given = json.loads(environ["wsgi.input"].read(length) if length else b"{}")
        account, region = query["account"], query["region"]
        made = [given_event(one, account, region) for one in (given if isinstance(given, list) else [given])]
        with LOCK:
            events = EVENTS.setdefault((account, region), [])
            events.extend(made)
            events.sort(key=lambda e: e["_at"])
        return respond(start_response, "204 No Content", b"")
    return None


def given_event(given, account, region):
    """An event a test gives, as CloudTrail would have recorded it."""
    at = datetime.datetime.fromisoformat(given["eventTime"].replace("Z", "+00:00"))
    identity = {"type": "IAMUser", "arn": given.get("arn", f"arn:aws:iam::{account}:user/someone"),
                "accountId": account, "accessKeyId": given.get("accessKeyId", "AKIAEXAMPLE")}
    event = {
        "eventVersion": "1.09", "userIdentity": identity, "eventTime": given["eventTime"],
        "_at": at.timestamp(), "eventSource": given["eventSource"], "eventName": given["eventName"],
        "awsRegion": given.get("awsRegion", region), "sourceIPAddress": given.get("sourceIPAddress", "203.0.113.7"),
        "userAgent": given.get("userAgent", "console.amazonaws.com"),
        "requestParameters": given.get("requestParameters", {}), "responseElements": None,
        "eventID": given.get("eventID", str(uuid.uuid4())), "readOnly": False, "eventType": "AwsApiCall",
        "managementEvent": True, "recipientAccountId": given.get("recipientAccountId", account),
        "_resources": given.get("resources", [] if given.get("errorCode") else resources(
            {"service": given["eventSource"].split(".")[0]}, given.get("requestParameters", {}))),
    }
    if given.get("errorCode"):
        event["errorCode"] = given["errorCode"]
        event["errorMessage"] = given.get("errorMessage", "")
    return event


def lookup_events(environ, start_response, account, region):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    request = json.loads(environ["wsgi.input"].read(length) if length else b"{}")
    now = time.time()
    with LOCK:
        recent = [t for t in LOOKUPS.get((account, region), []) if now - t < 1.0]
        forced = THROTTLE.get((account, region), 0)
        if forced > 0:
            THROTTLE[(account, region)] = forced - 1
            throttled = True
        elif len(recent) >= 2:
            throttled = True
        else:
            recent.append(now)
            throttled = False
        LOOKUPS[(account, region)] = recent
    if throttled:
        return error(start_response, "ThrottlingException", "Rate exceeded")
    attributes = request.get("LookupAttributes") or []
    if len(attributes) != 1:
        return error(start_response, "InvalidLookupAttributesException",
                     "You cannot specify more than one lookup attribute, or none")
    key, value = attributes[0].get("AttributeKey"), attributes[0].get("AttributeValue")
    if key not in ATTRIBUTES:
        return error(start_response, "InvalidLookupAttributesException", f"Unknown lookup attribute {key}")
    size = int(request.get("MaxResults") or 50)
    if not 1 <= size <= 50:
        return error(start_response, "InvalidMaxResultsException", "MaxResults must be 1 to 50")
    start = float(request.get("StartTime") or 0)
    end = float(request.get("EndTime") or now + 1)
    with LOCK:
        events = list(reversed(EVENTS.get((account, region), [])))

    def attribute_of(event):
        if key == "Username":
            identity = event["userIdentity"]
            return identity.get("sessionContext", {}).get("sessionIssuer", {}).get("userName") or \
                identity["arn"].rsplit("/", 1)[-1]
        if key == "AccessKeyId":
            return event["userIdentity"].get("accessKeyId")
        if key == "ReadOnly":
            return "false"
        return event.get(ATTRIBUTES[key])

    def matches(event):
        if key == "ResourceName":
            return any(r.get("ResourceName") == value for r in event["_resources"])
        return attribute_of(event) == value

    matching = [e for e in events if start <= e["_at"] <= end and matches(e)]
    token = request.get("NextToken")
    offset = 0
    if token:
        given = json.loads(token)
        if given["query"] != [key, value, start, end]:
            return error(start_response, "InvalidNextTokenException", "The token is not for these parameters")
        offset = given["offset"]
    page = matching[offset:offset + size]
    answer = {"Events": [{
        "EventId": e["eventID"], "EventName": e["eventName"], "ReadOnly": "false",
        "AccessKeyId": e["userIdentity"].get("accessKeyId"), "EventTime": e["_at"],
        "EventSource": e["eventSource"], "Username": attribute_of_username(e), "Resources": e["_resources"],
        "CloudTrailEvent": json.dumps({k: v for k, v in e.items() if not k.startswith("_")}),
    } for e in page]}
    if offset + size < len(matching):
        answer["NextToken"] = json.dumps({"query": [key, value, start, end], "offset": offset + size})
    return respond(start_response, "200 OK", json.dumps(answer).encode())


def attribute_of_username(event):
    identity = event["userIdentity"]
    return identity.get("sessionContext", {}).get("sessionIssuer", {}).get("userName") or \
        identity["arn"].rsplit("/", 1)[-1]
