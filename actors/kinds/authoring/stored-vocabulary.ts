import type { Knex } from 'knex';
import { pluginNodeKey, pluginNodeKind, type NodeKindEntry, type ToolEntry, type VocabularySource } from './vocabulary.js';
import { projectPalette } from '../../../storage/analytics/palette.js';
import { pluginVerbs } from '../../../storage/plugins/option-snapshots.js';

/**
 * The vocabulary entries the stored rooms contribute (decision 0011): every plugin verb a daemon snapshotted for the
 * project becomes a node kind `plugin:<pluginId>.<verbId>`, and every resource of the project's palette a tool.
 * Only naming fields are kept (kind, id, name): option choices, connection times, worker liveness and heartbeats
 * change all the time without changing what a canvas may use, and would make every digest go stale.
 */
export function storedVocabularySource(db: Knex): VocabularySource {
  return {
    async nodeKinds(orgId: string, projectId: string): Promise<readonly NodeKindEntry[]> {
      const kinds: NodeKindEntry[] = [];
      for (const v of await pluginVerbs(db, orgId, projectId)) {
        // A verb id with a dot cannot be told apart from its plugin id in `<p>.<v>`: it is left out, not guessed.
        const nodeKey = pluginNodeKey(v.pluginId, v.verbId);
        if (nodeKey !== undefined) kinds.push(pluginNodeKind(nodeKey, v.pluginId, v.verbId));
      }
      return kinds;
    },
    async tools(orgId: string, projectId: string): Promise<readonly ToolEntry[]> {
      // Liveness is irrelevant here (it is dropped below), so any threshold serves.
      const groups = await projectPalette(db, orgId, projectId, undefined, 0);
      return Object.values(groups).flat().map((entry) => ({ kind: entry.kind, id: entry.id, name: entry.name }));
    },
  };
}
