/**
 * Configuration comes from the environment only, is checked once at boot against one schema and then frozen.
 * A bad value stops start-up with one line naming the variable (see `ConfigError`).
 */
export interface Config {
  /** @default 8080 */
  readonly port: number;
  /** @default '0.0.0.0' */
  readonly host: string;
  /** Where PGlite, the master key and the admin token live on embedded defaults. @default './data' */
  readonly dataDir: string;
  /** postgres://… selects Postgres; unset selects PGlite under dataDir. */
  readonly databaseUrl: string | undefined;
  /** amqp://… selects the RabbitMQ transport; unset selects the in-process transport. */
  readonly amqpUrl: string | undefined;
  /** redis://… selects Redis; unset selects the in-memory cache. */
  readonly redisUrl: string | undefined;
  /** @default hostname-pid */
  readonly nodeId: string;
  /** 32 bytes, base64. Unset: generated once into `<dataDir>/master-key`. */
  readonly masterKey: string | undefined;
  /** Unset: generated once into `<dataDir>/admin-token`. */
  readonly adminToken: string | undefined;
  /** @default 'info' */
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Shards per cluster; fixed for the life of a cluster. @default 64 */
  readonly shardCount: number;
  /** How long a shutdown may drain in-flight requests before closing. @default 10000 */
  readonly shutdownGraceMs: number;
  /**
   * On SIGTERM the node keeps serving this long with /readyz answering 503, so load balancers stop sending before
   * the socket closes; SIGINT skips it. @default 2000
   */
  readonly shutdownDelayMs: number;
  /**
   * The most a whole shutdown may take before the process exits regardless (a close that never settles, a logger
   * blocked on a full pipe). Unset: delay + grace + 10 s.
   */
  readonly shutdownDeadlineMs: number | undefined;
  /** Actors idle this long are passivated (state is already durable). @default 300000 */
  readonly passivateAfterMs: number;
  /** Default deadline for an ask from the HTTP edge to an actor. @default 5000 */
  readonly askTimeoutMs: number;
  /** Hosts or CIDRs outbound requests may reach although private or loopback. */
  readonly outboundAllow: readonly string[];
  /** @default 5 */
  readonly kAnonymityFloor: number;
  /** Legacy environment secret for the incident webhook. */
  readonly incidentIoSecret: string | undefined;
  /** True when TLS terminates in front of us; the session cookie is then Secure. @default false */
  readonly behindTls: boolean;
  /** Prefix of every RabbitMQ exchange and queue name; the nodes of one cluster share it. @default 'troupe' */
  readonly amqpPrefix: string;
  /** Prefix of every Redis key (cache, rate limits); deployments sharing one Redis each take their own. @default 'troupe:' */
  readonly cachePrefix: string;
  /** RabbitMQ management API, read for the cluster's ownership view. Unset: AMQP_URL's host, port 15672. */
  readonly amqpManagementUrl: string | undefined;
  /** Postgres schema the node works in (created when missing). Unset: the connection's default search path. */
  readonly databaseSchema: string | undefined;
  /** A held session whose worker has been silent this long is reclaimed (decision 0007, leases). @default 90000 */
  readonly sessionLeaseMs: number;
  /** VAPID subject (`mailto:` or `https:` contact) for web push; unset disables web push. */
  readonly webPushSubject: string | undefined;
  /**
   * The address browsers reach this deployment at (`https://troupe.example.com`); integration OAuth redirect URIs
   * are built from it. Unset: taken from the request's Host header, which suits only single-host setups.
   */
  readonly publicUrl: string | undefined;
  /**
   * Integration OAuth apps, one per provider (`TROUPE_<PROVIDER>_OAUTH_CLIENT_ID`, `…_CLIENT_SECRET`, optional
   * `…_BASE_URL` replacing the provider's own authorize and token host, e.g. a fake provider in tests).
   * A provider without client id and secret cannot be connected.
   */
  readonly linearOAuthBaseUrl: string | undefined;
  readonly linearOAuthClientId: string | undefined;
  readonly linearOAuthClientSecret: string | undefined;
  readonly githubOAuthBaseUrl: string | undefined;
  readonly githubOAuthClientId: string | undefined;
  readonly githubOAuthClientSecret: string | undefined;
  readonly sentryOAuthBaseUrl: string | undefined;
  readonly sentryOAuthClientId: string | undefined;
  readonly sentryOAuthClientSecret: string | undefined;
  /** A provider delivery recorded but not finished this long is handed on again (the webhook sweeper). @default 60000 */
  readonly webhookResendAfterMs: number;
  /**
   * How often every node looks for schedule fires nobody acted on (their node died) and deployments a schedule has
   * not applied; a fire is ticked once it is this overdue. @default 1000
   */
  readonly scheduleScanMs: number;
  /** Linear's API (GraphQL at `<url>/graphql`) for tracker comments; unset: https://api.linear.app. */
  readonly linearApiUrl: string | undefined;
  /** GitHub's REST API for tracker comments; unset: https://api.github.com. */
  readonly githubApiUrl: string | undefined;
  /** How often every node looks for tracker comments due. @default 1000 */
  readonly trackerPollMs: number;
  /** A tracker comment that failed for now is tried again after this, doubled each attempt. @default 2000 */
  readonly trackerRetryBaseMs: number;
  /** Write requests (POST, PUT, PATCH, DELETE) one user, API key or machine client may make per minute. @default 600 */
  readonly rateLimitWritesPerMinute: number;
  /** Dispatches (sessions, workflow runs, prompts) one user, API key or machine client may make per minute. @default 120 */
  readonly rateLimitDispatchesPerMinute: number;
  /**
   * Reverse proxies in front of this node that append to X-Forwarded-For: the client's address is that many entries
   * from the right. 0 uses the socket's peer address and ignores the header (a client could forge it). @default 0
   */
  readonly trustProxyHops: number;
  /** A Postgres query unanswered after this long fails as STORAGE_UNAVAILABLE and its connection is dropped. @default 3000 */
  readonly queryTimeoutMs: number;
  /** Write requests a node serves at once; more wait (decision 0053). */
  readonly writesInFlight: number;
  /** Write requests that may wait for a slot; one more is refused with OVERLOADED at once. */
  readonly writesQueued: number;
  /** The longest a write waits for a slot before it is refused with OVERLOADED. */
  readonly writeQueueWaitMs: number;
  /**
   * Failed logins for one email, from all sources together, per hour: the ceiling above the per-(email, source)
   * limit of 10 a minute. @default 100
   */
  readonly rateLimitLoginFailuresPerEmailPerHour: number;
  /** Refused webhook deliveries one source address may send per minute; later ones get 429 unverified. @default 30 */
  readonly rateLimitWebhookFailuresPerMinute: number;
  /**
   * Bytes of agent output and interview tokens one worker may send per minute (each request also counts 1 KiB), so a
   * runtime token cannot flood a node. @default 16777216
   */
  readonly rateLimitWorkerOutputBytesPerMinute: number;
  /**
   * Heartbeats one worker (runtime token) may send to a node per minute, and polls likewise, each counted on its own;
   * later ones get 429 with Retry-After (decision 0082). @default 600
   */
  readonly rateLimitWorkerHeartbeatsPerMinute: number;
  /**
   * Status reports (claims included) and other writes one worker may send to a node per minute; agent output and
   * steps are limited by their bytes, step heartbeats are not counted. @default 6000
   */
  readonly rateLimitWorkerReportsPerMinute: number;
  /** Event streams one org may hold open on a node at once; one more is refused with 429 TOO_MANY_STREAMS. @default 2000 */
  readonly streamsPerOrg: number;
  /** Published schedules one org may have at once; one more is refused with 409 at publish. @default 50 */
  readonly schedulesPerOrg: number;
  /** The shortest time between two fires of a published schedule; a cron firing more often is refused. @default 10 */
  readonly scheduleMinIntervalSeconds: number;
  /** Verified webhook deliveries one org may receive per minute, all providers together; later ones get 429. @default 600 */
  readonly rateLimitWebhookDeliveriesPerMinute: number;
  /**
   * Published workflows with a webhook trigger one org may have at once; one more is refused with 409 at publish.
   * Deliveries match at most the 200 oldest of a provider, so more would never run. @default 200
   */
  readonly webhookWorkflowsPerOrg: number;
  /** Marketplace listings one org may publish. @default 50 */
  readonly marketplaceListingsPerOrg: number;
  /**
   * Whether projects may register `file://` repositories: paths on the worker's own disk, for tests and single-machine
   * set-ups (`TROUPE_ALLOW_FILE_REPOSITORIES=1`). @default false
   */
  readonly allowFileRepositories: boolean;
  /**
   * A follow-up (a prompt to a finished session) is offered only to the worker that ran it while that worker is live,
   * for at most this long; then to any worker of the project, which rebuilds the workspace (decision 0075). @default 60000
   */
  readonly followUpGraceMs: number;
  /**
   * The most bytes of text one session's transcript keeps (`TROUPE_TRANSCRIPT_MAX_BYTES`); the batch that passes it ends
   * the transcript with a `notice` entry saying what was cut (decision 0084). @default 67108864 (64 MiB)
   */
  readonly transcriptMaxBytes: number;
  /**
   * `POST /api/auth/oidc/start` requests one source address may send per minute (it is unauthenticated); later ones get
   * 429 with Retry-After (decision 0091). @default 30
   */
  readonly rateLimitSsoStartsPerSourcePerMinute: number;
  /**
   * DNS servers that single sign-on domain verification asks for TXT records (`TROUPE_SSO_DNS_SERVERS`, comma-separated
   * `address[:port]`, IPv6 in brackets); unset, the system's resolvers (decision 0091).
   */
  readonly ssoDnsServers: readonly string[] | undefined;
}
