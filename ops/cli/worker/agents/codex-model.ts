import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The model codex will run, so that its tokens are priced at that model's rate: `--model`/`-m` or `-c model=…` in
 * `--agent-args` (what codex itself gives precedence), else the top-level `model = "…"` of
 * `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), else undefined (the price table's default model).
 * Codex profiles (`--profile`, `profile = …`) are not followed: name the model in `--agent-args` when using one.
 */
export function codexModel(extraArgs: readonly string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  return modelInArgs(extraArgs) ?? modelInConfig(readConfig(env));
}

export function modelInArgs(args: readonly string[]): string | undefined {
  // `--model` wins over a `-c model=…` override wherever each stands; among several of one kind, the last.
  let flag: string | undefined;
  let override: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if ((a === '-m' || a === '--model') && i + 1 < args.length) flag = args[++i];
    else if (a.startsWith('--model=')) flag = a.slice('--model='.length);
    else if (a.startsWith('-m') && !a.startsWith('--')) flag = a.slice(2);
    else if ((a === '-c' || a === '--config') && i + 1 < args.length) override = configModel(args[++i]!) ?? override;
    else if (a.startsWith('--config=')) override = configModel(a.slice('--config='.length)) ?? override;
  }
  return flag || override || undefined;
}

/** `-c model=gpt-5.4` or `-c model="gpt-5.4"`: codex reads the value as TOML, or as a bare string. */
function configModel(override: string): string | undefined {
  const m = /^\s*model\s*=\s*(.*)$/.exec(override);
  return m ? unquoted(m[1]!.trim()) : undefined;
}

function readConfig(env: NodeJS.ProcessEnv): string | undefined {
  const home = env.CODEX_HOME || path.join(env.HOME || os.homedir(), '.codex');
  try {
    return readFileSync(path.join(home, 'config.toml'), 'utf8');
  } catch {
    return undefined;
  }
}

/** The top-level `model` key (before the first table header), a quoted TOML string. */
export function modelInConfig(toml: string | undefined): string | undefined {
  if (toml === undefined) return undefined;
  for (const line of toml.split(/\r?\n/)) {
    if (/^\s*\[/.test(line)) return undefined;
    const m = /^\s*model\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*(?:#.*)?$/.exec(line);
    if (m) return unquoted(m[1]!) || undefined;
  }
  return undefined;
}

function unquoted(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) return value.slice(1, -1);
  return value;
}
