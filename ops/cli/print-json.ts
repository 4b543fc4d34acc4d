/** A command's result as indented JSON on stdout, for people and for `jq` alike. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
