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
  | { readonly kind: 'ignore'; readonly reason: string };
