import { TOOL_SUMMARY_CHARS, type AgentEvent } from './events.js';

/** A JSON object line, or undefined for anything else (the caller keeps that line as output). */
export function jsonObject(line: string): Record<string, unknown> | undefined {
  // A line that cannot be an object (a banner, a warning) never reaches JSON.parse.
  const start = line.charCodeAt(0) === 0x7b ? 0 : line.search(/\S/);
  if (start < 0 || line.charCodeAt(start) !== 0x7b) return undefined;
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

export const objectAt = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
export const stringAt = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const countAt = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
export const costAt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

export const output = (text: string): AgentEvent => ({ kind: 'output', text });
export const blank = (line: string): boolean => line.trim() === '';

/** Floating-point dust off a computed cost (0.047459000000000004): kept to a billionth of a dollar. */
export const roundUsd = (usd: number): number => Math.round(usd * 1e9) / 1e9;

/**
 * At most 200 characters that say what a tool was asked to do: the input's telling field (a command, a path, a
 * pattern, a URL…) when it has one, else the input as compact JSON; whitespace runs become one space.
 */
const tellingFields = ['command', 'cmd', 'file_path', 'absolute_path', 'pattern', 'path', 'url', 'query', 'description', 'prompt'];

export function toolSummary(input: unknown): string {
  let text: string;
  const fields = objectAt(input);
  const telling = fields && tellingFields.map((k) => fields[k]).find((v) => typeof v === 'string' && v.trim() !== '');
  if (typeof telling === 'string') text = telling;
  else if (typeof input === 'string') text = input;
  else if (input === undefined) text = '';
  else text = JSON.stringify(input) ?? '';
  // Whitespace is squeezed in a bounded prefix only: a tool's input may be a whole file.
  text = text.slice(0, TOOL_SUMMARY_CHARS * 4).replace(/\s+/g, ' ').trim();
  return text.length <= TOOL_SUMMARY_CHARS ? text : `${clip(text, TOOL_SUMMARY_CHARS - 1)}…`;
}

/** The first `n` UTF-16 units, one fewer when the cut would split a surrogate pair. */
function clip(text: string, n: number): string {
  const last = text.charCodeAt(n - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? n - 1 : n);
}
