#!/usr/bin/env python3
"""Field mutants: each field of each kind dropped from its create, its update, its read and its
generation, one at a time, and the round trip (crates/cli/tests/integration/round_trip.rs) run
against each; every mutant that builds must fail it (or, for what a generator does besides
carrying a field, the import --generate tests, generate.rs; for a create's arm that finds the
resource made meanwhile, which no round trip reaches, the kind's crate's unit tests). Not part of the test command: each
mutant rebuilds the binary (tens of minutes on two cores). docs/architecture.md (Testing) says
when to run it.

    scripts/field-mutants.py                 every kind's module and its crate's generator
    scripts/field-mutants.py ecr/src/repository.rs   the mutants of the files whose path holds it

A mutant is one production line (never a comment, a table row, the Terraform mapping, a delete,
or a generator's notes and what it leaves out) that names one of its kind's fields, either deleted (a builder's setter, a map's insert, a written
entry) or, for a struct literal's `field: value,`, given `Default::default()`. One that does not
compile is unviable and skipped. Results land in target/field-mutants/; the script exits 1 when a
mutant is missed. Like scripts/mutants.sh it builds in its own target directory and works on a
copy of the tree (a git worktree), so the workspace is left alone.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Each crate's kinds' modules (each with a `FIELDS` table), and the files that write its
# section for `import --generate`.
KINDS = {
    "ecr": {"repository.rs": "ecr_repository", "lifecycle.rs": "ecr_lifecycle_policy"},
    "s3": {"bucket.rs": "s3_bucket", "lifecycle.rs": "s3_bucket_lifecycle"},
    "iam": {
        "role.rs": "iam_role",
        "role_policy.rs": "iam_role_policy",
        "boundary.rs": "iam_role_boundary",
        "oidc_provider.rs": "iam_oidc_provider",
    },
    "codebuild": {"project.rs": "codebuild_project", "webhook.rs": "codebuild_webhook"},
    # GitHub's kinds share its lib.rs.
    "github": {
        "lib.rs": ("github_fork_pr_approval", "github_workflow_permissions", "github_oidc_subject", "github_variable")
    },
}
# (each with the functions that write it; `None`: every function of the file).
GENERATORS = {
    "ecr": {"generate.rs": None},
    "s3": {"section.rs": {"generate", "rule"}},
    "iam": {"section.rs": {"generate"}},
    "codebuild": {"section.rs": {"generate", "filter_group"}},
    # `import --generate` writes no `[github]`: desired.toml keeps its own.
    "github": {},
}
# Functions no round trip runs through: the Terraform view (terraform_json.rs tests it; GitHub's
# is a function per kind) and the deletes (destroy.rs and the --prune tests do).
SKIPPED_FUNCTIONS = {"terraform", "workflow_permissions", "oidc_subject", "variable"}
SKIPPED_PREFIXES = ("delete",)
# Lines that say something rather than write it: a generator's notes and what it leaves out,
# which the import --generate tests read.
SAID = re.compile(r"\.left_out\b|\.notes\b|given_the_default|\.commented\(")
# Mutants that cannot change what the file means, each checked by hand, by the file and the
# line's text (not its number, which moves):
# - generate.rs's `&& defaults.kms_key.as_deref() != Some(key)`: without it a repository whose
#   key is `[ecr.defaults]`'s says it again, which changes nothing it declares.
EQUIVALENT = {("ecr/src/generate.rs", "&& defaults.kms_key.as_deref() != Some(key)")}
# Values that are their type's default already: given the default, nothing changes.
DEFAULTS = {"Default::default()", "None", "false", "0", "Vec::new()", "String::new()", "BTreeMap::new()", "Map::new()"}
# The arm of a create that finds the resource made since the plan was read (an apply killed
# after its create, or another's): no round trip reaches it, so a mutant there is the kind's
# crate's unit tests' to catch (each crate mocks that race).
RACE = re.compile(r"Err\(\w+\) if has_code\(.*(?i:already_?exists)")
# Functions that name what generate writes rather than carry a field (a policy's name).
NAMING = {"policy_name"}
FN = re.compile(r"^(\s*)(?:pub(?:\([a-z]+\))? )?(?:const )?(?:async )?fn (\w+)")


def fields_of(module: str) -> set[str]:
    """The non-identity fields of the module's FIELDS table, constants resolved."""
    constants = dict(re.findall(r'const (\w+): &str = "(\w+)";', module))
    names = set()
    for kind, name in re.findall(r"Field::(in_place|create_only)\((\"?\w+\"?)\)", module):
        names.add(name.strip('"') if name.startswith('"') else constants.get(name, name))
    return names


def held(kind: str) -> set[str]:
    """The fields the round trip lists as held (round_trip.rs's `HELD`): no desired.toml sets
    them, so no version varies them, and dropping one from a call that writes its one value is
    as often as not no change at all. Their drift is other tests'."""
    text = (ROOT / "crates/cli/tests/integration/round_trip.rs").read_text()
    block = text.split("const HELD:")[1].split("];")[0]
    kinds = dict(re.findall(r'\(\s*"(\w+)",\s*&\[([^\]]*)\]', block))
    return set(re.findall(r'"(\w+)"', kinds.get(kind, "")))


def production(text: str) -> str:
    return text.split("\n#[cfg(test)]\nmod tests {")[0]


def code_only(lines: list[str], fields: set[str]) -> list[str]:
    """Each line with its string literals' text taken out, but for a literal that is exactly a
    field's name (a key): a field named in a message says it, it does not carry it. Literals may
    span lines."""
    out, in_string, literal = [], False, ""
    for line in lines:
        kept, at = "", 0
        while at < len(line):
            c = line[at]
            if in_string:
                if c == "\\":
                    literal += line[at : at + 2]
                    at += 2
                    continue
                if c == '"':
                    in_string = False
                    kept += f'"{literal}"' if literal in fields else '""'
                    literal = ""
                else:
                    literal += c
            elif c == "'" and line[at : at + 3] in ("'\"'", "'\\'"):
                kept += line[at : at + 3]
                at += 3
                continue
            elif line.startswith("//", at):
                break
            elif c == '"':
                in_string = True
            else:
                kept += c
            at += 1
        out.append(kept)
    return out


def with_default(line: str, field: str):
    """The line with the value a struct literal gives `field` (`field: value`, up to the next
    `,` or `}` outside brackets) made `Default::default()`; `None` when it gives none, or gives
    the default already."""
    found = re.search(rf"(?<![A-Za-z0-9_.]){re.escape(field)}: ", line)
    if not found:
        return None
    start = end = found.end()
    depth = 0
    while end < len(line):
        c = line[end]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        end += 1
    value = line[start:end].strip()
    if not value or value in DEFAULTS or value[0].isupper() and "::" not in value and "(" not in value:
        # Nothing, the default already, or a type (`policy: Value,` declares the field).
        return None
    return line[:start] + "Default::default()" + line[end:]


def mutants(path: Path, fields: set[str], functions=None):
    """(line index, description, new line or None to delete, whether the line is in a race arm)
    for the file's field lines (in `functions` only, when given)."""
    lines = production(path.read_text()).split("\n")
    code = code_only(lines, fields)
    function, race, cfg_test, test_only = None, None, False, False
    for index, line in enumerate(lines):
        found = FN.match(line)
        if found:
            function = found.group(2)
            # A function compiled only for tests (`#[cfg(test)]` above it, outside `mod tests`).
            test_only, cfg_test = cfg_test, False
        elif line.strip() == "#[cfg(test)]":
            cfg_test = True
        indent = len(line) - len(line.lstrip())
        if race is not None and line.strip() and indent <= race:
            race = None
        if RACE.search(line):
            race = indent
        stripped = line.strip()
        if not stripped or stripped.startswith("//") or "Field::" in line or SAID.search(line):
            continue
        if test_only or function in SKIPPED_FUNCTIONS | NAMING or (function or "").startswith(SKIPPED_PREFIXES):
            continue
        if functions is not None and function not in functions:
            continue
        named = [f for f in fields if re.search(rf"(?<![A-Za-z0-9_]){re.escape(f)}(?![A-Za-z0-9_])", code[index])]
        if not named:
            continue
        for field in named:
            given = with_default(line, field)
            if given is not None:
                yield index, f"`{field}` given its default", given, race is not None
        yield index, f"line naming `{'`, `'.join(sorted(named))}` deleted", None, race is not None


def run(command: list[str], cwd: Path, env: dict) -> bool:
    return subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main() -> int:
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    out = ROOT / "target" / "field-mutants"
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(out / "target"))
    # The worktree's tests start the emulator from this tree's virtualenv (scripts/emulator-venv.sh).
    env.setdefault("RECONCILE_EMULATOR_PYTHON", str(ROOT / "target" / "emulator-venv" / "bin" / "python"))
    work = Path(tempfile.mkdtemp(prefix="field-mutants-"))
    tree = work / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), "HEAD"], cwd=ROOT, check=True)
    # The working tree as it is, uncommitted changes included.
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    if diff:
        subprocess.run(["git", "apply"], cwd=tree, input=diff, check=True)
    # The test binary is built once: what it reads of the code is the kinds' tables, which no
    # mutant touches; each mutant rebuilds only the binary the test runs (target/debug/reconcile).
    built = subprocess.run(
        ["cargo", "test", "--locked", "-p", "reconcile-cli", "--test", "integration", "--no-run", "--message-format=json"],
        cwd=tree, env=env, capture_output=True, text=True,
    )
    executables = [json.loads(line).get("executable") for line in built.stdout.splitlines() if line.startswith("{")]
    binary = next((e for e in executables if e and "integration" in Path(e).name), None)
    if binary is None:
        print(built.stderr, file=sys.stderr)
        return 2
    test = [binary, "--exact", "round_trip::every_field_of_every_kind_is_made_read_generated_and_updated"]
    build = ["cargo", "build", "--locked", "-p", "reconcile-cli", "--bin", "reconcile"]
    caught, missed, unviable = [], [], 0
    try:
        if not run(test, tree / "crates" / "cli", env):
            print("the round trip fails unmutated: nothing to measure", file=sys.stderr)
            return 2
        for crate, modules in KINDS.items():
            # A kind's module is mutated on its own kind's fields; the generator on all of them.
            own = {
                module: fields_of((tree / "crates" / crate / "src" / module).read_text())
                - set().union(*(held(k) for k in ((kind,) if isinstance(kind, str) else kind)))
                for module, kind in modules.items()
            }
            every = set().union(*own.values())
            files = {**{module: None for module in modules}, **GENERATORS[crate]}
            for name, functions in files.items():
                fields = own.get(name, every)
                path = tree / "crates" / crate / "src" / name
                shown = f"{crate}/src/{name}"
                if only not in shown:
                    continue
                original = path.read_text()
                for index, what, new, in_race in list(mutants(path, fields, functions)):
                    if (shown, original.split("\n")[index].strip()) in EQUIVALENT:
                        continue
                    lines = original.split("\n")
                    if new is None:
                        del lines[index]
                    else:
                        lines[index] = new
                    path.write_text("\n".join(lines))
                    label = f"{shown}:{index + 1}: {what}"
                    try:
                        if not run(build, tree, env):
                            unviable += 1
                            continue
                        if run(test, tree / "crates" / "cli", env):
                            # What a generator does besides carrying a field (a repository given
                            # `[ecr.defaults]`'s policy) is the import --generate tests'; what a
                            # create does when it finds the resource made meanwhile, the crate's
                            # mocked unit tests' (the emulator cannot lose that race on cue).
                            if run([binary, "generate::"], tree / "crates" / "cli", env):
                                unit = ["cargo", "test", "--locked", "-p", f"reconcile-{crate}", "--lib"]
                                if in_race and not run(unit, tree, env):
                                    caught.append(f"{label} (by the crate's unit tests)")
                                    print(f"caught  {label} (by the crate's unit tests)", flush=True)
                                else:
                                    missed.append(label)
                                    print(f"MISSED  {label}", flush=True)
                            else:
                                caught.append(f"{label} (by generate::)")
                                print(f"caught  {label} (by generate::)", flush=True)
                        else:
                            caught.append(label)
                            print(f"caught  {label}", flush=True)
                    finally:
                        path.write_text(original)
        # The unmutated binary back, for whoever runs the tests in this target directory next.
        run(build, tree, env)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    (out / "caught.txt").write_text("".join(f"{line}\n" for line in caught))
    (out / "missed.txt").write_text("".join(f"{line}\n" for line in missed))
    print(f"{len(caught)} caught, {len(missed)} missed, {unviable} unviable")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
