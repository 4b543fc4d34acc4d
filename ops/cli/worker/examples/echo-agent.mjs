#!/usr/bin/env node
// The example agent of the README walkthrough and the worker's tests: it follows the agent contract (README, "The
// agent contract") and does no real work. It prints the prompt it got on stdin, one line a tick for
// ECHO_AGENT_LINES ticks (default 3) every ECHO_AGENT_TICK_MS (default 200), echoes every further stdin line
// (a prompt sent to the running session), reports its cost, and exits with ECHO_AGENT_EXIT (default 0).
// A prompt containing "fail" makes it exit 1. SIGHUP re-reads $TROUPE_CREDENTIALS_DIR/$ECHO_AGENT_CREDENTIAL.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const lines = Number(process.env.ECHO_AGENT_LINES ?? 3);
const tickMs = Number(process.env.ECHO_AGENT_TICK_MS ?? 200);
const credential = process.env.ECHO_AGENT_CREDENTIAL;
const readCredential = () => {
  try { return readFileSync(`${process.env.TROUPE_CREDENTIALS_DIR}/${credential}`, 'utf8'); } catch { return '(none)'; }
};
if (credential) {
  console.log(`credential ${credential}: ${readCredential()}`);
  process.on('SIGHUP', () => console.log(`SIGHUP: credential ${credential} is now ${readCredential()}`));
}
process.on('SIGTERM', () => { console.log('SIGTERM: stopping'); process.exit(143); });

let prompt;
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (prompt === undefined) prompt = line;
  else console.log(`prompt: ${line}`);
});
const first = await new Promise((resolve) => {
  const check = setInterval(() => { if (prompt !== undefined) { clearInterval(check); resolve(prompt); } }, 5);
});
console.log(`session ${process.env.TROUPE_SESSION_ID} of project ${process.env.TROUPE_PROJECT_ID} in ${process.cwd()}`);
console.log(`prompt: ${first}`);
for (let i = 1; i <= lines; i++) {
  await new Promise((r) => setTimeout(r, tickMs));
  console.log(`working… step ${i} of ${lines}`);
}
console.log(JSON.stringify({ troupe: { costUsd: Number(process.env.ECHO_AGENT_COST ?? 0.01) } }));
console.log('done');
process.exit(first.includes('fail') ? 1 : Number(process.env.ECHO_AGENT_EXIT ?? 0));
