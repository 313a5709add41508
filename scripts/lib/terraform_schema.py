"""reconcile's terraform-json views beside the AWS provider's own schema (what `terraform
providers schema -json` prints), for scripts/terraform-side-by-side.sh.

    python terraform_schema.py SCHEMA VIEW...

Errors (exit 1): an argument or attribute a view writes of an AWS resource that its type's
schema lacks (a nested block is a list of objects, checked inside), and a key of `after_unknown`
the schema does not compute. Notes: the schema's arguments and attributes the views leave out of
every instance of a type, which docs/terraform-json.md accounts for.
"""

import json
import sys

PROVIDER = "registry.terraform.io/hashicorp/aws"


def check(values, block, path, errors):
    attributes = block.get("attributes", {})
    blocks = block.get("block_types", {})
    for key, value in values.items():
        if key in attributes:
            continue
        if key in blocks:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    check(item, blocks[key]["block"], f"{path}.{key}", errors)
            continue
        errors.append(f"{path}: `{key}` is no argument or attribute of the provider's schema")


def main() -> int:
    schema_path, *view_paths = sys.argv[1:]
    with open(schema_path, encoding="utf-8") as file:
        schemas = json.load(file)["provider_schemas"][PROVIDER]["resource_schemas"]
    errors = []
    shown = {}
    for view_path in view_paths:
        with open(view_path, encoding="utf-8") as file:
            view = json.load(file)
        for section in (view["planned_values"], view["prior_state"]["values"]):
            for resource in section["root_module"]["resources"]:
                kind = resource["type"]
                if not kind.startswith("aws_"):
                    continue
                if kind not in schemas:
                    errors.append(f"{resource['address']}: the provider has no type {kind}")
                    continue
                check(resource["values"], schemas[kind]["block"], resource["address"], errors)
                shown.setdefault(kind, set()).update(resource["values"])
        for change in view["resource_changes"] + view.get("resource_drift", []):
            kind = change["type"]
            unknown = change["change"]["after_unknown"]
            if not kind.startswith("aws_") or not isinstance(unknown, dict):
                continue
            attributes = schemas[kind]["block"].get("attributes", {})
            for key in unknown:
                if not attributes.get(key, {}).get("computed"):
                    errors.append(f"{change['address']}: `{key}` is unknown after apply, but not computed")
    for kind in sorted(shown):
        block = schemas[kind]["block"]
        names = set(block.get("attributes", {})) | set(block.get("block_types", {}))
        deprecated = {n for n, a in block.get("attributes", {}).items() if a.get("deprecated")}
        left_out = sorted(names - shown[kind] - deprecated)
        print(f"{kind}: shows {len(shown[kind] & names)} of {len(names)}; leaves out: {', '.join(left_out) or 'nothing'}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
