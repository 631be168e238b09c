import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from '@stampcard/config';
import type { AppliedSignal, Clock, Ctx, LookupCache, Principal, TriggerOptions } from '@stampcard/core';
import type { Database } from '@stampcard/db';
import type { Queues } from '@stampcard/jobs';
import type { MiddlewareHandler } from 'hono';
import type { Redis } from 'ioredis';
import type { ConsoleSession } from './console/session';
import type { ExportSlots } from './lib/export-slots';
import type { RateLimiter } from './limits/limiter';
import type { PortalGrant } from './portal/link';

/** Everything the API needs, built once at start (tests build their own). */
export type Deps = {
  db: Database;
  redis: Redis;
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
};

export type AppEnv = {
  Variables: {
    deps: Deps;
    ctx: Ctx;
    /** How triggers record their actions: batched across concurrent requests (see `createApp`). */
    trigger: TriggerOptions;
    requestId: string;
    /** The process's export slots (`Deps.exportConcurrency`). */
    exportSlots: ExportSlots;
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
  };
};

export type App = OpenAPIHono<AppEnv>;
