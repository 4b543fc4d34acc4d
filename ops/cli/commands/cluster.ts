import { Command } from 'commander';
import { unwrap, type paths } from '../../../http/client/index.js';
import { adminApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

/** What `GET /api/admin/cluster` answers, as the generated client types it. */
type ClusterStatus = paths['/api/admin/cluster']['get']['responses'][200]['content']['application/json'];

/** `troupe cluster status`: the members one node hears and the shards each holds, as a table (JSON with --json). */
export function clusterCommands(): Command {
  const cluster = new Command('cluster').description('cluster membership and shard placement');
  cluster
    .command('status')
    .description('live nodes and the shards each holds, as seen by the node at --url')
    .option('--json', 'print the raw status as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const status: ClusterStatus = await unwrap(adminApi(cmd.optsWithGlobals() as ClientOptions).GET('/api/admin/cluster'));
      if (opts.json) printJson(status);
      else process.stdout.write(renderClusterTable(status));
    });
  return cluster;
}

/** Shard lists are compressed into ranges (`0-3,7`) so 64 shards fit a terminal line. */
export function renderClusterTable(status: ClusterStatus): string {
  const header = ['NODE', 'HOLDS', 'SHARDS HELD', 'TARGET', 'STANDBY', 'LAST SEEN', 'URL'];
  const rows = status.nodes.map((node) => {
    const held = new Set(node.owned);
    return [
      `${node.nodeId}${node.self ? ' *' : ''}`,
      String(node.owned.length),
      ranges(node.owned),
      String(node.target.length),
      ranges(node.consuming.filter((shard) => !held.has(shard))),
      `${(node.lastSeenMsAgo / 1000).toFixed(1)}s`,
      node.url ?? '-',
    ];
  });
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  const lagging = status.queueDepth ? Object.entries(status.queueDepth).filter(([, n]) => n > 0) : [];
  return [
    line(header),
    ...rows.map(line),
    '',
    `shards: ${status.shardCount}; unclaimed: ${status.unclaimed.length === 0 ? 'none' : ranges(status.unclaimed)}` +
      (status.queueDepth ? `; queued: ${lagging.length === 0 ? 'none' : lagging.map(([shard, n]) => `${shard}=${n}`).join(',')}` : ''),
    '(* = the node answering)',
    '',
  ].join('\n');
}

function ranges(shards: readonly number[]): string {
  if (shards.length === 0) return '-';
  const sorted = [...shards].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = sorted[0]!;
  let prev = start;
  for (const shard of [...sorted.slice(1), Number.NaN]) {
    if (shard === prev + 1) {
      prev = shard;
      continue;
    }
    parts.push(start === prev ? String(start) : `${start}-${prev}`);
    start = prev = shard;
  }
  return parts.join(',');
}
