"""Loads an emulator account with the ROCm nightly's account as it stood on 2026-11-11.

That is what `.builders/codebuild-setup.sh` had made by then: every repository in desired.toml,
tagged as declared, each with its lifecycle policy written the way the script wrote it (pretty
printed, keys in its own order), except that
- `atom-wheel-cache` and `torchvision-wheel-cache` were added to the bake file after the script
  last ran and have no lifecycle policy at all (347 GB between them), and
- `pytorch-cache` still has the old age-based rule, `tagStatus any, sinceImagePushed 14 days`,
  which also expires the live nightly tag.

Credentials and endpoint come from the standard AWS environment (AWS_ENDPOINT_URL, ...); the
region from desired.toml.
"""

import argparse
import json
import tomllib

import boto3

NO_POLICY = {"atom-wheel-cache", "torchvision-wheel-cache"}
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
    args = parser.parse_args()
    with open(args.desired, "rb") as file:
        desired = tomllib.load(file)

    ecr = boto3.client("ecr", region_name=desired["region"])
    section = desired.get("ecr", {})
    defaults = section.get("defaults", {})
    policies = section.get("lifecycle_policies", {})
    for name, repository in sorted(section.get("repositories", {}).items()):
        tags = {**defaults.get("tags", {}), **repository.get("tags", {})}
        ecr.create_repository(
            repositoryName=name,
            imageTagMutability=repository.get("image_tag_mutability", defaults.get("image_tag_mutability", "MUTABLE")),
            imageScanningConfiguration={"scanOnPush": repository.get("scan_on_push", defaults.get("scan_on_push", False))},
            tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        )
        if name in NO_POLICY:
            continue
        policy = OLD_14_DAY_RULE if name in OLD_POLICY else policies[repository.get("lifecycle_policy", defaults.get("lifecycle_policy"))]
        ecr.put_lifecycle_policy(repositoryName=name, lifecyclePolicyText=script_style(policy))


if __name__ == "__main__":
    main()
