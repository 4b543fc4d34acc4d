/**
 * The one JSON text of a value that every node computes alike: object keys sorted by code unit, no whitespace,
 * members whose value is undefined omitted (as JSON.stringify does). Hashes and signatures are taken over this
 * text, so two equal values always hash alike regardless of key insertion order or the order jsonb returns.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonicalJson: ${typeof value} is not representable in JSON`);
    return text;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined || typeof item === 'function' ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined && typeof record[key] !== 'function')
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(',')}}`;
}
