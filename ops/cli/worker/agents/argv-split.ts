/**
 * `--agent-args '…'` as argv, split the way a POSIX shell splits words, and nothing more: no shell runs and
 * nothing is expanded. Blanks separate words; '…' keeps everything literally; "…" keeps everything except that
 * `\` escapes `"`, `\`, `$`, `` ` `` and a newline (an unescaped `$` or backquote there is refused, as it
 * would expand); a `\` outside quotes escapes the next character. A character that
 * would make a shell do something other than quote (`| & ; < > ( ) $` and backquote) must be quoted, so that
 * `--agent-args 'a | b'` is refused rather than handed to the agent as three words it did not expect.
 */
export class ArgvSplitError extends Error {}

const blanks = new Set([' ', '\t', '\n', '\r']);
const shellSyntax = new Set(['|', '&', ';', '<', '>', '(', ')', '$', '`']);
const escapableInDoubleQuotes = new Set(['"', '\\', '$', '`', '\n']);

export function splitArgs(text: string): string[] {
  if (text.includes('\0')) throw new ArgvSplitError('holds a NUL character, which no argument can carry');
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (blanks.has(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new ArgvSplitError(`has an unterminated ' (from character ${i + 1})`);
      word += text.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      i = doubleQuoted(text, i, (part) => { word += part; });
    } else if (c === '\\') {
      if (i + 1 >= text.length) throw new ArgvSplitError('ends with a \\ that escapes nothing');
      // Backslash-newline is a line continuation in a shell: it joins, it adds nothing.
      if (text[i + 1] !== '\n') word += text[i + 1];
      i++;
    } else if (shellSyntax.has(c)) {
      throw new ArgvSplitError(`has an unquoted ${c} (character ${i + 1}); no shell runs here, so quote it to pass it as text`);
    } else {
      word += c;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** Reads the "…" opening at `open`, hands its text to `add`, and returns the index of the closing quote. */
function doubleQuoted(text: string, open: number, add: (part: string) => void): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return i;
    if (c === '$' || c === '`') throw new ArgvSplitError(`has an unescaped ${c} inside "…" (character ${i + 1}); nothing is expanded here, so write \\${c} or use '…'`);
    if (c === '\\' && i + 1 < text.length && escapableInDoubleQuotes.has(text[i + 1]!)) {
      if (text[i + 1] !== '\n') add(text[i + 1]!);
      i++;
    } else {
      add(c);
    }
  }
  throw new ArgvSplitError(`has an unterminated " (from character ${open + 1})`);
}
