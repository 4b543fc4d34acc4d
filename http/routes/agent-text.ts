/**
 * What an agent writes for a person to read (an approval's summary and details, a tool's name and input), made safe
 * to show: control characters, bidirectional overrides and zero-width characters become visible `\u{…}` escapes, so
 * no text can hide, reorder or fake part of what the approver is asked to allow (a review of issue 35 §3).
 */
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

export function visibleText(text: string, { keepNewlines = true } = {}): string {
  const lines = keepNewlines ? text : text.replace(/[\r\n\t]+/g, ' ');
  return lines.replace(HIDDEN, (c) => `\\u{${c.codePointAt(0)!.toString(16).padStart(4, '0')}}`);
}

/**
 * A gate's title from what the agent asked: says it is the agent's, on one line, and says so where it is cut, naming
 * how much more there is and where to read all of it.
 */
export function agentGateTitle(lead: string, text: string, max: number): string {
  const whole = `${lead}: ${visibleText(text, { keepNewlines: false })}`;
  if (whole.length <= max) return whole;
  const marker = (rest: number) => ` … (+${rest} more characters: open the request to read all of it)`;
  const keep = max - marker(whole.length).length;
  return `${whole.slice(0, keep)}${marker(whole.length - keep)}`;
}
