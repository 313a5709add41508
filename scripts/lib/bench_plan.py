"""The plan benchmark's measurements; scripts/bench-plan.sh sets the stage and runs this.

Every command runs as a child process, timed by the wall clock and measured by the kernel
(os.wait4: user and system CPU, peak resident memory), never from inside the binary.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import boto3


def run(argv, env, stdin=subprocess.DEVNULL):
    """Runs argv; returns (wall seconds, cpu seconds, peak KiB, exit code, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, env=env, stdin=stdin, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, child.returncode,
                out.read().decode(), err.read().decode())


def requests(stderr):
    found = re.search(r": (\d+) AWS requests", stderr)
    return int(found.group(1)) if found else None


def measure(label, argv, env, runs, resources, ok=(0,)):
    """Runs argv `runs` times; prints and returns the medians."""
    walls, cpus, peaks, counts = [], [], [], set()
    for _ in range(runs):
        wall, cpu, peak, code, stdout, stderr = run(argv, env)
        if code not in ok:
            sys.exit(f"{label}: exit {code}\n{stdout}{stderr}")
        walls.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
        counts.add(requests(stderr))
    row = {
        "label": label,
        "wall": statistics.median(walls),
        "min": min(walls),
        "max": max(walls),
        "cpu": statistics.median(cpus),
        "cpu_per_resource_ms": statistics.median(cpus) * 1000 / resources,
        "peak_mib": max(peaks) / 1024,
        "requests": sorted(c for c in counts if c is not None),
    }
    print(
        f"| {label} | {row['wall'] * 1000:.0f} ms ({row['min'] * 1000:.0f} to {row['max'] * 1000:.0f}) "
        f"| {', '.join(map(str, row['requests']))} | {row['cpu'] * 1000:.0f} ms "
        f"({row['cpu_per_resource_ms']:.2f} ms per resource) | {row['peak_mib']:.0f} MiB |",
        flush=True,
    )
    return row


class Endpoint:
    """A reconcile-bench endpoint, stopped (stdin closed) on exit."""

    def __init__(self, bench, *args):
        self.process = subprocess.Popen([bench, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            sys.exit(f"reconcile-bench {args} did not start: {line!r}")
        self.url = line.split(" ", 1)[1].strip()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.process.stdin.close()
        self.process.wait()


def stand_in_desired(path, count):
    with open(path, "w") as out:
        out.write(
            'region = "us-east-1"\n\n[ecr.defaults]\nlifecycle_policy = "keep-3-untagged"\n'
            'image_tag_mutability = "MUTABLE"\nscan_on_push = false\n'
            'tags = { project = "rocm-bake" }\n\n'
            "[ecr.lifecycle_policies.keep-3-untagged]\nrules = [\n"
            '  { rulePriority = 1, description = "Keep the 3 newest untagged images", selection = '
            '{ tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, '
            'action = { type = "expire" } },\n]\n\n[ecr.repositories]\n'
        )
        for index in range(count):
            out.write(f"bench-{index:05} = {{}}\n")


def baseline_calls(desired_names, account, region):
    """The reads a plan makes, as the AWS CLI makes them: one process each, in series."""
    ecr = boto3.client("ecr", region_name=region)
    repositories = [r["repositoryName"] for r in ecr.describe_repositories(maxResults=1000)["repositories"]]
    bucket = f"rocm-bake-sccache-{account}"
    calls = [["sts", "get-caller-identity"], ["ecr", "describe-repositories"]]
    for name in repositories:
        calls.append(["ecr", "get-lifecycle-policy", "--repository-name", name])
        if name in desired_names:
            calls.append(["ecr", "get-repository-policy", "--repository-name", name])
            arn = f"arn:aws:ecr:{region}:{account}:repository/{name}"
            calls.append(["ecr", "list-tags-for-resource", "--resource-arn", arn])
    calls.append(["s3api", "head-bucket", "--bucket", bucket])
    for setting in ["tagging", "public-access-block", "encryption", "policy", "ownership-controls", "acl",
                    "versioning", "replication", "website", "logging", "lifecycle-configuration"]:
        command = "get-public-access-block" if setting == "public-access-block" else f"get-bucket-{setting}"
        calls.append(["s3api", command, "--bucket", bucket])
    role = "rocm-bake-codebuild"
    calls += [
        ["iam", "get-role", "--role-name", role],
        ["iam", "list-role-policies", "--role-name", role],
        ["iam", "get-role-policy", "--role-name", role, "--policy-name", "rocm-bake-nightly"],
        ["iam", "list-attached-role-policies", "--role-name", role],
        ["codebuild", "batch-get-projects", "--names", "rocm-bake"],
    ]
    return calls


def main():
    parser = argparse.ArgumentParser()
    for flag in ["reconcile", "bench", "aws", "desired", "emulator", "workdir"]:
        parser.add_argument(f"--{flag}", required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--delay-ms", default="50")
    args = parser.parse_args()
    env = dict(os.environ)
    region = "us-east-1"
    header = "| what | wall time, median (min to max) | requests | client CPU | peak memory |\n|---|---|---|---|---|"

    print(f"\n### The 2026-11-11 account on the emulator, {args.delay_ms} ms added to every request\n")
    account = boto3.client("sts", region_name=region).get_caller_identity()["Account"]
    with open(args.desired) as text:
        table = text.read().split("[ecr.repositories]")[1].split("\n[")[0]
    desired_names = {line.split(" = ")[0] for line in table.splitlines() if " = " in line}
    resources = 2 * len(desired_names) + 6
    with Endpoint(args.bench, "proxy", args.emulator, args.delay_ms) as proxy:
        slow = dict(env, AWS_ENDPOINT_URL=proxy.url)
        print(header)
        plan = measure("`reconcile plan`, no changes", [args.reconcile, "--desired", args.desired, "plan", "-v"],
                       slow, args.runs, resources)

        # The sequential baseline: the same reads, one `aws` process per call.
        calls = baseline_calls(desired_names, account, region)
        start = time.perf_counter()
        cpu = 0.0
        for call in calls:
            _, used, _, _, _, _ = run([args.aws, "--region", region, "--output", "json", *call], slow)
            cpu += used
        wall = time.perf_counter() - start
        print(f"| sequential `aws` CLI, {len(calls)} processes | {wall * 1000:.0f} ms | {len(calls)} "
              f"| {cpu * 1000:.0f} ms | |")
        print(f"\nThe plan is {wall / plan['wall']:.0f} times faster than the sequential baseline.")

        # Apply of 27 lifecycle policies: each run starts with every declared repository's
        # policy deleted behind reconcile's back.
        ecr = boto3.client("ecr", region_name=region)
        walls = []
        for _ in range(args.runs):
            for name in desired_names:
                ecr.delete_lifecycle_policy(repositoryName=name)
            wall, used, peak, code, stdout, stderr = run(
                [args.reconcile, "--desired", args.desired, "apply", "--auto-approve", "-v"], slow)
            if code != 0:
                sys.exit(f"apply: exit {code}\n{stdout}{stderr}")
            walls.append(wall)
        print(f"\n`reconcile apply` of {len(desired_names)} lifecycle policies: median "
              f"{statistics.median(walls) * 1000:.0f} ms ({min(walls) * 1000:.0f} to {max(walls) * 1000:.0f}), "
              f"{requests(stderr)} requests, {used * 1000:.0f} ms CPU, {peak / 1024:.0f} MiB.")

    print(f"\n### Through a busy account: a token bucket per service, {args.delay_ms} ms a request\n")
    # What the plan sends each service, unthrottled: the rate allows the requests past a burst of
    # the rate, over the rate, for the service that takes longest.
    with Endpoint(args.bench, "proxy", args.emulator, args.delay_ms) as proxy:
        _, _, _, _, _, stderr = run([args.reconcile, "--desired", args.desired, "plan", "-v"],
                                    dict(env, AWS_ENDPOINT_URL=proxy.url))
    by_service = {}
    for operation, count in re.findall(r"([A-Za-z]+):[A-Za-z]+ (\d+)", stderr.split("AWS requests", 1)[1]):
        by_service[operation] = by_service.get(operation, 0) + int(count)
    print("| rate per service | `reconcile plan` wall time, median (min to max) | what the rate allows "
          "| throttled answers | exit codes |\n|---|---|---|---|---|")
    for rate in [20, 10, 5]:
        walls, throttled, codes = [], [], set()
        for _ in range(max(args.runs // 2, 3)):
            # A fresh bucket each run, as a burst of the rate.
            with Endpoint(args.bench, "busy", args.emulator, str(rate), args.delay_ms) as busy:
                wall, _, _, code, stdout, stderr = run([args.reconcile, "--desired", args.desired, "plan", "-v"],
                                                       dict(env, AWS_ENDPOINT_URL=busy.url))
            walls.append(wall)
            codes.add(code)
            found = re.search(r"(\d+) answered with throttling", stderr)
            throttled.append(int(found.group(1)) if found else 0)
        allows = max(max(count - rate, 0) / rate for count in by_service.values())
        print(f"| {rate} a second | {statistics.median(walls):.2f} s ({min(walls):.2f} to {max(walls):.2f}) "
              f"| {allows:.2f} s | {statistics.median(throttled):.0f} | {', '.join(map(str, sorted(codes)))} |",
              flush=True)

    print(f"\n### The stand-in endpoint (ECR and STS, canned answers), {args.delay_ms} ms a request\n")
    print(header)
    clean = {k: v for k, v in env.items() if k != "AWS_ENDPOINT_URL"}
    for count, extra in [(27, []), (270, []), (1000, []), (5000, []), (5000, ["--parallelism", "250"])]:
        desired = os.path.join(args.workdir, f"stand-in-{count}.toml")
        stand_in_desired(desired, count)
        with Endpoint(args.bench, "stand-in", str(count), args.delay_ms) as stand_in:
            label = f"{count:,} repositories" + (f", `{' '.join(extra)}`" if extra else "")
            measure(label, [args.reconcile, "--desired", desired, *extra, "plan", "-v"],
                    dict(clean, AWS_ENDPOINT_URL=stand_in.url), 3 if count >= 1000 else args.runs, 2 * count)

    saved_plans(args, clean)


def saved_plans(args, env):
    """The apply workflow's steps at scale, on the stand-in: `plan --out` of no changes, the saved
    file's size, `show --format terraform-json` of it, and `apply` of it; then the largest
    desired.toml accepted (just under 15,000 tables) planned."""
    print(f"\n### A saved plan at scale (the stand-in endpoint), {args.delay_ms} ms a request\n")
    print("| repositories | step | wall time, median (min to max) | requests | client CPU | peak memory |")
    print("|---|---|---|---|---|---|")
    for count in (27, 1000, 5000, 14990):
        desired = os.path.join(args.workdir, f"saved-{count}.toml")
        stand_in_desired(desired, count)
        saved = os.path.join(args.workdir, f"saved-{count}.plan.json")
        with Endpoint(args.bench, "stand-in", str(count), args.delay_ms) as stand_in:
            at = dict(env, AWS_ENDPOINT_URL=stand_in.url)
            runs = 3 if count >= 1000 else args.runs
            steps = [("`plan --out`", ["plan", "-v", "--out", saved], (0,))]
            if count < 14990:
                steps += [("`show --format terraform-json`", ["show", "--format", "terraform-json", saved], (0,)),
                          ("`apply` of the saved plan", ["apply", "-v", saved], (0,))]
            for label, argv, ok in steps:
                row = measure(f"{count:,} | {label}", [args.reconcile, "--desired", desired, *argv], at, runs,
                              2 * count, ok)
                del row
        print(f"| {count:,} | saved plan size | {os.path.getsize(saved):,} bytes "
              f"({os.path.getsize(saved) / (2 * count):.0f} a declared resource) | | | |", flush=True)


if __name__ == "__main__":
    if "--saved-only" in sys.argv:
        sys.argv.remove("--saved-only")
        parser = argparse.ArgumentParser()
        for flag in ["reconcile", "bench", "workdir"]:
            parser.add_argument(f"--{flag}", required=True)
        parser.add_argument("--runs", type=int, default=7)
        parser.add_argument("--delay-ms", default="50")
        known, _ = parser.parse_known_args()
        saved_plans(known, {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"})
    else:
        main()
