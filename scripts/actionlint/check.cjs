#!/usr/bin/env node
// `make test-workflows`: actionlint (rhysd/actionlint 1.7.7 as WebAssembly,
// from npm) over every workflow in .github/workflows/, plus two guards that
// keep the check honest: it must find the workflows (none found is a failure,
// not a pass), and it must reject a known-bad workflow (a linter that reports
// nothing for anything would otherwise pass). Also checks the project's own
// rule: every `run:` step calls make (the workflows stay thin; what CI runs is
// a Makefile target that `make test` or a developer runs too). The one
// exception: a bare container's package install that brings make itself
// (`apk add ...` in the Alpine job), which no Makefile can do.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.join(ROOT, '.github', 'workflows');
// The package's run-lint module directly: its index also loads the coloured
// reporter, which we do not need.
const { runLint } = require(path.join(__dirname, 'node_modules', '@tktco', 'node-actionlint', 'build', 'run-lint.js'));

const BAD = `on: push
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - run: echo \${{ github.event.nope.nope }}
      - uses: actions/checkout@v4
        with: { bogus-input: 1 }
    timeout-minutes: "soon"
`;

function runOnly(text) {
  // The `run:` commands of a workflow: a one-line `run: make ...`, or a block
  // (`run: |`) whose every non-blank line is a make call.
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)(?:- )?run:\s*(.*)$/.exec(lines[i]);
    if (!m || m[2] === '') continue; // `defaults: run:` (a mapping), not a command
    if (m[2] === '|' || m[2] === '>') {
      const indent = m[1].length;
      for (i++; i < lines.length && (lines[i].trim() === '' || lines[i].search(/\S/) > indent); i++) {
        if (lines[i].trim()) out.push([i + 1, lines[i].trim()]);
      }
      i--;
    } else {
      out.push([i + 1, m[2]]);
    }
  }
  return out;
}

async function main() {
  let failed = 0;
  let passed = 0;
  const bad = await runLint(BAD, 'bad.yml');
  if (bad.filter((r) => r.message).length >= 2) {
    console.log(`ok   actionlint rejects a known-bad workflow (${bad.length} findings)`);
    passed++;
  } else {
    console.log('FAIL actionlint found nothing wrong in a known-bad workflow');
    failed++;
  }
  const files = fs.existsSync(DIR) ? fs.readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f)).sort() : [];
  if (files.length === 0) {
    console.log(`FAIL no workflow in ${path.relative(ROOT, DIR)}`);
    failed++;
  }
  for (const f of files) {
    const rel = path.join('.github', 'workflows', f);
    const text = fs.readFileSync(path.join(DIR, f), 'utf8');
    const results = (await runLint(text, rel)).filter((r) => r.message);
    if (results.length) {
      failed++;
      console.log(`FAIL ${rel}: ${results.length} actionlint finding(s)`);
      for (const r of results) console.log(`     ${rel}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    } else {
      passed++;
      console.log(`ok   ${rel}: actionlint`);
    }
    const notMake = runOnly(text).filter(([, cmd]) => !/^make\b/.test(cmd) && !/^apk add\b/.test(cmd));
    if (notMake.length) {
      failed++;
      console.log(`FAIL ${rel}: run steps that are not Makefile targets`);
      for (const [line, cmd] of notMake) console.log(`     ${rel}:${line}: ${cmd}`);
    } else {
      passed++;
      console.log(`ok   ${rel}: every run step is a make target`);
    }
  }
  console.log(`workflows: ${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
