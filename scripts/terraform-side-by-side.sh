#!/usr/bin/env bash
# reconcile's terraform-json view beside Terraform itself (docs/terraform-json.md, "Beside
# Terraform itself"). Not part of the test command: Terraform is not installable from the package
# registries. Needs `terraform` (1.11) and hashicorp/aws 5.100.0 in a filesystem mirror
# (TF_PROVIDER_MIRROR, default /opt/tf-plugins), as the machine image has them.
#
# On the emulator, with the repository's desired.toml: the plan of the empty account (everything
# made) and of the applied one (everything read), each checked against the provider's own schema
# (`terraform providers schema -json`) by lib/terraform_schema.py: no argument or attribute the
# provider does not have, nothing unknown after apply that the provider does not compute; and
# what the view leaves out, type by type.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mirror="${TF_PROVIDER_MIRROR:-/opt/tf-plugins}"
command -v terraform > /dev/null || { echo "terraform is not installed" >&2; exit 1; }
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --bin reconcile
reconcile="$bin/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh
# shellcheck source=lib/github.sh
source scripts/lib/github.sh
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The provider's schema, from the mirror alone.
mkdir "$work/terraform"
cat > "$work/terraformrc" << CONFIG
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/hashicorp/aws"]
  }
}
CONFIG
cat > "$work/terraform/main.tf" << 'CONFIG'
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "5.100.0" }
  }
}
CONFIG
export TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1
terraform -chdir="$work/terraform" init -input=false > /dev/null
terraform -chdir="$work/terraform" providers schema -json > "$work/schema.json"
echo "==> $(terraform version | head -1), hashicorp/aws 5.100.0's schema"

cp desired.toml rocm-bake.hcl "$work/"
account="$("$python" -c 'import boto3; print(boto3.client("sts", region_name="us-east-1").get_caller_identity()["Account"])')"
export ECR_REGISTRY="$account.dkr.ecr.us-east-1.amazonaws.com"
# CodeBuild reaches GitHub with the account's source credential, as the nightly's account has one.
"$python" -c 'import boto3; boto3.client("codebuild", region_name="us-east-1").import_source_credentials(token="side-by-side", serverType="GITHUB", authType="PERSONAL_ACCESS_TOKEN")' 
unset GITHUB_ACTIONS
cd "$work"
"$reconcile" plan --private --format terraform-json > made.json
"$reconcile" apply --auto-approve > /dev/null
"$reconcile" plan --private --format terraform-json > read.json
echo "==> the empty account's plan and the applied account's, against the schema"
"$python" "$root/scripts/lib/terraform_schema.py" schema.json made.json read.json
