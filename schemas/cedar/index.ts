import { readFileSync } from 'node:fs';

/**
 * The Cedar schema and default policy set, kept as `.cedarschema` / `.cedar` files so they read (and diff) as
 * Cedar. They sit beside this module; a build that copies `schemas/` must copy these two files with it.
 */
const read = (file: string): string => readFileSync(new URL(file, import.meta.url), 'utf8');

export const cedarSchemaText = (): string => read('./troupe.cedarschema');
export const defaultPolicyText = (): string => read('./default.cedar');

/** Cedar's namespace for every Troupe entity and action. */
export const CEDAR_NAMESPACE = 'Troupe';
