import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from '@stampcard/config';
import type { AppliedSignal, Clock, Ctx, LookupCache, Principal, TriggerOptions } from '@stampcard/core';
import type { Database, Replica, RetentionPolicy } from '@stampcard/db';
import type { Queues, RedisClient } from '@stampcard/jobs';
import type { AcceptMetrics, HttpMetrics, Registry } from '@stampcard/telemetry';
import type { MiddlewareHandler } from 'hono';
import type { TimingVariables } from 'hono/timing';
import type { ConsoleSession } from './console/session';
import type { Slots } from './lib/slots';
import type { RateLimiter } from './limits/limiter';
import type { PortalGrant } from './portal/link';

/** Everything the API needs, built once at start (tests build their own). */
export type Deps = {
  db: Database;
  /**
   * A read replica (`DATABASE_READ_URL`) for the reads that tolerate lag: the participants list, the leaderboards,
   * the event feed and the audit log (see `readLagging`).
   * @defaultValue none: every read goes to `db`
   */
  replica?: Replica;
  redis: RedisClient;
  queues: Queues;
  clock: Clock;
  logger: Logger;
  operatorToken: string;
  /**
   * Per-process cache of API keys' principals and campaigns, invalidated across processes on every change.
   * @defaultValue none: every request reads PostgreSQL
   */
  cache?: LookupCache;
  /**
   * Accept webhook endpoints on private, loopback and link-local addresses (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
   * @defaultValue false
   */
  allowPrivateNetworks?: boolean;
  /**
   * The most webhook messages one batch of an endpoint's backlog operation handles (`WEBHOOK_BACKLOG_BATCH`): a
   * request that enables, discards or deletes runs the first batch, the dispatcher the others.
   * @defaultValue 1000
   */
  webhookBacklogBatch?: number;
  /**
   * Prefix of the Redis keys the API writes itself (`QUEUE_PREFIX`): the console's signed-out sessions.
   * @defaultValue `stampcard`
   */
  redisPrefix?: string;
  /**
   * Mark the console's session cookie `Secure` (sent over HTTPS only); false where the service is served over
   * plain HTTP to a browser on another machine, as in development (`NODE_ENV=development`).
   * @defaultValue true
   */
  secureCookies?: boolean;
  /**
   * The origin portal links point at (`PUBLIC_URL`).
   * @defaultValue the origin of the request that asks for the link
   */
  publicUrl?: string;
  /**
   * `supportUrl` of error bodies.
   * @defaultValue the errors section of this service's docs page, `<origin>/v1/docs#errors`
   */
  supportUrl?: string;
  /**
   * Rate limits, write slowdown and concurrency limits of `/v1` (see `createRateLimiter`).
   * @defaultValue none: `/v1` is not limited
   */
  limits?: RateLimiter;
  /**
   * Proxies in front of the API that append the client's address to `X-Forwarded-For`
   * (`TRUSTED_PROXY_HOPS`). The concurrency limit counts the address the outermost of them saw.
   * @defaultValue 0: the socket's peer counts and `X-Forwarded-For` is ignored
   */
  trustedProxyHops?: number;
  /**
   * Answer with a `Server-Timing` header: the request's total and the stages core measures (`Ctx.spans`).
   * @defaultValue false
   */
  serverTiming?: boolean;
  /**
   * Middleware run on every `/v1` request after authentication and the limits (tests put faults here).
   * @defaultValue none
   */
  extraMiddleware?: MiddlewareHandler<AppEnv>[];
  /**
   * Wakes `?wait=true` requests when the worker announces their action applied.
   * @defaultValue none: they poll the ledger
   */
  applied?: AppliedSignal;
  /**
   * Longest `?wait=true` waits for an action to be applied, in ms.
   * @defaultValue 10000
   */
  maxWaitMs?: number;
  /**
   * Longest the API works on a request before it answers 503 UNAVAILABLE, in ms (`?wait=true` requests get
   * `maxWaitMs` on top). Writes the request has not made by then are not made.
   * @defaultValue 5000
   */
  requestTimeoutMs?: number;
  /**
   * Requests this process works on at once (`MAX_REQUESTS_IN_FLIGHT`), across `/v1`, `/admin`, the console and
   * the portal; one more is answered 503 UNAVAILABLE at once, with `Retry-After: 1`, and nothing is done.
   * @defaultValue 512
   */
  maxRequestsInFlight?: number;
  /**
   * The pool's statement timeout (`DB_STATEMENT_TIMEOUT_MS`): a request whose COMMIT is in flight when its
   * deadline passes waits this long plus a second for the outcome before answering that it is unknown.
   * @defaultValue 3000
   */
  statementTimeoutMs?: number;
  /**
   * Exports (`…/export`) streaming at once in this process (`EXPORT_CONCURRENCY`): each holds a database
   * connection while its reader reads; one more is refused 429.
   * @defaultValue 2
   */
  exportConcurrency?: number;
  /**
   * Import uploads (`…/participants/imports`) streaming in at once in this process (`IMPORT_CONCURRENCY`): each
   * holds a database connection in a transaction while its file arrives; one more is refused 429.
   * @defaultValue 2
   */
  importConcurrency?: number;
  /**
   * The process's metrics, served at `/metrics`, and what the API counts into them.
   * @defaultValue none: nothing is counted, and `/metrics` answers 403
   */
  metrics?: ApiMetrics;
  /**
   * `METRICS_TOKEN`: the bearer token `/metrics` asks for.
   * @defaultValue none: `/metrics` answers 403 to everyone
   */
  metricsToken?: string;
  /**
   * How long each kind of row is kept (`EVENT_RETENTION_DAYS`, `ATTEMPT_RETENTION_DAYS`, `AUDIT_RETENTION_DAYS`),
   * for what the operator API and the console show; the worker does the dropping.
   * @defaultValue 90, 30 and 365 days
   */
  retention?: RetentionPolicy;
  /**
   * Trace every request and hand its `traceparent` on with what it commits (`OTEL_EXPORTER_OTLP_ENDPOINT` is
   * set: the process started a tracer provider).
   * @defaultValue false
   */
  tracing?: boolean;
};

/** The API's metric sets, in the process's registry. */
export type ApiMetrics = { registry: Registry; http: HttpMetrics; accept: AcceptMetrics };

export type AppEnv = {
  /** `TimingVariables`: the `Server-Timing` middleware's own, when `Deps.serverTiming` is on. */
  Variables: Partial<TimingVariables> & {
    deps: Deps;
    ctx: Ctx;
    /** How triggers record their actions: batched across concurrent requests (see `createApp`). */
    trigger: TriggerOptions;
    requestId: string;
    /** The process's export slots (`Deps.exportConcurrency`). */
    exportSlots: Slots;
    /** The process's import upload slots (`Deps.importConcurrency`). */
    importSlots: Slots;
    principal: Principal;
    /** Set on console requests once their session cookie was verified. */
    consoleSession?: ConsoleSession;
    /** Set on portal requests once their link was verified: its grant and the link's token. */
    portal?: PortalGrant & { token: string };
    accountId?: string;
    /**
     * Set by a route once its durable write committed: the answer to give if the request deadline passes
     * after that point (the write happened, so "nothing was accepted" would be wrong).
     */
    lateReply?: () => Response;
    /**
     * Set by a route whose answer carries a secret shown once (an API key, a webhook signing secret): the
     * top-level fields of its JSON answer that the Idempotency-Key store must never keep (see `withholdSecrets`).
     */
    secretFields?: readonly string[];
    /** Set by the request deadline: gives the request `ms` more (the write slowdown holds it that long). */
    extendDeadline?: (ms: number) => void;
    /**
     * Set by the request deadline once it answered without the work: the work's end is logged by the deadline,
     * once, and not again by `handleError`.
     */
    abandoned?: true;
    /** Set by whatever answers 429 for a limit: the limit's name, counted by the request metrics. */
    refusedBy?: string;
  };
};

export type App = OpenAPIHono<AppEnv>;
