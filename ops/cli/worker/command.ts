import os from 'node:os';
import path from 'node:path';
import { Command, Option } from 'commander';
import { CliError, CliFinding } from '../client.js';
import { createWorkerApi } from './api.js';
import { createLog, type LogFormat } from './log.js';
import { watchNpxLauncher } from './launcher-watch.js';
import { nodeSupport } from '../../kernel/node-support.js';
import { RegistrationRefused, Worker, type WorkerOptions } from './worker.js';
import { AgentOptionError, resolveAgent } from './agents/index.js';
import type { WorkerAgent } from './session-agent.js';
import { ArgvSplitError, splitArgs } from './agents/argv-split.js';

/**
 * `troupe worker`: runs agent sessions on this machine (issue 15 §1; the flags and their environment variables are
 * the interface). Exit codes: 0 after a drain (SIGTERM or SIGINT), 2 when the registration token is refused,
 * 1 on any other failure to start.
 */
const envInt = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new CliError(`${name} must be a whole number, not ${JSON.stringify(raw)}`);
  return n;
};

function positive(value: string | undefined, what: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new CliError(`${what} must be a whole number of at least ${min}, not ${JSON.stringify(value)}`);
  return n;
}

interface Flags {
  url?: string;
  registrationToken?: string;
  agentCommand?: string;
  agent?: string;
  agentBin?: string;
  agentArgs?: string;
  priceTable?: string;
  agentApprovals?: boolean;
  mcpCommand?: string;
  keepWorkspaces?: string;
  capacity?: string;
  name?: string;
  stateDir?: string;
  workDir?: string;
  drainTimeout?: string;
  pool?: string;
  logFormat: LogFormat;
  verbose?: boolean;
}

/** The `--agent` preset and its flags, each also read from its environment variable; a mistake ends the start. */
function workerAgent(flags: Flags): WorkerAgent {
  const env = process.env;
  const agent = flags.agent ?? env.TROUPE_AGENT;
  const agentCommand = flags.agentCommand ?? env.TROUPE_AGENT_COMMAND;
  if ((agent === undefined || agent === 'command') && !agentCommand) {
    throw new CliError("no agent: pass --agent-command 'CMD' (or set TROUPE_AGENT_COMMAND), or --agent claude-code|codex|gemini");
  }
  try {
    return resolveAgent({
      agent, agentCommand, agentBin: flags.agentBin ?? env.TROUPE_AGENT_BIN, agentArgs: flags.agentArgs ?? env.TROUPE_AGENT_ARGS,
      priceTable: flags.priceTable ?? env.TROUPE_PRICE_TABLE,
      agentApprovals: flags.agentApprovals ?? env.TROUPE_AGENT_APPROVALS === '1',
    });
  } catch (err) {
    if (err instanceof AgentOptionError) throw new CliError(err.message);
    throw err;
  }
}

function keepHours(value: string | undefined): number {
  if (value === undefined || value === '') return 24;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 24 * 365) throw new CliError(`--keep-workspaces must be a number of hours from 0 to 8760, not ${JSON.stringify(value)}`);
  return n;
}

/** `--mcp-command`, split as a shell would (never run by one); absent: the worker's own `mcp` subcommand. */
function mcpCommandOf(text: string | undefined): string[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return splitArgs(text);
  } catch (err) {
    if (err instanceof ArgvSplitError) throw new CliError(`--mcp-command ${err.message}`);
    throw err;
  }
}

export function resolveWorkerOptions(flags: Flags, globalUrl?: string): WorkerOptions {
  // Like every other command: the local node when nothing names one.
  const url = flags.url ?? globalUrl ?? process.env.TROUPE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
  const registrationToken = flags.registrationToken ?? process.env.TROUPE_REGISTRATION_TOKEN;
  if (!registrationToken) throw new CliError('no registration token: pass --registration-token or set TROUPE_REGISTRATION_TOKEN (printed by `troupe org create`)');
  const agent = workerAgent(flags);
  const capacity = positive(flags.capacity ?? process.env.TROUPE_WORKER_CAPACITY, '--capacity', 1) ?? 4;
  const name = flags.name ?? process.env.TROUPE_WORKER_NAME ?? os.hostname();
  const stateDir = path.resolve(flags.stateDir ?? process.env.TROUPE_WORKER_STATE_DIR ?? path.join(os.homedir(), '.troupe', 'worker', name));
  const workDir = path.resolve(flags.workDir ?? process.env.TROUPE_WORKER_WORK_DIR ?? path.join(stateDir, 'work'));
  const drainTimeoutSeconds = positive(flags.drainTimeout ?? process.env.TROUPE_WORKER_DRAIN_TIMEOUT, '--drain-timeout', 0) ?? 60;
  const pool = flags.pool ?? process.env.TROUPE_WORKER_POOL;
  const mcpCommand = mcpCommandOf(flags.mcpCommand ?? process.env.TROUPE_WORKER_MCP_COMMAND);
  return {
    url, registrationToken, agent, capacity, name, stateDir, workDir, drainTimeoutSeconds,
    ...(pool ? { pool } : {}),
    ...(mcpCommand ? { mcpCommand } : {}),
    keepWorkspacesHours: keepHours(flags.keepWorkspaces ?? process.env.TROUPE_KEEP_WORKSPACES),
    killGraceMs: envInt('TROUPE_WORKER_KILL_GRACE_MS') ?? 10_000,
    backoffBaseMs: envInt('TROUPE_WORKER_BACKOFF_BASE_MS') ?? 1000,
    backoffCapMs: envInt('TROUPE_WORKER_BACKOFF_CAP_MS') ?? 30_000,
  };
}

export function workerCommand(): Command {
  return new Command('worker')
    .description('run agent sessions of your projects on this machine (see README: The worker)')
    .option('--url <url>', 'the Troupe server (env TROUPE_URL, default http://127.0.0.1:$PORT or 8080)')
    .option('--registration-token <token>', 'registration token of the org (env TROUPE_REGISTRATION_TOKEN)')
    .option('--agent <preset>', 'the agent: command (runs --agent-command), claude-code, codex or gemini (env TROUPE_AGENT, default command)')
    .option('--agent-command <cmd>', 'with --agent command: shell command run for each session (env TROUPE_AGENT_COMMAND)')
    .option('--agent-bin <path>', "the agent CLI's program, else claude, codex or gemini on PATH (env TROUPE_AGENT_BIN)")
    .option('--agent-args <args>', "more flags for the agent CLI, split as a shell would, never run by one (env TROUPE_AGENT_ARGS)")
    .option('--price-table <file>', 'with --agent codex: USD per million tokens by model, JSON (env TROUPE_PRICE_TABLE)')
    .option('--agent-approvals', "with --agent claude-code: its permission prompts go to a person through Troupe's approvals (env TROUPE_AGENT_APPROVALS=1)")
    .option('--mcp-command <cmd>', "the MCP server agents get as TROUPE_MCP_COMMAND (env TROUPE_WORKER_MCP_COMMAND, default this program's own `mcp`)")
    .option('--keep-workspaces <hours>', "a session's worktree is removed after this long without a follow-up (env TROUPE_KEEP_WORKSPACES, default 24)")
    .option('--capacity <n>', 'sessions run at once (env TROUPE_WORKER_CAPACITY, default 4)')
    .option('--name <name>', 'name shown in the fleet (env TROUPE_WORKER_NAME, default the hostname)')
    .option('--state-dir <dir>', 'identity, unsent reports, credentials (env TROUPE_WORKER_STATE_DIR, default ~/.troupe/worker/<name>)')
    .option('--work-dir <dir>', "each session's directory or repository worktree is made here (env TROUPE_WORKER_WORK_DIR, default <state dir>/work)")
    .option('--drain-timeout <seconds>', 'on SIGTERM, how long running sessions may finish (env TROUPE_WORKER_DRAIN_TIMEOUT, default 60)')
    .option('--pool <id>', "resource pool its sessions run in; a pool.deleted mutation naming it stops them (env TROUPE_WORKER_POOL)")
    .addOption(new Option('--log-format <format>', 'text lines or one JSON object per line').choices(['text', 'json']).default('text'))
    .option('--verbose', 'also log debug lines (agent stderr, stream reconnects)')
    .action(async (flags: Flags, cmd: Command) => {
      const globalUrl = (cmd.optsWithGlobals() as { url?: string }).url;
      const opts = resolveWorkerOptions(flags, globalUrl);
      const log = createLog(flags.logFormat, undefined, flags.verbose ?? false);
      const onRedirectRefused = (from: string, to: string) =>
        log('warn', 'server.redirect_refused', `refused to follow the server's redirect to another origin (${to}); the call fails`, { from, to });
      const worker = new Worker(opts, createWorkerApi(opts.url, undefined, onRedirectRefused), log);
      const onSignal = (sig: NodeJS.Signals) => {
        log('info', 'worker.signal', `${sig} received`);
        void worker.drain();
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      const unwatchLauncher = watchNpxLauncher(process.env, () => {
        log('info', 'worker.launcher_gone', 'the npx that started the worker has exited (a signal sent to it does not reach the worker): draining');
        void worker.drain();
      });
      const runtime = nodeSupport();
      if (runtime.verdict === 'refused') throw new CliError(runtime.line);
      if (runtime.verdict === 'end-of-life') log('warn', 'worker.node_end_of_life', runtime.line, { nodeVersion: process.version });
      log('info', 'worker.starting', `worker ${opts.name} for ${opts.url}: ${opts.agent.preset.name} agent, capacity ${opts.capacity}, state ${opts.stateDir}`, {
        name: opts.name, agent: opts.agent.preset.name, capacity: opts.capacity, stateDir: opts.stateDir, workDir: opts.workDir,
      });
      try {
        await worker.run();
      } catch (err) {
        if (err instanceof RegistrationRefused) {
          log('error', 'worker.registration_refused', err.message);
          throw new CliFinding(2);
        }
        throw err;
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
        unwatchLauncher();
      }
      if (worker.fatalError instanceof RegistrationRefused) throw new CliFinding(2);
      if (worker.fatalError) throw new CliFinding(1);
    });
}
