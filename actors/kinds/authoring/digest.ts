import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../ops/kernel/canonical-json.js';

/**
 * Every authoring digest is `sha256:` + the hex SHA-256 of a value's canonical JSON, so two nodes (or a client that
 * canonicalises the same way) compute the same digest for equal values whatever their key order.
 */
export const digestOf = (value: unknown): string => `sha256:${createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex')}`;
