"""Runs one job of a GitHub Actions workflow as a runner would, as far as a test on this machine can,
against the local AWS emulator and the GitHub stand-in (tests/github/server.py).

    run.py SPEC_JSON

SPEC_JSON says what GitHub would give the run:
- `workflow`: the workflow file (the pull request's copy for `pull_request`, the default branch's
  for `workflow_run`, as GitHub picks them); `file`: its name under `.github/workflows/`;
- `event_name`, `event` (the payload), `repository` (`owner/name`), `ref`, `sha`, `run_id`;
- `fork`: a pull request from a fork: no secrets, a read-only `GITHUB_TOKEN`, no OIDC token,
  whatever the workflow asks for (GitHub's rules for public repositories);
- `token`: the run's `GITHUB_TOKEN` (the stand-in knows whether it may write); `secrets`, `vars`;
- `head`: the pull request's files, what `actions/checkout` gives a `pull_request` run;
- `before` (a push's): the files of the commit the push moved the branch from, which checkout
  commits first (with `fetch-depth: 0`, its history) and the payload's `before` names;
- `workspace`, `temp`, `artifacts` (where uploaded artifacts are kept, by run id);
- `reconcile`: the directory of the binary the setup action puts on PATH;
- `aws`: the emulator's `endpoint` and the account's administrator credentials (`key`, `secret`,
  `token`), with which the OIDC stand-in reads a role's trust and, when it admits the job's
  subject, assumes the role, as STS's `AssumeRoleWithWebIdentity` would;
- `github_api`: the stand-in's URL.

What it does: the job's `if:`; each step's `if:` (`success()`, `always()`, `failure()`, `==`,
`!=`, `&&`, `||`), `env:` (workflow, job, step), `${{ }}` expressions (`github.*`, `github.event.*`,
`secrets.*`, `vars.*`, `steps.*.outputs.*`, `runner.temp`, literals); `run:` steps in `bash -e`
with the runner's files (`GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_PATH`, `GITHUB_STEP_SUMMARY`);
`continue-on-error`. The `uses:` steps the examples call are played by stand-ins:
`actions/checkout` (commits `head`, after `before`, in the workspace's git work tree), the setup action
(`ROCm/reconcile`), `aws-actions/configure-aws-credentials` (the OIDC exchange above; refused
without `id-token: write`, and always for a fork), `actions/upload-artifact` and
`actions/download-artifact` (a directory per run id; downloading needs `actions: read`),
`actions/cache/restore` and `actions/cache/save` (a directory per key). Any other `uses:` fails
the step.

Prints JSON: `conclusion`, and per step its `name`, `outcome`, `stdout`, `stderr`, and what its
environment held (`aws_credentials`, `token`, the names of its secrets).
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

import yaml

spec = json.load(open(sys.argv[1]))
workflow = yaml.safe_load(open(spec["workflow"]))
# YAML reads the key `on` as True.
jobs = workflow["jobs"]
job_id = spec.get("job") or next(iter(jobs))
job = jobs[job_id]
fork = spec.get("fork", False)
permissions = job.get("permissions", workflow.get("permissions", {})) or {}
secrets = {} if fork else dict(spec.get("secrets", {}))
token = spec["token"]
workspace, temp = spec["workspace"], spec["temp"]
os.makedirs(workspace, exist_ok=True)
os.makedirs(temp, exist_ok=True)
steps_outputs = {}
exported_env = {}
oidc_subjects = []
path_additions = []
results = []
job_status = ["success"]

github_context = {
    "repository": spec["repository"],
    "repository_owner": spec["repository"].split("/")[0],
    "ref": spec["ref"],
    "sha": spec["sha"],
    "run_id": str(spec["run_id"]),
    "event_name": spec["event_name"],
    "event": spec["event"],
    "token": token,
    "workspace": workspace,
    "server_url": "https://github.com",
    "api_url": spec["github_api"],
}


def lookup(path):
    """A context value by its dotted path."""
    parts = path.split(".")
    if parts[0] == "github":
        value = github_context
        for part in parts[1:]:
            value = value.get(part, "") if isinstance(value, dict) else ""
        return "" if value is None else value
    if parts[0] == "secrets":
        return token if parts[1] == "GITHUB_TOKEN" else secrets.get(parts[1], "")
    if parts[0] == "vars":
        return spec.get("vars", {}).get(parts[1], "")
    if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
        return steps_outputs.get(parts[1], {}).get(parts[3], "")
    if parts[0] == "steps" and len(parts) == 3 and parts[2] in ("outcome", "conclusion"):
        return next((r["outcome"] for r in results if r.get("id") == parts[1]), "")
    if path == "runner.temp":
        return temp
    if parts[0] == "inputs":
        return ""
    raise SystemExit(f"run.py: no value for {path!r}")


def evaluate(expression):
    """The expressions the workflows use: literals, context paths, `==`, `!=`, `!`, `&&`, `||`,
    `always()`, `success()`, `failure()`, `a && 'x' || 'y'`."""
    expression = expression.strip()
    for operator in ("||", "&&"):
        depth, at = 0, None
        for index in range(len(expression) - 1, -1, -1):
            char = expression[index]
            if char == ")":
                depth += 1
            elif char == "(":
                depth -= 1
            elif depth == 0 and expression.startswith(operator, index) and not inside_quotes(expression, index):
                at = index
                break
        if at is not None:
            left, right = evaluate(expression[:at]), evaluate(expression[at + 2:])
            if operator == "&&":
                return right if truthy(left) else left
            return left if truthy(left) else right
    for operator in ("==", "!="):
        match = re.fullmatch(r"(.+?)\s*" + re.escape(operator) + r"\s*(.+)", expression)
        if match and not inside_quotes(expression, match.start(0) + len(match[1])):
            equal = str(evaluate(match[1])).lower() == str(evaluate(match[2])).lower()
            return equal if operator == "==" else not equal
    if expression.startswith("!"):
        return not truthy(evaluate(expression[1:]))
    if expression.startswith("(") and expression.endswith(")"):
        return evaluate(expression[1:-1])
    if expression.startswith("'") and expression.endswith("'"):
        return expression[1:-1].replace("''", "'")
    if expression in ("true", "false"):
        return expression == "true"
    if re.fullmatch(r"-?\d+", expression):
        return int(expression)
    if expression == "always()":
        return True
    if expression == "success()":
        return job_status[0] == "success"
    if expression == "failure()":
        return job_status[0] == "failure"
    if expression == "cancelled()":
        return False
    return lookup(expression)


def inside_quotes(text, index):
    return text[:index].count("'") % 2 == 1


def truthy(value):
    return value not in ("", 0, False, None)


def expand(text):
    if not isinstance(text, str):
        return text
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_text(evaluate(m[1])), text)


def as_text(value):
    """A value as GitHub writes it into text: a boolean is `true` or `false`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def condition(text):
    if text is None:
        return job_status[0] == "success"
    text = text.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    value = evaluate(text)
    # A condition that calls no status function means `success() && ...`.
    if not re.search(r"\b(always|success|failure|cancelled)\(\)", text):
        return job_status[0] == "success" and truthy(value)
    return truthy(value)


def read_pairs(path):
    """`NAME=value` lines and `NAME<<DELIMITER` blocks, as the runner reads GITHUB_OUTPUT."""
    pairs = {}
    if not os.path.exists(path):
        return pairs
    lines = open(path).read().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            index += 1
            while index < len(lines) and lines[index] != delimiter:
                block.append(lines[index])
                index += 1
            pairs[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            pairs[name] = value
        index += 1
    return pairs


def has_aws_credentials(env):
    return any(env.get(name) for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"))


def github_call(method, path, body=None, with_token="test"):
    request = urllib.request.Request(spec["github_api"] + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {with_token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def oidc_subject():
    """The `sub` GitHub would mint for this job, from the repository's template."""
    template = github_call("GET", f"/repos/{spec['repository']}/actions/oidc/customization/sub")
    if "environment" in job:
        context = f"environment:{job['environment']}"
    elif spec["event_name"] == "pull_request":
        context = "pull_request"
    else:
        context = f"ref:{spec['ref']}"
    repository = spec["repository"]
    if template.get("use_default", True):
        return f"repo:{repository}:{context}"
    parts = []
    for claim in template.get("include_claim_keys", []):
        if claim == "repo":
            parts.append(f"repo:{repository}")
        elif claim == "context":
            parts.append(context)
        elif claim == "job_workflow_ref":
            parts.append(f"job_workflow_ref:{repository}/.github/workflows/{spec['file']}@{spec['ref']}")
        else:
            raise SystemExit(f"run.py: the OIDC stand-in does not know the claim {claim!r}")
    return ":".join(parts)


def assume(role_arn):
    """STS's web identity exchange, played: the role's trust must admit GitHub's provider, the
    AWS audience and this job's subject, exactly."""
    import boto3

    aws = spec["aws"]
    session = boto3.session.Session(aws_access_key_id=aws["key"], aws_secret_access_key=aws["secret"],
                                    aws_session_token=aws.get("token"), region_name="us-east-1")
    iam = session.client("iam", endpoint_url=aws["endpoint"])
    name = role_arn.rsplit("/", 1)[-1]
    account = role_arn.split(":")[4]
    provider = f"arn:aws:iam::{account}:oidc-provider/token.actions.githubusercontent.com"
    subject = oidc_subject()
    trust = iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
    if isinstance(trust, str):
        trust = json.loads(urllib.parse.unquote(trust))
    statements = trust["Statement"] if isinstance(trust["Statement"], list) else [trust["Statement"]]

    def listed(value):
        return value if isinstance(value, list) else [value]

    for statement in statements:
        federated = listed(statement.get("Principal", {}).get("Federated", []))
        actions = listed(statement.get("Action", []))
        equals = statement.get("Condition", {}).get("StringEquals", {})
        if (statement.get("Effect") == "Allow" and provider in federated
                and "sts:AssumeRoleWithWebIdentity" in actions
                and "sts.amazonaws.com" in listed(equals.get("token.actions.githubusercontent.com:aud", []))
                and subject in listed(equals.get("token.actions.githubusercontent.com:sub", []))):
            break
    else:
        raise StepFailure(f"Not authorized to perform sts:AssumeRoleWithWebIdentity: {role_arn} does not trust "
                          f"the subject {subject}")
    credentials = session.client("sts", endpoint_url=aws["endpoint"]).assume_role(
        RoleArn=role_arn, RoleSessionName="GitHubActions")["Credentials"]
    return credentials, subject


class StepFailure(Exception):
    pass


def commit(tree):
    """The workspace made `tree`'s files, committed; the commit's id."""
    for name in os.listdir(workspace):
        if name != ".git":
            path = os.path.join(workspace, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    shutil.copytree(tree, workspace, dirs_exist_ok=True)
    git = ["git", "-C", workspace, "-c", "user.name=stand-in", "-c", "user.email=stand-in@invalid"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "commit"], check=True)
    return subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def stand_in(uses, inputs, env):
    """What a `uses:` step does here; its outputs."""
    action = uses.split("@", 1)[0]
    if action == "actions/checkout":
        if permissions.get("contents") not in ("read", "write"):
            raise StepFailure("checkout needs contents: read")
        subprocess.run(["git", "init", "-q", workspace], check=True)
        if spec.get("before") and str(inputs.get("fetch-depth", "1")) == "0":
            spec["event"]["before"] = commit(spec["before"])
        commit(spec["head"])
        return {}
    if action == "ROCm/reconcile":
        path_additions.append(spec["reconcile"])
        version = subprocess.run([os.path.join(spec["reconcile"], "reconcile"), "--version"],
                                 capture_output=True, text=True).stdout.strip()
        return {"version": version}
    if action == "aws-actions/configure-aws-credentials":
        if fork or permissions.get("id-token") != "write":
            raise StepFailure("Credentials could not be loaded, please check your action inputs: Could not load "
                              "credentials from any providers (no ACTIONS_ID_TOKEN_REQUEST_URL: the job has no "
                              "id-token: write, or is a fork's pull request)")
        credentials, subject = assume(inputs["role-to-assume"])
        oidc_subjects.append(subject)
        exported_env.update({
            "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
            "AWS_SESSION_TOKEN": credentials["SessionToken"],
            "AWS_REGION": inputs.get("aws-region", "us-east-1"),
            "AWS_DEFAULT_REGION": inputs.get("aws-region", "us-east-1"),
        })
        return {"aws-account-id": inputs["role-to-assume"].split(":")[4], "subject": subject}
    if action == "actions/upload-artifact":
        store = os.path.join(spec["artifacts"], str(spec["run_id"]), inputs["name"])
        found = False
        for pattern in [p.strip() for p in inputs["path"].splitlines() if p.strip()]:
            for source in glob.glob(os.path.join(env.get("GITHUB_WORKSPACE", workspace), pattern)):
                found = True
                target = os.path.join(store, os.path.relpath(source, workspace))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy(source, target)
        if not found and inputs.get("if-no-files-found", "warn") == "error":
            raise StepFailure(f"No files were found with the provided path: {inputs['path']}")
        return {}
    if action == "actions/download-artifact":
        if permissions.get("actions") not in ("read", "write"):
            raise StepFailure("download-artifact needs actions: read")
        store = os.path.join(spec["artifacts"], str(inputs["run-id"]), inputs["name"])
        if not os.path.isdir(store):
            raise StepFailure(f"Unable to download artifact(s): Artifact not found for name: {inputs['name']}")
        shutil.copytree(store, inputs["path"], dirs_exist_ok=True)
        return {"download-path": inputs["path"]}
    if action in ("actions/cache/restore", "actions/cache/save"):
        # The repository's cache: a directory per key; restored by its key, else by the newest
        # key one of `restore-keys` begins.
        caches = spec["caches"]
        target = os.path.join(env.get("GITHUB_WORKSPACE", workspace), inputs["path"])
        if action == "actions/cache/save":
            stored = os.path.join(caches, inputs["key"])
            if os.path.exists(stored):
                return {}
            shutil.copytree(target, stored)
            return {}
        keys = sorted(os.listdir(caches), key=lambda k: os.path.getmtime(os.path.join(caches, k)), reverse=True) \
            if os.path.isdir(caches) else []
        prefixes = [p.strip() for p in inputs.get("restore-keys", "").splitlines() if p.strip()]
        hit = inputs["key"] if inputs["key"] in keys else next(
            (k for k in keys if any(k.startswith(p) for p in prefixes)), None)
        if hit is not None:
            shutil.copytree(os.path.join(caches, hit), target, dirs_exist_ok=True)
        return {"cache-hit": str(hit == inputs["key"]).lower(), "cache-matched-key": hit or ""}
    raise StepFailure(f"run.py has no stand-in for uses: {uses}")


def environment(step):
    env = {
        "PATH": os.pathsep.join(path_additions + [os.environ["PATH"]]),
        "HOME": temp,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": spec["repository"],
        "GITHUB_REPOSITORY_OWNER": github_context["repository_owner"],
        "GITHUB_EVENT_NAME": spec["event_name"],
        "GITHUB_REF": spec["ref"],
        "GITHUB_SHA": spec["sha"],
        "GITHUB_RUN_ID": str(spec["run_id"]),
        "GITHUB_WORKSPACE": workspace,
        "GITHUB_API_URL": spec["github_api"],
        "GITHUB_SERVER_URL": "https://github.com",
        "RUNNER_TEMP": temp,
        # The test's endpoint, not a credential: every job may reach the emulator, only a job that
        # was given credentials can sign for it.
        "AWS_ENDPOINT_URL": spec["aws"]["endpoint"],
    }
    env.update(exported_env)
    for scope in (workflow.get("env", {}), job.get("env", {}), step.get("env", {})):
        env.update({name: str(expand(value)) for name, value in scope.items()})
    return env


if "if" in job and not condition(str(job["if"])):
    print(json.dumps({"conclusion": "skipped", "steps": []}))
    sys.exit(0)

for index, step in enumerate(job["steps"]):
    name = step.get("name") or step.get("uses") or f"step {index}"
    record = {"name": name, "id": step.get("id")}
    if not condition(step.get("if")):
        record["outcome"] = "skipped"
        results.append(record)
        continue
    env = environment(step)
    record["aws_credentials"] = has_aws_credentials(env)
    record["token"] = [k for k, v in env.items() if v == token and token]
    record["secrets"] = sorted(k for k, v in env.items() if v and v in secrets.values())
    output_file = os.path.join(temp, f"output-{index}")
    env_file = os.path.join(temp, f"env-{index}")
    path_file = os.path.join(temp, f"path-{index}")
    for file in (output_file, env_file, path_file):
        open(file, "w").close()
    env.update(GITHUB_OUTPUT=output_file, GITHUB_ENV=env_file, GITHUB_PATH=path_file,
               GITHUB_STEP_SUMMARY=os.path.join(temp, "summary.md"))
    try:
        if "uses" in step:
            inputs = {key: str(expand(value)) for key, value in step.get("with", {}).items()}
            steps_outputs[step.get("id", "")] = stand_in(step["uses"], inputs, env)
            record["outcome"] = "success"
        else:
            script = tempfile.NamedTemporaryFile("w", suffix=".sh", dir=temp, delete=False)
            script.write(expand(step["run"]))
            script.close()
            shell = ["bash", "-e", script.name]
            if step.get("shell") == "bash":
                shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", script.name]
            done = subprocess.run(shell, env=env, cwd=step.get("working-directory", workspace),
                                  capture_output=True, text=True, timeout=600)
            record.update(stdout=done.stdout, stderr=done.stderr, exit=done.returncode)
            steps_outputs[step.get("id", "")] = read_pairs(output_file)
            exported_env.update(read_pairs(env_file))
            path_additions[:0] = [p for p in open(path_file).read().splitlines() if p]
            if done.returncode != 0:
                raise StepFailure(f"exit {done.returncode}")
            record["outcome"] = "success"
    except StepFailure as failure:
        record.setdefault("stderr", str(failure))
        record["outcome"] = "failure"
        if not truthy(expand(step.get("continue-on-error", False))):
            job_status[0] = "failure"
    results.append(record)

print(json.dumps({"conclusion": job_status[0], "steps": results, "subject": oidc_subjects[0] if oidc_subjects else None}))
