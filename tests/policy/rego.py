"""Evaluates Rego policies on a JSON document with regopy (OPA's Rego interpreter, as a Python
library), for the terraform-json contract tests: docs/terraform-json.md's policies, run as a
Terraform user's conftest or OPA would run them.

    python rego.py INPUT QUERY POLICY...

prints the query's value as JSON on one line; exits 1 (with the interpreter's message) when a
policy does not parse or the query fails.
"""

import json
import sys

import regopy


def main() -> int:
    input_path, query, *policies = sys.argv[1:]
    interpreter = regopy.Interpreter()
    for number, path in enumerate(policies):
        with open(path, encoding="utf-8") as policy:
            interpreter.add_module(f"policy{number}", policy.read())
    with open(input_path, encoding="utf-8") as document:
        interpreter.set_input_term(document.read())
    try:
        output = interpreter.query(query)
    except Exception as error:  # regopy raises its own error types, each with the message
        print(error, file=sys.stderr)
        return 1
    if not output.ok():
        print(output, file=sys.stderr)
        return 1
    text = output.expressions().json()
    try:
        value = json.loads(text)
    except ValueError as error:
        print(f"the interpreter's answer is not JSON ({error}): {text}", file=sys.stderr)
        return 1
    print(json.dumps(value[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
