/** What a verified delivery asks Troupe to do (planned by `planRoute` in routing.ts, carried in the actor message). */
export type RouteAction =
  | {
      readonly kind: 'dispatchSession';
      readonly trackerSessionId: string;
      readonly trackerIssue: string | null;
      readonly prompt: string;
    }
  | {
      /** A note on an existing session of the signing org (a failed CI job or deployment), keyed by the delivery. */
      readonly kind: 'recordSessionActivity';
      readonly sessionId: string;
      readonly activityKind: string;
      readonly body: string;
    }
  | {
      /** Published workflows whose webhook trigger matches (workflow-triggers.ts), each to run with the payload as input. */
      readonly kind: 'startRuns';
      readonly runs: readonly TriggeredRun[];
      readonly input: Record<string, unknown>;
      /** Why other workflows were not considered, kept in the delivery's outcome. */
      readonly note?: string;
    }
  | { readonly kind: 'ignore'; readonly reason: string };

/** One run a delivery starts: the workflow and the version published when the delivery was accepted. */
export interface TriggeredRun {
  readonly workflowId: string;
  readonly projectId: string;
  readonly version: number;
}
