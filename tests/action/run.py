"""Runs the setup action (action.yml) as a GitHub runner runs a composite action, as far as a test
on this machine can: each `run:` step in bash with its `env:` and the runner's files
(GITHUB_OUTPUT, GITHUB_PATH), its `${{ }}` expressions and `if:` conditions evaluated; a `uses:`
step is not run but recorded with its inputs, and answers `cache-hit` as the test says.

    run.py ACTION_DIR WORK_DIR INPUTS_JSON CACHE_HIT

Prints JSON: {"outputs": {...}, "path": [...], "uses": [{"uses": ..., "with": {...}}], "ran": [...]}.
"""

import json
import os
import re
import subprocess
import sys

import yaml

action_dir, work, inputs_json, cache_hit = sys.argv[1:5]
action = yaml.safe_load(open(os.path.join(action_dir, "action.yml")))
given = json.loads(inputs_json)
inputs = {name: given.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
steps = {}
context = {"github.token": "a-github-token"}


def value(expression):
    expression = expression.strip()
    if expression.startswith("'") and expression.endswith("'"):
        return expression[1:-1]
    if expression.startswith("inputs."):
        return inputs[expression[len("inputs."):]]
    match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
    if match:
        return steps.get(match[1], {}).get(match[2], "")
    if expression in context:
        return context[expression]
    raise SystemExit(f"run.py: no value for {expression!r}")


def condition(text):
    """`a != 'b'`, `a == 'b'`, joined by `&&`: all the action uses."""
    for clause in text.split("&&"):
        left, operator, right = re.fullmatch(r"\s*(.+?)\s*(==|!=)\s*(.+?)\s*", clause).groups()
        if (value(left) == value(right)) != (operator == "=="):
            return False
    return True


def expand(text):
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: value(m[1]), str(text))


# Inputs may themselves be expressions (the token's default).
inputs = {name: expand(text) for name, text in inputs.items()}
output_file, path_file = os.path.join(work, "output"), os.path.join(work, "path")
tool_cache = os.path.join(work, "tool-cache")
report = {"uses": [], "ran": [], "path": []}
def outputs(text):
    """`NAME=value` lines and `NAME<<DELIMITER` blocks, as the runner reads GITHUB_OUTPUT."""
    found, lines, index = {}, text.splitlines(), 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while index < len(lines) and lines[index] != delimiter:
                value.append(lines[index])
                index += 1
            if index == len(lines):
                raise SystemExit(f"GITHUB_OUTPUT: {name} has no closing {delimiter}")
            index += 1
            found[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            found[name] = value
    return found


for step in action["runs"]["steps"]:
    if "if" in step and not condition(step["if"]):
        continue
    report["ran"].append(step.get("name", step.get("id")))
    if "uses" in step:
        report["uses"].append({"uses": step["uses"], "with": {k: expand(v) for k, v in step.get("with", {}).items()}})
        steps[step.get("id", "")] = {"cache-hit": cache_hit}
        continue
    open(output_file, "w").close()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": work,
        "GITHUB_ACTION_PATH": action_dir,
        "GITHUB_OUTPUT": output_file,
        "GITHUB_PATH": path_file,
        "RUNNER_TOOL_CACHE": tool_cache,
        **{k: v for k, v in os.environ.items() if k.startswith("RECONCILE_")},
        **{name: expand(text) for name, text in step.get("env", {}).items()},
    }
    # What a runner runs for `shell: bash`.
    shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]]
    done = subprocess.run(shell, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(json.dumps({"failed": step.get("name"), "stderr": done.stderr, "stdout": done.stdout}))
        sys.exit(1)
    steps[step.get("id", "")] = outputs(open(output_file).read())

if os.path.exists(path_file):
    report["path"] = open(path_file).read().splitlines()
report["outputs"] = {name: expand(spec["value"]) for name, spec in action["outputs"].items()}
print(json.dumps(report))
