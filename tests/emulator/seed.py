"""Loads an emulator account with the ROCm nightly's account as it stood on 2026-11-11.

That is what `.builders/codebuild-setup.sh` had made by then, a shell script written before
reconcile existed, so nothing carries reconcile's mark (`reconcile:deployment`): every repository
in desired.toml, tagged as declared, each with its lifecycle policy written the way the script
wrote it (pretty printed, keys in its own order); the sccache bucket with its 30-day expiry
(written with a `Filter: {Prefix: ""}`) and the protections real S3 gives a new bucket; and the
service role with its trust and inline policy, pretty printed, statements in the script's order,
with no permissions boundary. Except that
- `atom-wheel-cache` and `torchvision-wheel-cache` were added to the bake file after the script
  last ran, and made by the nightly's `--ensure-ecr` as `aws ecr create-repository` makes them
  with its defaults (no tags, mutable, no scan on push): they have no lifecycle policy at all
  (347 GB between them), and the role's policy does not name them;
- `pytorch-cache` still has the old age-based rule, `tagStatus any, sinceImagePushed 14 days`,
  which also expires the live nightly tag;
- the role lacks `ecr:CreateRepository`, which the nightly's `--ensure-ecr` needs.
The runner project and its webhook are as declared, the webhook's filters written in another
order and its EVENT pattern with a stray space (the console's way), and CodeBuild reaches GitHub
with the account's token (imported as a source credential).

With `--history` (the demo), the account also holds what it had stored and built by then: the
registry's 738 GB, 347 GB of it untagged images in the two cache repositories without a policy;
a week of nightly builds on xlarge (warm ones of 34 minutes, a cold one of 54m 24s, and two
quiet days the gate skipped); and the compiler cache's daily size in CloudWatch.

Credentials and endpoint come from the standard AWS environment (AWS_ENDPOINT_URL, ...); the
region from desired.toml.
"""

import argparse
import hashlib
import json
import os
import time
import tomllib
import urllib.request

import boto3

NO_POLICY = {"atom-wheel-cache", "torchvision-wheel-cache"}
ADDED_AFTER_THE_SCRIPT_RAN = NO_POLICY
OLD_POLICY = {"pytorch-cache"}

OLD_14_DAY_RULE = {
    "rules": [
        {
            "rulePriority": 1,
            "description": "Expire images older than 14 days",
            "selection": {
                "tagStatus": "any",
                "countType": "sinceImagePushed",
                "countUnit": "days",
                "countNumber": 14,
            },
            "action": {"type": "expire"},
        }
    ]
}


def script_style(policy):
    """The old script's formatting: pretty, `action` before `selection`, selection keys reversed."""
    rules = []
    for rule in policy["rules"]:
        written = {"action": rule["action"], "rulePriority": rule["rulePriority"]}
        if "description" in rule:
            written["description"] = rule["description"]
        written["selection"] = dict(reversed(list(rule["selection"].items())))
        rules.append(written)
    return json.dumps({"rules": rules}, indent=4)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--desired", required=True)
    parser.add_argument("--history", action="store_true", help="also images, a week of builds, the cache's size")
    args = parser.parse_args()
    with open(args.desired, "rb") as file:
        desired = tomllib.load(file)

    ecr = boto3.client("ecr", region_name=desired["region"])
    section = desired.get("ecr", {})
    defaults = section.get("defaults", {})
    policies = section.get("lifecycle_policies", {})
    for name, repository in sorted(section.get("repositories", {}).items()):
        if name in ADDED_AFTER_THE_SCRIPT_RAN:
            # `aws ecr create-repository --repository-name NAME`, nothing else.
            ecr.create_repository(repositoryName=name)
            continue
        tags = {**defaults.get("tags", {}), **repository.get("tags", {})}
        ecr.create_repository(
            repositoryName=name,
            imageTagMutability=repository.get("image_tag_mutability", defaults.get("image_tag_mutability", "MUTABLE")),
            imageScanningConfiguration={"scanOnPush": repository.get("scan_on_push", defaults.get("scan_on_push", False))},
            tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        )
        policy = OLD_14_DAY_RULE if name in OLD_POLICY else policies[repository.get("lifecycle_policy", defaults.get("lifecycle_policy"))]
        ecr.put_lifecycle_policy(repositoryName=name, lifecyclePolicyText=script_style(policy))

    account = boto3.client("sts", region_name=desired["region"]).get_caller_identity()["Account"]
    region = desired["region"]
    for bucket in desired.get("s3", {}).get("buckets", {}).values():
        seed_bucket(bucket, account, region)
    repositories = sorted(set(section.get("repositories", {})) - ADDED_AFTER_THE_SCRIPT_RAN)
    buckets = [b["name"].replace("${account_id}", account).replace("${region}", region) for b in desired.get("s3", {}).get("buckets", {}).values()]
    roles = desired.get("iam", {}).get("roles", {})
    projects = desired.get("codebuild", {}).get("projects", {}).values()
    for key, role in roles.items():
        log_groups = [f"/aws/codebuild/{p['name']}" for p in projects if p["service_role"] == key]
        seed_role(role, account, region, repositories, buckets, log_groups)
    for project in desired.get("codebuild", {}).get("projects", {}).values():
        seed_project(project, account, region, roles)
    if args.history:
        seed_history(desired, account, region, buckets)


# AWS's billing GB (2^30 bytes): the 738 GB the account was billed for, at $0.10, is $73.80.
GB = 1 << 30
DAY = 86_400


def push(ecr, repository, size, tag, seed):
    """An image of `size` bytes, as the emulator sizes it: its manifest's config size."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": size,
                   "digest": f"sha256:{digest}"},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": size,
                    "digest": f"sha256:{hashlib.sha256((seed + 'l').encode()).hexdigest()}"}],
    }
    arguments = {"repositoryName": repository, "imageManifest": json.dumps(manifest)}
    if tag:
        arguments["imageTag"] = tag
    ecr.put_image(**arguments)


def control(path, body=None):
    request = urllib.request.Request(os.environ["AWS_ENDPOINT_URL"] + path, method="POST",
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request).read()


def seed_history(desired, account, region, buckets):
    ecr = boto3.client("ecr", region_name=region)
    repositories = sorted(desired.get("ecr", {}).get("repositories", {}))
    today = int(time.time()) // DAY * DAY
    # The two cache repositories nobody gave a policy: an untagged image a night for 20 nights,
    # each push orphaning the one before, 347 GB between them.
    for n in range(20):
        control(f"/_reconcile/ecr/push-time?account={account}&at={today - (19 - n) * DAY + 3 * 3600}")
        for name, each in (("atom-wheel-cache", 9 * GB), ("torchvision-wheel-cache", 835 * GB // 100)):
            push(ecr, name, each, None, f"{name}-{n}")
    # The rest, 391 GB: two untagged predecessors and the live nightly tag in each, pushed over
    # the last three nights.
    others = [r for r in repositories if r not in NO_POLICY]
    per_repository = 391 * GB // len(others)
    for days_ago in (3, 2, 1):
        control(f"/_reconcile/ecr/push-time?account={account}&at={today - days_ago * DAY + 3 * 3600}")
        for name in others:
            if days_ago > 1:
                push(ecr, name, per_repository // 8, None, f"{name}-{days_ago}")
            else:
                push(ecr, name, per_repository - 2 * (per_repository // 8), "nightly", f"{name}-nightly")
    control(f"/_reconcile/ecr/push-time?account={account}&at=0")
    # A week of nightly builds at 02:17: warm, warm, skipped, skipped (main had not moved), cold,
    # warm, and tonight's.
    nightly = 2 * 3600 + 17 * 60
    builds = []
    for days_ago, seconds in ((6, 34 * 60), (5, 34 * 60), (2, 54 * 60 + 24), (1, 34 * 60), (0, 34 * 60)):
        start = today - days_ago * DAY + nightly
        if start + seconds < time.time():
            builds.append({"project": "rocm-bake", "start": start, "end": start + seconds,
                           "computeType": "BUILD_GENERAL1_XLARGE"})
    control(f"/_reconcile/codebuild/builds?account={account}&region={region}", builds)
    # The compiler cache, as CloudWatch reports it: a day's size the day after.
    for days_ago in range(1, 8):
        day = time.strftime("%Y-%m-%d", time.gmtime(today - days_ago * DAY))
        for bucket in buckets:
            size = (52 - days_ago) * GB
            control(f"/_reconcile/cloudwatch/bucket-size?account={account}&region={region}&bucket={bucket}"
                    f"&storage=StandardStorage&day={day}&bytes={size}")


def seed_project(project, account, region, roles):
    codebuild = boto3.client("codebuild", region_name=region)
    # The script's first step: CodeBuild reaches GitHub with the account's token.
    codebuild.import_source_credentials(token="ghp_the_setup_scripts_token", serverType="GITHUB",
                                        authType="PERSONAL_ACCESS_TOKEN", shouldOverwrite=True)
    arguments = {
        "name": project["name"],
        "description": project.get("description", ""),
        "source": {"type": "GITHUB", "location": project["source_location"]},
        "artifacts": {"type": "NO_ARTIFACTS"},
        "environment": {
            "type": project.get("environment_type", "LINUX_CONTAINER"),
            "computeType": project.get("compute_type", "BUILD_GENERAL1_XLARGE"),
            "image": project.get("image", "aws/codebuild/amazonlinux-x86_64-standard:5.0"),
            "privilegedMode": True,
            "imagePullCredentialsType": "CODEBUILD",
        },
        "serviceRole": f"arn:aws:iam::{account}:role/{roles[project['service_role']]['name']}",
        "timeoutInMinutes": project["build_timeout_hours"] * 60,
        "logsConfig": {"cloudWatchLogs": {"status": "ENABLED", "groupName": f"/aws/codebuild/{project['name']}"}},
        "tags": [{"key": k, "value": v} for k, v in project.get("tags", {}).items()],
    }
    if "queued_timeout_minutes" in project:
        arguments["queuedTimeoutInMinutes"] = project["queued_timeout_minutes"]
    codebuild.create_project(**arguments)
    webhook = project.get("webhook")
    if webhook:
        groups = []
        for group in reversed(webhook["filter_groups"]):
            filters = []
            for webhook_filter in reversed(group):
                pattern = webhook_filter["pattern"]
                if webhook_filter["type"] == "EVENT":
                    pattern = " " + pattern
                filters.append({"type": webhook_filter["type"], "pattern": pattern})
            groups.append(filters)
        codebuild.create_webhook(projectName=project["name"], filterGroups=groups, buildType=webhook.get("build_type", "BUILD"))


def seed_bucket(bucket, account, region):
    s3 = boto3.client("s3", region_name=region)
    name = bucket["name"].replace("${account_id}", account).replace("${region}", region)
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    # What real S3 turns on for every new bucket.
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={k: True for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")},
    )
    s3.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
    )
    if bucket.get("tags"):
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in bucket["tags"].items()]})
    rules = [
        {
            "ID": rule["id"],
            "Status": rule.get("status", "Enabled"),
            "Filter": {"Prefix": rule.get("prefix", "")},
            "Expiration": {"Days": rule["expiration_days"]},
        }
        for rule in bucket.get("lifecycle_rules", [])
    ]
    if rules:
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})


def seed_role(role, account, region, repositories, buckets, log_groups):
    iam = boto3.client("iam", region_name=region)
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": role["trusted_services"][0]}, "Action": "sts:AssumeRole"}],
    }
    iam.create_role(
        RoleName=role["name"],
        AssumeRolePolicyDocument=json.dumps(trust, indent=2),
        Description=role.get("description", ""),
        Tags=[{"Key": k, "Value": v} for k, v in role.get("tags", {}).items()],
    )
    arn = lambda name: f"arn:aws:ecr:{region}:{account}:repository/{name}"
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "CacheBucket", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"], "Resource": [f"arn:aws:s3:::{b}" for b in buckets]},
            {"Sid": "CacheObjects", "Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"], "Resource": [f"arn:aws:s3:::{b}/*" for b in buckets]},
            {
                "Sid": "EcrPushPull",
                "Effect": "Allow",
                # No ecr:CreateRepository: the script predates --ensure-ecr.
                "Action": [
                    "ecr:PutImage", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart", "ecr:CompleteLayerUpload",
                    "ecr:BatchGetImage", "ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer",
                    "ecr:DescribeImages", "ecr:DescribeRepositories", "ecr:ListImages",
                ],
                "Resource": [arn(name) for name in repositories],
            },
            {"Sid": "EcrLogin", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        ],
    }
    if log_groups:
        group_arn = lambda group: f"arn:aws:logs:{region}:{account}:log-group:{group}"
        policy["Statement"].insert(0, {
            "Sid": "BuildLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:CreateLogGroup"],
            "Resource": [arn for group in log_groups for arn in (group_arn(group) + ":*", group_arn(group))],
        })
    iam.put_role_policy(RoleName=role["name"], PolicyName=role.get("policy_name", role["name"]), PolicyDocument=json.dumps(policy, indent=2))


if __name__ == "__main__":
    main()
