import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ArgvSplitError, splitArgs } from './argv-split.js';
import { claudeCodePreset } from './claude-code.js';
import { codexModel } from './codex-model.js';
import { codexPreset } from './codex.js';
import { commandPreset } from './command.js';
import { geminiPreset } from './gemini.js';
import { presetNames, type AgentOptions, type AgentPreset, type PresetName } from './preset.js';
import { defaultPrices, parsePriceTable, PriceTableError, type PriceTable } from './prices.js';

export type { AgentEvent, LineParser } from './events.js';
export type { AgentInvocation, AgentOptions, AgentPreset, AgentStdin, PresetName } from './preset.js';
export { isAgentSessionId, presetNames } from './preset.js';

/** A `troupe worker` agent flag that cannot be used as given; the message names the flag and what is wrong. */
export class AgentOptionError extends Error {}

const presets: Record<PresetName, AgentPreset> = {
  command: commandPreset, 'claude-code': claudeCodePreset, codex: codexPreset, gemini: geminiPreset,
};

const isPresetName = (name: string): name is PresetName => (presetNames as readonly string[]).includes(name);

export function presetNamed(name: string): AgentPreset {
  if (!isPresetName(name)) throw new AgentOptionError(`--agent must be one of ${presetNames.join(', ')}, not ${JSON.stringify(name).slice(0, 60)}`);
  return presets[name];
}

/** The worker's agent flags as given (or from their environment variables). */
export interface AgentFlags {
  readonly agent?: string;
  readonly agentCommand?: string;
  readonly agentBin?: string;
  readonly agentArgs?: string;
  readonly priceTable?: string;
  /** `--agent-approvals` (claude-code only). */
  readonly agentApprovals?: boolean;
}

const MAX_PRICE_TABLE_BYTES = 1 << 20;

/**
 * The preset and its options, checked once when the worker starts so that a mistake ends the start with a message
 * rather than failing every session. Each flag applies to the presets it means something to, and is refused with
 * the others (a `--price-table` given to claude-code would otherwise be silently ignored).
 */
export function resolveAgent(flags: AgentFlags, env: NodeJS.ProcessEnv = process.env): { preset: AgentPreset; options: AgentOptions } {
  const preset = presetNamed(flags.agent ?? 'command');
  if (flags.agentApprovals && preset.name !== 'claude-code') {
    throw new AgentOptionError(`--agent-approvals applies to --agent claude-code; ${preset.name} has no permission-prompt tool to send to Troupe`);
  }
  if (preset.name === 'command') {
    for (const [flag, value] of [['--agent-bin', flags.agentBin], ['--agent-args', flags.agentArgs], ['--price-table', flags.priceTable]] as const) {
      if (value !== undefined) throw new AgentOptionError(`${flag} applies to --agent claude-code, codex or gemini; --agent command runs --agent-command as it is`);
    }
    if (flags.agentCommand === undefined || flags.agentCommand.trim() === '') throw new AgentOptionError("--agent command needs --agent-command 'CMD'");
    return { preset, options: { command: flags.agentCommand, extraArgs: [], prices: defaultPrices } };
  }
  if (flags.agentCommand !== undefined) throw new AgentOptionError(`--agent-command applies to --agent command; --agent ${preset.name} runs its own CLI (name another binary with --agent-bin)`);
  if (flags.priceTable !== undefined && preset.name !== 'codex') throw new AgentOptionError(`--price-table applies to --agent codex; ${preset.name} reports its own cost or none`);
  const extraArgs = agentArgs(flags.agentArgs);
  const prices = flags.priceTable === undefined ? defaultPrices : priceTable(flags.priceTable);
  return {
    preset,
    options: {
      bin: agentBin(flags.agentBin),
      extraArgs,
      prices,
      ...(preset.name === 'codex' ? { model: codexModel(extraArgs, env) } : {}),
      ...(flags.agentApprovals ? { approvals: true } : {}),
    },
  };
}

function agentArgs(text: string | undefined): string[] {
  if (text === undefined) return [];
  try {
    return splitArgs(text);
  } catch (err) {
    if (err instanceof ArgvSplitError) throw new AgentOptionError(`--agent-args ${err.message}`);
    throw err;
  }
}

/** A bare name is looked up on PATH; a path is made absolute now, since the agent starts in its own directory. */
function agentBin(bin: string | undefined): string | undefined {
  if (bin === undefined) return undefined;
  if (bin.trim() === '' || bin.includes('\0')) throw new AgentOptionError('--agent-bin must name a program');
  return bin.includes('/') ? path.resolve(bin) : bin;
}

function priceTable(file: string): PriceTable {
  let text: string;
  try {
    if (statSync(file).size > MAX_PRICE_TABLE_BYTES) throw new AgentOptionError(`--price-table ${file}: larger than ${MAX_PRICE_TABLE_BYTES} bytes`);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof AgentOptionError) throw err;
    throw new AgentOptionError(`--price-table ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    return parsePriceTable(text);
  } catch (err) {
    if (err instanceof PriceTableError) throw new AgentOptionError(`--price-table ${file}: ${err.message}`);
    throw err;
  }
}
