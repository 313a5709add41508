"""What a night's cost is read from, served as AWS serves it, where moto 5.2.5 cannot:

- CodeBuild builds with the start and end times and compute types a test gives
  (`POST /_reconcile/codebuild/builds?account=ID&region=R`, a JSON list of
  `{"project", "start", "end", "computeType", "status"}`, times in epoch seconds, `end` null for a
  build still running): moto makes up random ones. `ListBuildsForProject` answers their ids newest
  first, 100 a page, and refuses `sortOrder` past 100 builds, as the botocore model documents
  (https://docs.aws.amazon.com/codebuild/latest/APIReference/API_ListBuildsForProject.html);
  `BatchGetBuilds` takes 1 to 100 ids
  (https://docs.aws.amazon.com/codebuild/latest/APIReference/API_BatchGetBuilds.html).
- The Price List API's `GetProducts` (moto has no `pricing` service), from
  `price-list-codebuild.json`, products shaped as the real answer: `PriceList` is a list of JSON
  strings, `TERM_MATCH` filters on a product attribute, `MaxResults`/`NextToken`
  (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html).
- CloudWatch's `ListMetrics` and `GetMetricStatistics` in the Smithy RPC v2 CBOR protocol the
  Rust SDK speaks (moto answers only the query protocol), for S3's daily storage metric
  `BucketSizeBytes` by `StorageType` (https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html):
  `POST /_reconcile/cloudwatch/bucket-size?account=ID&region=R&bucket=B&storage=StandardStorage&day=YYYY-MM-DD&bytes=N`.
  The protocol: https://smithy.io/2.0/additional-specs/protocols/smithy-rpc-v2.html.
"""

import datetime
import json
import os
import threading
import uuid
from urllib.parse import parse_qs

import cbor2

LOCK = threading.Lock()
# (account, region) -> [build]
BUILDS = {}
# (account, region, bucket, storage type) -> {day (date): bytes}
BUCKET_SIZES = {}

BUILDS_PATH = "/_reconcile/codebuild/builds"
BUCKET_SIZE_PATH = "/_reconcile/cloudwatch/bucket-size"
CBOR_PREFIX = "/service/GraniteServiceVersion20100801/operation/"
PRICE_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "price-list-codebuild.json")


def respond(start_response, status, body, content_type="application/json", headers=()):
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers])
    return [body]


def query_of(environ):
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}


def body_of(environ):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return environ["wsgi.input"].read(length) if length else b""


def control(path, environ, start_response):
    """The launcher's own endpoints for seeding what is billed; `None` for any other path."""
    if path == BUILDS_PATH:
        query = query_of(environ)
        seeded = json.loads(body_of(environ) or b"[]")
        with LOCK:
            builds = BUILDS.setdefault((query["account"], query["region"]), [])
            for build in seeded:
                project = build["project"]
                build_id = f"{project}:{uuid.uuid4()}"
                builds.append({
                    "id": build_id,
                    "arn": f"arn:aws:codebuild:{query['region']}:{query['account']}:build/{build_id}",
                    "projectName": project,
                    "startTime": float(build["start"]),
                    "endTime": None if build.get("end") is None else float(build["end"]),
                    "buildStatus": build.get("status") or ("IN_PROGRESS" if build.get("end") is None else "SUCCEEDED"),
                    "environment": {
                        "type": "LINUX_CONTAINER",
                        "image": "aws/codebuild/amazonlinux-x86_64-standard:5.0",
                        "computeType": build["computeType"],
                    },
                })
            builds.sort(key=lambda b: b["startTime"])
        return respond(start_response, "204 No Content", b"")
    if path == BUCKET_SIZE_PATH:
        query = query_of(environ)
        day = datetime.date.fromisoformat(query["day"])
        key = (query["account"], query["region"], query["bucket"], query.get("storage", "StandardStorage"))
        with LOCK:
            BUCKET_SIZES.setdefault(key, {})[day] = int(query["bytes"])
        return respond(start_response, "204 No Content", b"")
    return None


def json_error(start_response, code, message, status="400 Bad Request"):
    body = json.dumps({"__type": code, "message": message}).encode()
    return respond(start_response, status, body, "application/x-amz-json-1.1")


def serve(environ, entry, start_response, account, region):
    """Answers a request this module stands in for; `None` for any other."""
    path = environ.get("PATH_INFO", "")
    if path.startswith(CBOR_PREFIX):
        return cloudwatch(path[len(CBOR_PREFIX):], environ, start_response, account, region)
    if entry["service"] == "pricing":
        return pricing(entry["action"], environ, start_response)
    if entry["service"] == "codebuild" and entry["action"] in ("ListBuildsForProject", "BatchGetBuilds"):
        return builds(entry["action"], environ, start_response, account, region)
    return None


def builds(action, environ, start_response, account, region):
    request = json.loads(body_of(environ) or b"{}")
    with LOCK:
        mine = list(BUILDS.get((account, region), []))
    if action == "ListBuildsForProject":
        project = request.get("projectName")
        ids = [b["id"] for b in reversed(mine) if b["projectName"] == project]
        if request.get("sortOrder") == "ASCENDING":
            ids.reverse()
        if request.get("sortOrder") and len(ids) > 100:
            return json_error(start_response, "InvalidInputException",
                              "sortOrder cannot be used with more than 100 builds in the project")
        start = int(request.get("nextToken") or 0)
        page = ids[start:start + 100]
        answer = {"ids": page}
        if start + 100 < len(ids):
            answer["nextToken"] = str(start + 100)
        return respond(start_response, "200 OK", json.dumps(answer).encode(), "application/x-amz-json-1.1")
    ids = request.get("ids") or []
    if not 1 <= len(ids) <= 100:
        return json_error(start_response, "InvalidInputException", "ids must hold 1 to 100 build ids")
    by_id = {b["id"]: b for b in mine}
    found = [{k: v for k, v in by_id[i].items() if v is not None} for i in ids if i in by_id]
    missing = [i for i in ids if i not in by_id]
    body = json.dumps({"builds": found, "buildsNotFound": missing}).encode()
    return respond(start_response, "200 OK", body, "application/x-amz-json-1.1")


def pricing(action, environ, start_response):
    if action != "GetProducts":
        return json_error(start_response, "InvalidParameterException", f"the stand-in does not serve {action}")
    request = json.loads(body_of(environ) or b"{}")
    with open(PRICE_LIST) as file:
        products = json.load(file)["products"]
    matching = [p for p in products if p["serviceCode"] == request.get("ServiceCode")]
    for term in request.get("Filters") or []:
        if term.get("Type") != "TERM_MATCH":
            return json_error(start_response, "InvalidParameterException", f"unknown filter type {term.get('Type')}")
        matching = [p for p in matching if p["product"]["attributes"].get(term["Field"]) == term["Value"]]
    size = int(request.get("MaxResults") or 100)
    start = int(request.get("NextToken") or 0)
    answer = {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in matching[start:start + size]]}
    if start + size < len(matching):
        answer["NextToken"] = str(start + size)
    return respond(start_response, "200 OK", json.dumps(answer).encode(), "application/x-amz-json-1.1")


def cloudwatch(operation, environ, start_response, account, region):
    request = cbor2.loads(body_of(environ) or cbor2.dumps({}))
    dimensions = {d["Name"]: d["Value"] for d in request.get("Dimensions") or []}
    if operation == "ListMetrics":
        with LOCK:
            keys = [k for k in BUCKET_SIZES if k[:2] == (account, region)]
        metrics = []
        if request.get("Namespace") in (None, "AWS/S3") and request.get("MetricName") in (None, "BucketSizeBytes"):
            for _, _, bucket, storage in sorted(keys):
                if dimensions.get("BucketName", bucket) != bucket:
                    continue
                metrics.append({
                    "Namespace": "AWS/S3",
                    "MetricName": "BucketSizeBytes",
                    "Dimensions": [{"Name": "BucketName", "Value": bucket}, {"Name": "StorageType", "Value": storage}],
                })
        return cbor_answer(start_response, {"Metrics": metrics})
    if operation == "GetMetricStatistics":
        key = (account, region, dimensions.get("BucketName"), dimensions.get("StorageType"))
        start, end = request["StartTime"], request["EndTime"]
        with LOCK:
            days = dict(BUCKET_SIZES.get(key, {}))
        datapoints = []
        for day, size in sorted(days.items()):
            at = datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.timezone.utc)
            if start <= at < end:
                datapoints.append({"Timestamp": at, "Average": float(size), "Unit": "Bytes"})
        return cbor_answer(start_response, {"Label": "BucketSizeBytes", "Datapoints": datapoints})
    return cbor_answer(start_response, {"__type": "InvalidAction", "message": operation}, "400 Bad Request")


def cbor_answer(start_response, value, status="200 OK"):
    body = cbor2.dumps(value, datetime_as_timestamp=True, timezone=datetime.timezone.utc)
    return respond(start_response, status, body, "application/cbor", [("smithy-protocol", "rpc-v2-cbor")])
