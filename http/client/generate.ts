/**
 * `npm run client:generate [-- --url http://host:port]`: writes the client's types from the OpenAPI document.
 * Without --url the document comes from the route table through the function `GET /api/openapi.json` serves with
 * (http/routes/openapi.ts), so no node needs to run; with --url, from a running node.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { allRoutes } from '../routes.js';
import { openApiDocument } from '../routes/openapi.js';
import { GENERATED_TYPES_PATH, renderClientTypes } from './render-types.js';

async function documentFrom(url: string | undefined): Promise<string> {
  if (url === undefined) return openApiDocument(allRoutes());
  const response = await fetch(new URL('/api/openapi.json', url));
  if (!response.ok) throw new Error(`GET ${url}/api/openapi.json answered ${response.status}`);
  return response.text();
}

const urlFlag = process.argv.indexOf('--url');
const url = urlFlag === -1 ? undefined : process.argv[urlFlag + 1];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const target = path.join(root, GENERATED_TYPES_PATH);
writeFileSync(target, await renderClientTypes(await documentFrom(url)));
process.stdout.write(`wrote ${GENERATED_TYPES_PATH} from ${url ?? 'the route table'}\n`);
