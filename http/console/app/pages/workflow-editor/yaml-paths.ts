import { isMap, isNode, isScalar, isSeq, type Document, type Node, type Pair } from 'yaml';

/**
 * Where in the text a field the server named is. The server answers an invalid definition with
 * `details.field` = `definitionYaml.nodes.2.prompt` (dotted path into the parsed document, list indexes as numbers);
 * this walks the same path through the document's nodes and returns the character range of the deepest one that
 * exists: the pair itself when it does (key to value), else its parent (a missing required member is shown on the
 * object that lacks it). The range is cut at its first line's end, so the mark sits on one line.
 */
export interface TextRange { readonly from: number; readonly to: number }

const FIELD_PREFIX = 'definitionYaml';

export function rangeOfField(doc: Document.Parsed, text: string, field: string): TextRange {
  const segments = field === FIELD_PREFIX ? [] : field.startsWith(`${FIELD_PREFIX}.`) ? field.slice(FIELD_PREFIX.length + 1).split('.') : [];
  let node: unknown = doc.contents;
  let range: readonly [number, number] | undefined = rangeOf(node);
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = (node.items as Pair[]).find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === segment);
      if (!pair) break;
      const from = rangeOf(pair.key)?.[0];
      const to = rangeOf(pair.value)?.[1] ?? rangeOf(pair.key)?.[1];
      if (from !== undefined && to !== undefined) range = [from, to];
      node = pair.value;
    } else if (isSeq(node)) {
      const item = /^\d+$/.test(segment) ? node.items[Number(segment)] : undefined;
      if (item === undefined) break;
      range = rangeOf(item) ?? range;
      node = item;
    } else {
      break;
    }
  }
  if (!range) return { from: 0, to: Math.min(text.length, lineEnd(text, 0)) };
  const from = Math.min(range[0], text.length);
  return { from, to: Math.max(from, Math.min(range[1], lineEnd(text, from))) };
}

function rangeOf(node: unknown): readonly [number, number] | undefined {
  return isNode(node) && (node as Node).range ? [(node as Node).range![0], (node as Node).range![1]] : undefined;
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf('\n', from);
  return end === -1 ? text.length : end;
}
