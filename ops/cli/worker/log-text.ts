/**
 * What makes a string safe to put in a log line. Server strings (ids, mutation names, error messages) reach the log,
 * and a server that sends `"x\n2099-01-01T00:00:00.000Z INFO  …"` must not forge a line, nor move a terminal's cursor
 * with an escape sequence: every C0 and C1 control character, DEL and the line and paragraph separators U+2028 and
 * U+2029 are written as `\uXXXX` (a JSON escape, so the JSON log stays valid JSON and the text log stays readable).
 * A string longer than a log line should be is cut, saying how much was left out.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

export const escapeControls = (text: string): string =>
  text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** `text` cut to at most `max` characters (plus the note), never splitting a surrogate pair. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…(${text.length - end} more characters)`;
}

