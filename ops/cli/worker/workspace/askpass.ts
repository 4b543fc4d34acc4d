import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { noAuth, type GitAuth } from './git.js';

/**
 * A token (a GitHub connection's) handed to git through `GIT_ASKPASS`, never through a URL, an argument or a file:
 * the script in the state dir prints whatever `TROUPE_GIT_ASKPASS_TOKEN` holds in the environment of the one git
 * command that asks, so the token is in no argv (visible in `ps`), no config, no log. GitHub takes any user name with
 * a token as the password. The machine's credential helpers are turned off for that command (`credential.helper=`),
 * else a stale stored password would be tried instead of the token the org configured.
 */
const SCRIPT = `#!/bin/sh
# Written by troupe worker: git asks for a user name, then a password (the token in this command's environment).
case "$1" in
  Username*) echo x-access-token ;;
  *) printf '%s\\n' "$TROUPE_GIT_ASKPASS_TOKEN" ;;
esac
`;

export function gitAuth(stateDir: string, askpassToken: string | undefined): GitAuth {
  if (askpassToken === undefined || askpassToken === '') return noAuth;
  return {
    config: ['-c', 'credential.helper='],
    env: { GIT_ASKPASS: askpassScript(stateDir), TROUPE_GIT_ASKPASS_TOKEN: askpassToken },
  };
}

function askpassScript(stateDir: string): string {
  const file = path.resolve(stateDir, 'git-askpass.sh');
  let current: string | undefined;
  try { current = readFileSync(file, 'utf8'); } catch { current = undefined; }
  if (current !== SCRIPT) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, SCRIPT, { mode: 0o700 });
    chmodSync(tmp, 0o700);
    renameSync(tmp, file);
  }
  return file;
}
