import type { operations } from '../../client/api-types.generated.js';

/**
 * The replies and bodies the console reads and sends, as the generated client types them from the document the node
 * serves: when a route changes what it sends, the console's typecheck fails here rather than a page failing a person.
 */
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;

export type SessionDetail = JsonOf<operations['getApiPublicSessionsId']['responses'][200]>;
export type RepositoryList = JsonOf<operations['getApiProjectsProjectIdRepositories']['responses'][200]>;
export type Repository = RepositoryList['repositories'][number];
export type NewRepository = JsonOf<operations['postApiProjectsProjectIdRepositories']['requestBody']>;
export type DispatchRequest = JsonOf<operations['postApiAgentDispatch']['requestBody']>;
export type Dispatched = JsonOf<operations['postApiAgentDispatch']['responses'][201]>;
export type AgentPreset = NonNullable<DispatchRequest['agent']>;

/** Every preset the server accepts, each as a person reads it (`satisfies` fails the build when the server adds one). */
export const AGENT_PRESETS = {
  command: 'Shell command (--agent-command)',
  'claude-code': 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini',
} as const satisfies Record<AgentPreset, string>;
