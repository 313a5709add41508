"""A stand-in for the GitHub CLI (`gh`), for the documentation's tests: the commands the task pages
show, played against the GitHub API stand-in (tests/github/server.py) and the workflow runner
(tests/workflows/run.py), so a page's `gh` lines run as they are written.

The doc test puts it on PATH as `gh`, with DOCTEST_STATE naming a directory that holds
`base.json` (the repository's name, the stand-in's URL, the emulator and the account's
administrator credentials, the reconcile binary's directory, the runner and its Python) and
`origin.git` (the repository's remote); it keeps its secrets and runs there. What it does is what
GitHub would do, as far as the workflows go: `gh pr create` opens a pull request from the pushed
branch and runs the check, then the trusted plan, as `pull_request` and `workflow_run` would;
`gh pr merge` merges on the remote and runs the apply workflow as a push to main would;
`gh workflow run` dispatches a workflow of the default branch; `gh run view ID --log-failed` prints
the lines of a run's failed steps (`--log`, of every step); `gh variable set|delete` changes a
repository variable. Runs happen before the command
returns. Only the subcommands and flags the pages use are known; anything else fails loudly.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import yaml

state = os.environ["DOCTEST_STATE"]
base = json.load(open(os.path.join(state, "base.json")))
origin = os.path.join(state, "origin.git")
token = os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN") or "maintainer"
repository = base["repository"]


def api(method, path, body=None, with_token=None):
    request = urllib.request.Request(base["github_api"] + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {with_token or token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read() or b"null")


def load(name, default):
    path = os.path.join(state, name)
    return json.load(open(path)) if os.path.exists(path) else default


def save(name, value):
    with open(os.path.join(state, name), "w") as file:
        json.dump(value, file, indent=1)


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def tree_of(revision):
    """The files of `revision` of the remote, in a directory of their own."""
    directory = tempfile.mkdtemp(dir=state)
    archive = subprocess.run(["git", "--git-dir", origin, "archive", revision], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", directory], input=archive.stdout, check=True)
    return directory


def variables():
    answer = api("GET", f"/repos/{repository}/actions/variables?per_page=30")
    return {v["name"]: v["value"] for v in answer["variables"]}


def run(workflow, event_name, event, tree, ref, sha, writes):
    """One workflow run, as GitHub starts it: its id and conclusion."""
    runs = load("runs.json", [])
    run_id = 100 + len(runs)
    run_token = f"ghs_doc_run_{run_id}"
    api("POST", "/_test/token", {"token": run_token, "workflow": True, "read_only": not writes}, with_token="test")
    runner = tempfile.mkdtemp(dir=state)
    spec = {
        "workflow": os.path.join(tree, ".github/workflows", workflow), "file": workflow,
        "event_name": event_name, "event": event, "repository": repository, "ref": ref, "sha": sha,
        "run_id": run_id, "fork": False, "token": run_token, "secrets": load("secrets.json", {}),
        "vars": variables(), "head": tree, "workspace": os.path.join(runner, "workspace"),
        "temp": os.path.join(runner, "temp"), "artifacts": os.path.join(state, "artifacts"),
        "caches": os.path.join(state, "artifacts", "caches"), "reconcile": base["reconcile"],
        "aws": base["aws"], "github_api": base["github_api"],
    }
    spec_file = os.path.join(runner, "spec.json")
    json.dump(spec, open(spec_file, "w"))
    answer = subprocess.run([base["python"], base["runner"], spec_file], capture_output=True, text=True,
                            env={"PATH": base["path"]})
    try:
        report = json.loads(answer.stdout)
    except json.JSONDecodeError:
        sys.exit(f"gh (doc stand-in): the runner failed: {answer.stdout}{answer.stderr}")
    name = (open(spec["workflow"]).read().split("name:", 1)[1].splitlines()[0].strip())
    runs.append({"id": run_id, "workflow": workflow, "name": name, "event": event_name, "ref": ref,
                 "conclusion": report["conclusion"], "spec": spec_file, "report": report})
    save("runs.json", runs)
    return run_id, report["conclusion"]


def pulls():
    return load("pulls.json", {})


def check_and_plan(number):
    """What opening or updating a pull request starts: its check, then the trusted plan."""
    pull = pulls()[str(number)]
    head = tree_of(pull["sha"])
    event = {"number": number, "pull_request": {
        "number": number, "head": {"sha": pull["sha"], "repo": {"full_name": repository}},
        "base": {"ref": "main", "repo": {"full_name": repository}}}}
    check_id, conclusion = run("pull-request-check.yml", "pull_request", event, head,
                               f"refs/pull/{number}/merge", pull["sha"], writes=False)
    plan(check_id, conclusion, pull)


def plan(check_id, conclusion, pull):
    event = {"workflow_run": {
        "id": check_id, "event": "pull_request", "conclusion": conclusion, "head_sha": pull["sha"],
        "head_branch": pull["branch"], "head_repository": {"full_name": repository},
        "pull_requests": [{"number": pull["number"]}], "path": ".github/workflows/pull-request-check.yml"}}
    main = git("--git-dir", origin, "rev-parse", "main")
    run("pull-request-plan.yml", "workflow_run", event, tree_of("main"), "refs/heads/main", main, writes=True)


def pr(args):
    if args.action == "create":
        branch = git("rev-parse", "--abbrev-ref", "HEAD")
        sha = git("rev-parse", "HEAD")
        if git("--git-dir", origin, "rev-parse", branch) != sha:
            sys.exit(f"aborted: you must first push the current branch to a remote, or use the --head flag")
        files = {}
        for name in ("desired.toml", "rocm-bake.hcl"):
            shown = subprocess.run(["git", "--git-dir", origin, "show", f"{sha}:{name}"], capture_output=True,
                                   text=True)
            if shown.returncode == 0:
                files[name] = shown.stdout
        api("POST", "/_test/commit", {"repository": repository, "sha": sha, "files": files, "links": {}},
            with_token="test")
        number = api("POST", "/_test/pull", {"repository": repository, "head_sha": sha,
                                              "head_repository": repository, "head_ref": branch},
                     with_token="test")["number"]
        recorded = pulls()
        recorded[str(number)] = {"number": number, "sha": sha, "branch": branch, "title": args.title,
                                 "state": "OPEN"}
        save("pulls.json", recorded)
        check_and_plan(number)
        print(f"https://github.com/{repository}/pull/{number}")
    elif args.action == "checks":
        pull = pulls()[args.number]
        statuses = [s for s in api("GET", f"/_test/state?repository={repository}",
                                   with_token="test")["statuses"] if s["sha"] == pull["sha"]]
        latest = {}
        for status in statuses:
            latest[status["context"]] = status
        failed = False
        for context, status in latest.items():
            word = {"success": "pass", "failure": "fail", "error": "fail", "pending": "pending"}[status["state"]]
            failed |= word == "fail"
            print(f"{context}\t{word}\t0\t\t{status.get('description', '')}")
        sys.exit(1 if failed else 0)
    elif args.action == "view":
        pull = pulls()[args.number]
        print(f"title:\t{pull['title']}\nstate:\t{pull['state']}\nnumber:\t{pull['number']}")
        if args.comments:
            comments = api("GET", f"/repos/{repository}/issues/{args.number}/comments")
            for comment in comments:
                print(f"--\nauthor:\t{comment['user']['login']}\n--")
                print(comment["body"])
    elif args.action == "checkout":
        pull = pulls()[args.number]
        git("fetch", "--quiet", "origin", pull["branch"])
        subprocess.run(["git", "switch", "--quiet", pull["branch"]], check=True)
        print(f"Switched to branch '{pull['branch']}'")
    elif args.action == "merge":
        recorded = pulls()
        pull = recorded[args.number]
        clone = tempfile.mkdtemp(dir=state)
        git("clone", "--quiet", origin, clone)
        git("merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{args.number}", f"origin/{pull['branch']}",
            cwd=clone)
        git("push", "--quiet", "origin", "main", cwd=clone)
        pull["state"] = "MERGED"
        save("pulls.json", recorded)
        print(f"✓ Merged pull request #{args.number} ({pull['title']})")
        changed = git("--git-dir", origin, "diff", "--name-only", "main^1", "main").splitlines()
        if "desired.toml" in changed:
            main = git("--git-dir", origin, "rev-parse", "main")
            run("apply-after-merge.yml", "push", {}, tree_of("main"), "refs/heads/main", main, writes=True)
    else:
        sys.exit(f"gh (doc stand-in): pr {args.action} is not played")


def workflow(args):
    if args.action != "run":
        sys.exit(f"gh (doc stand-in): workflow {args.action} is not played")
    main = git("--git-dir", origin, "rev-parse", "main")
    print(f"✓ Created workflow_dispatch event for {args.file} at main")
    run(args.file, "workflow_dispatch", {"inputs": {}}, tree_of("main"), "refs/heads/main", main, writes=True)


def run_command(args):
    runs = load("runs.json", [])
    if args.action == "list":
        chosen = [r for r in reversed(runs) if not args.workflow or r["workflow"] == args.workflow]
        chosen = chosen[:args.limit]
        if args.json:
            if args.json != "databaseId" or args.jq != ".[0].databaseId":
                sys.exit("gh (doc stand-in): only --json databaseId --jq .[0].databaseId is played")
            if chosen:
                print(chosen[0]["id"])
            return
        for r in chosen:
            print(f"completed\t{r['conclusion']}\t{r['name']}\t{r['name']}\tmain\t{r['event']}\t{r['id']}")
    elif args.action == "view":
        if not (args.log_failed or args.log):
            sys.exit("gh (doc stand-in): only run view ID --log or --log-failed is played")
        one = next(r for r in runs if str(r["id"]) == args.id)
        spec = json.load(open(one["spec"]))
        job = spec.get("job") or next(iter(yaml.safe_load(open(spec["workflow"]))["jobs"]))
        for step in one["report"]["steps"]:
            if args.log_failed and step["outcome"] not in ("failure",):
                continue
            for line in (step.get("stdout", "") + step.get("stderr", "")).splitlines():
                print(f"{job}\t{step['name']}\t{line}")
            # As GitHub closes a failed step's log.
            if step["outcome"] == "failure" and step.get("exit"):
                print(f"{job}\t{step['name']}\t##[error]Process completed with exit code {step['exit']}.")
    elif args.action == "rerun":
        previous = next(r for r in runs if str(r["id"]) == args.id)
        spec = json.load(open(previous["spec"]))
        if previous["workflow"] == "pull-request-plan.yml":
            # A re-run reads the pull request's head again, as the trusted plan always does.
            number = spec["event"]["workflow_run"]["pull_requests"][0]["number"]
            plan(spec["event"]["workflow_run"]["id"], "success", pulls()[str(number)])
        else:
            run(previous["workflow"], spec["event_name"], spec["event"], spec["head"], spec["ref"], spec["sha"],
                writes=True)
    else:
        sys.exit(f"gh (doc stand-in): run {args.action} is not played")


def secret(args):
    if args.action != "set":
        sys.exit(f"gh (doc stand-in): secret {args.action} is not played")
    value = args.body if args.body is not None else sys.stdin.read().rstrip("\n")
    secrets = load("secrets.json", {})
    secrets[args.name] = value
    save("secrets.json", secrets)
    print(f"✓ Set Actions secret {args.name} for {repository}")


def variable(args):
    """`gh variable set NAME --body VALUE` and `gh variable delete NAME`, as a maintainer does by hand."""
    path = f"/repos/{repository}/actions/variables"
    if args.action == "set":
        if args.name.upper() in variables():
            api("PATCH", f"{path}/{args.name}", {"name": args.name, "value": args.body})
            print(f"✓ Updated variable {args.name.upper()} for {repository}")
        else:
            api("POST", path, {"name": args.name, "value": args.body})
            print(f"✓ Created variable {args.name.upper()} for {repository}")
    elif args.action == "delete":
        api("DELETE", f"{path}/{args.name}")
        print(f"✓ Deleted variable {args.name.upper()} from {repository}")
    else:
        sys.exit(f"gh (doc stand-in): variable {args.action} is not played")


def issue(args):
    if args.action == "list":
        state = {"open": "open", "closed": "closed", "all": "all"}[args.state]
        found = api("GET", f"/repos/{repository}/issues?state={state}&labels={args.label}")
        for one in found:
            labels = ",".join(label["name"] for label in one["labels"])
            print(f"{one['number']}\t{one['state'].upper()}\t{one['title']}\t{labels}")
    elif args.action == "view":
        one = api("GET", f"/repos/{repository}/issues/{args.number}")
        print(f"title:\t{one['title']}\nstate:\t{one['state'].upper()}\nnumber:\t{one['number']}\n--")
        if args.comments:
            # As `gh issue view --comments` shows an issue: its comments, each after its author.
            for comment in api("GET", f"/repos/{repository}/issues/{args.number}/comments"):
                print(f"author:\t{comment['user']['login']}\n--\n{comment['body']}\n--")
        else:
            print(one["body"])
    elif args.action == "close":
        reason = {"completed": "completed", "not planned": "not_planned"}[args.reason or "completed"]
        one = api("PATCH", f"/repos/{repository}/issues/{args.number}", {"state": "closed", "state_reason": reason})
        print(f"✓ Closed issue #{one['number']} ({one['title']})")
    else:
        sys.exit(f"gh (doc stand-in): issue {args.action} is not played")


def main():
    parser = argparse.ArgumentParser(prog="gh")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pr")
    p.add_argument("action")
    p.add_argument("number", nargs="?")
    p.add_argument("--title")
    p.add_argument("--body")
    p.add_argument("--comments", action="store_true")
    p.add_argument("--merge", action="store_true")
    p.set_defaults(handle=pr)
    p = commands.add_parser("workflow")
    p.add_argument("action")
    p.add_argument("file")
    p.set_defaults(handle=workflow)
    p = commands.add_parser("run")
    p.add_argument("action")
    p.add_argument("id", nargs="?")
    p.add_argument("--workflow")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--jq")
    p.add_argument("--log-failed", action="store_true")
    p.add_argument("--log", action="store_true")
    p.set_defaults(handle=run_command)
    p = commands.add_parser("variable")
    p.add_argument("action")
    p.add_argument("name")
    p.add_argument("--body")
    p.set_defaults(handle=variable)
    p = commands.add_parser("secret")
    p.add_argument("action")
    p.add_argument("name")
    p.add_argument("--body")
    p.set_defaults(handle=secret)
    p = commands.add_parser("issue")
    p.add_argument("action")
    p.add_argument("number", nargs="?")
    p.add_argument("--label", default="")
    p.add_argument("--state", default="open")
    p.add_argument("--reason")
    p.add_argument("--comments", action="store_true")
    p.set_defaults(handle=issue)
    args = parser.parse_args()
    args.handle(args)


main()
