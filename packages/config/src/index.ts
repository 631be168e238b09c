import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from './errors';
import type { LogFormat } from './logger';

const intFromEnv = (fallback: number, min = 0) =>
  z.coerce.number().int().min(min).max(2_147_483_647).default(fallback);

/** `host:port,host:port`: a list of addresses, each checked; at most 64. */
function hostPorts(raw: string, name: string, ctx: z.RefinementCtx): { host: string; port: number }[] {
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const out: { host: string; port: number }[] = [];
  for (const item of list.slice(0, 64)) {
    const m = /^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]+\]):(\d{1,5})$/.exec(item);
    const port = Number(m?.[2]);
    if (!m || port < 1 || port > 65_535) {
      ctx.addIssue({ code: 'custom', message: `${name}: "${item.slice(0, 40)}" is not host:port` });
      return [];
    }
    out.push({ host: m[1]!.replace(/^\[|\]$/g, ''), port });
  }
  if (out.length === 0 || list.length > 64)
    ctx.addIssue({ code: 'custom', message: `${name}: 1 to 64 host:port, separated by commas` });
  return out;
}

/** Every setting the apps read from the environment, with its default. */
export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** PostgreSQL connection string. Default: the local server, database `stampcard`. */
  DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/stampcard'),
  /**
   * What stands between the service and PostgreSQL at `DATABASE_URL`: `none`, or `transaction` for PgBouncer (or
   * another pooler) in transaction mode. With `transaction`, statements are not prepared, connections send no
   * session settings (give the role its `statement_timeout`, `lock_timeout` and
   * `idle_in_transaction_session_timeout`, see docs/scaling.md), and what needs a session of its own (migrations,
   * partition maintenance) goes to `DATABASE_DIRECT_URL`.
   * @defaultValue none
   */
  DATABASE_POOLER: z.enum(['none', 'transaction']).default('none'),
  /**
   * PostgreSQL itself, past the pooler: migrations and partition maintenance connect here. Required with
   * `DATABASE_POOLER=transaction`.
   * @defaultValue `DATABASE_URL`
   */
  DATABASE_DIRECT_URL: z.url().optional(),
  /**
   * A read replica of `DATABASE_URL` (a streaming standby): the API reads the participants list, the leaderboards,
   * the event feed and the audit log there while it lags at most `DATABASE_READ_MAX_LAG_MS`, and from the primary
   * otherwise. Everything else, every write included, goes to `DATABASE_URL` (docs/scaling.md, "A read replica").
   * @defaultValue unset: every read goes to `DATABASE_URL`
   */
  DATABASE_READ_URL: z.url().optional(),
  /**
   * The most the replica may lag behind the primary, in ms, for reads to go to it (measured every second).
   * @defaultValue 5000
   */
  DATABASE_READ_MAX_LAG_MS: intFromEnv(5000),
  /** Redis connection string. Redis must run with `maxmemory-policy noeviction`. */
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  /**
   * A Redis Cluster instead of `REDIS_URL`: some of its nodes, `host:port,host:port,…` (the client finds the
   * rest). When set, it wins over `REDIS_URL`; the password and TLS of `REDIS_URL`, if any, are used for each.
   * @defaultValue unset
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .transform((s, ctx) => hostPorts(s, 'REDIS_CLUSTER_NODES', ctx))
    .optional(),
  /**
   * Redis Sentinel instead of `REDIS_URL`: its sentinels, `host:port,host:port,…`, with `REDIS_SENTINEL_NAME`.
   * `REDIS_CLUSTER_NODES` wins over it; it wins over `REDIS_URL` (whose password, if any, is the master's).
   * @defaultValue unset
   */
  REDIS_SENTINELS: z
    .string()
    .transform((s, ctx) => hostPorts(s, 'REDIS_SENTINELS', ctx))
    .optional(),
  /** The master's name the sentinels know (`sentinel monitor <name> …`). @defaultValue mymaster */
  REDIS_SENTINEL_NAME: z.string().min(1).default('mymaster'),
  /** HTTP port of the API. Default 3000. */
  PORT: intFromEnv(3000),
  /**
   * The address the API listens on: this machine only by default; `0.0.0.0` (every interface) where other
   * machines must reach it. The container image sets `0.0.0.0`, and Compose publishes the port on 127.0.0.1.
   * @defaultValue 127.0.0.1
   */
  HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Bearer token of the operator API and dashboard, 16 characters or more. Required in production; elsewhere,
   * when unset, one is generated on the first start and kept in `OPERATOR_TOKEN_FILE` for the next.
   * @defaultValue unset: the token in `OPERATOR_TOKEN_FILE` (outside production)
   */
  OPERATOR_TOKEN: z.string().min(16, 'OPERATOR_TOKEN must be at least 16 characters').optional(),
  /**
   * Where a start without `OPERATOR_TOKEN` (outside production) keeps the token it generated, so the next start
   * uses the same one (mode 0600; see `keepOperatorToken`). Relative to the directory the service starts in.
   * @defaultValue .stampcard/operator-token
   */
  OPERATOR_TOKEN_FILE: z.string().min(1).default('.stampcard/operator-token'),
  /**
   * Bearer token of `/metrics` on every role (Prometheus's `authorization` credentials), 16 characters or more.
   * Unset, `/metrics` answers 403 `METRICS_DISABLED` to everyone.
   * @defaultValue unset
   */
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  /**
   * The port of the small listener a worker or a dispatcher process serves `/metrics`, `/livez` and `/readyz`
   * on (the API serves them on `PORT`), on `HOST`; `0` turns it off. `npm start` gives it to the worker and
   * `METRICS_PORT + 1` to the dispatcher.
   * @defaultValue 9464
   */
  METRICS_PORT: z.coerce.number().int().min(0).max(65_534).default(9464),
  /**
   * OpenTelemetry: the OTLP/HTTP collector's base URL (spans go to `<it>/v1/traces`). Unset, nothing is traced.
   * @defaultValue unset
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  /** Prefix of every BullMQ key in Redis. Default `stampcard`. */
  QUEUE_PREFIX: z.string().min(1).default('stampcard'),
  /**
   * The hot queue (`loyalty-action-batches`, every accepted action) split in this many queues, 1 to 16: on a Redis
   * Cluster each is a slot of its own, so its work spreads over the masters instead of loading one. The same on
   * every process of a deployment; lower it only once the queues it drops are empty (docs/scaling.md).
   * @defaultValue 1
   */
  QUEUE_SHARDS: z.coerce.number().int().min(1).max(16).default(1),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * How logs are written: `json`, one JSON object per line (for a log collector), or `pretty`, readable lines
   * for a terminal (pino-pretty). Production logs are JSON: `pretty` is refused with `NODE_ENV=production`.
   * @defaultValue `pretty` when the environment sets `NODE_ENV=development`, else `json`
   */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  /**
   * Jobs one worker process holds at once. More than a batch, so that jobs keep arriving while batches commit.
   * @defaultValue 256
   */
  WORKER_CONCURRENCY: intFromEnv(256, 1),
  /**
   * Most actions applied in one transaction (a batch). Batches are as large as the queue is deep: at a steady
   * rate they hold a few actions each, draining a backlog they fill up, and a transaction's fixed cost goes over
   * more actions. On the reference machine 64 applied 6,100-6,400 actions a second, 128 8,000-8,500 and 256
   * 9,200-9,400, but 256 made the webhooks after a burst of applies come in bursts too (end-to-end p99 324-346 ms
   * at 1,000 actions/s, against 180-194 with 128).
   * @defaultValue 128
   */
  WORKER_BATCH_SIZE: intFromEnv(128, 1),
  /** Longest a worker waits to fill a batch, in ms. Default 2. */
  WORKER_BATCH_WAIT_MS: intFromEnv(2),
  /** How often the relay looks for accepted actions that are not in the queue, in ms. Default 5000. */
  RELAY_INTERVAL_MS: intFromEnv(5000, 50),
  /** An accepted action younger than this is left to the API's own enqueue. Default 10000. */
  RELAY_GRACE_MS: intFromEnv(10_000),
  /**
   * Longest a statement may run or wait for a lock before PostgreSQL cancels it (the API answers 503), in ms.
   * @defaultValue 3000
   */
  DB_STATEMENT_TIMEOUT_MS: intFromEnv(3000, 100),
  /**
   * Longest the API works on a request before answering 503 UNAVAILABLE, in ms; `?wait=true` requests get
   * their wait on top. Writes not yet made when it passes are not made.
   * @defaultValue 5000
   */
  REQUEST_TIMEOUT_MS: intFromEnv(5000, 100),
  /**
   * Requests one API process works on at once; one more is answered 503 UNAVAILABLE at once (`Retry-After: 1`)
   * and nothing is done, so that a flood of connections cannot hold every request past its deadline.
   * @defaultValue 512
   */
  MAX_REQUESTS_IN_FLIGHT: intFromEnv(512, 1),
  /**
   * Exports (`GET …/participants/export`) streaming at once in one API process: each holds a database
   * connection while its reader reads; one more is refused 429.
   * @defaultValue 2
   */
  EXPORT_CONCURRENCY: intFromEnv(2, 1),
  /**
   * Import uploads streaming in at once per API process (each holds a database connection in a transaction);
   * one more is refused 429.
   * @defaultValue 2
   */
  IMPORT_CONCURRENCY: intFromEnv(2, 1),
  /**
   * Days the audit log keeps an entry: the worker drops a month of it once all of that month is older.
   * @defaultValue 365
   */
  AUDIT_RETENTION_DAYS: intFromEnv(365, 1),
  /**
   * Days events and their webhook messages (payloads, statuses) are kept: the worker drops a week of them once
   * all of that week is older. Replays and the event feed answer clearly for what is past it.
   * @defaultValue 90
   */
  EVENT_RETENTION_DAYS: intFromEnv(90, 1),
  /**
   * Days webhook delivery attempts (answers, latencies, errors) are kept; dropped a week at a time likewise.
   * @defaultValue 30
   */
  ATTEMPT_RETENTION_DAYS: intFromEnv(30, 1),
  /**
   * A worker's job lock, in ms: the jobs of a worker that died are taken over by another within about
   * 1.5 times this (the lock runs out, then the next stalled-job check finds them).
   * @defaultValue 10000
   */
  WORKER_LOCK_MS: intFromEnv(10_000, 1000),
  /**
   * A worker process touches this file every 5 s while it runs and reaches Redis: the container healthcheck
   * reads its age.
   * @defaultValue unset: no heartbeat file
   */
  HEARTBEAT_FILE: z.string().min(1).optional(),
  /**
   * Register and deliver webhooks to private, loopback, link-local and other non-public addresses (local
   * receivers, tests). The API reads it when an endpoint is registered, the dispatcher at every delivery: set it
   * for both (a refused registration names it).
   * @defaultValue false
   */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /**
   * The DNS servers the dispatcher resolves webhook destinations with, comma-separated `ip` or `ip:port`
   * (`[ipv6]:port`). Unset: the system's, from /etc/resolv.conf.
   */
  WEBHOOK_DNS_SERVERS: z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.split(',').map((s) => s.trim()) : undefined))
    .refine(
      (list) => !list || list.every((s) => isIP(s) !== 0 || /^(\[[0-9a-fA-F:.]+\]|[0-9.]+):\d{1,5}$/.test(s)),
      'comma-separated IP addresses, each optionally with :port ([ipv6]:port)',
    ),
  /**
   * Longest one look-up of a webhook destination's host name may take, in ms; past it the attempt fails as a
   * DNS error. Look-ups run on the event loop (c-ares), not on libuv's four-thread pool.
   * @defaultValue 5000
   */
  WEBHOOK_DNS_TIMEOUT_MS: intFromEnv(5000, 100),
  /**
   * The delays before each retry of a failed delivery, in ms, comma-separated; a message is attempted once
   * plus once per entry, then dead-lettered. Each delay gets ±10 % jitter.
   * @defaultValue 0,5000,300000,1800000,7200000,18000000,36000000,36000000 (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h)
   */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d{1,10}(\s*,\s*\d{1,10}){0,49}\s*$/, 'comma-separated delays in ms (at most 50)')
    .default('0,5000,300000,1800000,7200000,18000000,36000000,36000000')
    .transform((v) => v.split(',').map((d) => Number(d.trim()))),
  /**
   * Longest a delivery may take, connection to last byte read, in ms.
   * @defaultValue 15000
   */
  WEBHOOK_TIMEOUT_MS: intFromEnv(15_000, 100),
  /**
   * An endpoint whose attempts have all failed for this long is disabled, in ms.
   * @defaultValue 432000000 (5 days)
   */
  WEBHOOK_DISABLE_AFTER_MS: intFromEnv(5 * 24 * 3600 * 1000, 1000),
  /**
   * The least a throttled answer (429 or 503 with Retry-After) holds its endpoint, in ms, however short its
   * Retry-After (`0` or a date in the past included). It grows with the endpoint's run of throttled answers:
   * as long as the run has lasted, up to the retry schedule's longest delay and at most an hour.
   * @defaultValue 1000
   */
  WEBHOOK_THROTTLE_FLOOR_MS: intFromEnv(1000, 100),
  /**
   * Throttled answers an endpoint may give since its last success before each further one counts as a failed
   * attempt: on its message's retry schedule (to the dead letter) and toward disabling the endpoint.
   * @defaultValue 10
   */
  WEBHOOK_FREE_THROTTLES: intFromEnv(10),
  /**
   * Deliveries one dispatcher process makes at once.
   * @defaultValue 64
   */
  DISPATCHER_CONCURRENCY: intFromEnv(64, 1),
  /**
   * The most deliveries one dispatcher process makes at once to a single endpoint. Each delivery that times out
   * or cannot connect halves that endpoint's share (down to 1), each answer widens it by one again, so a
   * hanging endpoint soon holds a single slot and the others keep flowing.
   * @defaultValue 32
   */
  WEBHOOK_ENDPOINT_CONCURRENCY: intFromEnv(32, 1),
  /**
   * The most messages one batch of an endpoint's backlog operation handles (releasing the messages it held when
   * it is enabled, discarding its pending ones, deleting them with it): one statement and one enqueue each, well
   * under `DB_STATEMENT_TIMEOUT_MS`, whatever the backlog.
   * @defaultValue 1000
   */
  WEBHOOK_BACKLOG_BATCH: z.coerce.number().int().min(10).max(50_000).default(1000),
  /**
   * How often the dispatcher sweeps the outbox for events not yet fanned out and messages whose job is
   * missing, in ms.
   * @defaultValue 1000
   */
  DISPATCH_SWEEP_MS: intFromEnv(1000, 50),
  /**
   * How long an API process trusts what it read of an API key (its user, account, plan) or a campaign, in ms;
   * 0 reads PostgreSQL on every request. Every change (a key revoked, a campaign changed) drops the entry in
   * every API process at once through Redis; the TTL only bounds what a process could miss while Redis is away.
   * @defaultValue 5000
   */
  LOOKUP_CACHE_MS: intFromEnv(5000),
  /**
   * Proxies in front of the API that append the client's address to `X-Forwarded-For`: the concurrency limit
   * counts the address the outermost of them saw. 0 (off): the socket's peer counts and the header is ignored,
   * since any client can write it.
   * @defaultValue 0
   */
  TRUSTED_PROXY_HOPS: intFromEnv(0),
  /**
   * Longest the API waits for Redis to decide a request's rate limits, in ms; past it the request goes through
   * unlimited (limits fail open, a warning is logged once a minute).
   * @defaultValue 250
   */
  RATE_LIMIT_TIMEOUT_MS: intFromEnv(250, 1),
  /**
   * Answer every API request with a `Server-Timing` header: its total and, on the trigger routes, each stage
   * of the accept (`limits`, `campaign`, `accept-wait`, `accept-run`, `hand-off`, `release`), in ms. For
   * profiling (`npm run bench` sets it); it tells callers how the time was spent, so it is off by default.
   * @defaultValue false
   */
  SERVER_TIMING: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** Error bodies carry `supportUrl`; default: the errors section of this service's docs page, `/v1/docs#errors`. */
  SUPPORT_URL: z.url().optional(),
  /**
   * The address browsers reach this service at (scheme, host, port), for the portal links
   * `POST /v1/portal-sessions` hands out, such as `https://loyalty.example.com`; set it behind a proxy.
   * @defaultValue the origin of the request that asks for the link
   */
  PUBLIC_URL: z
    .url()
    .refine((u) => /^https?:\/\/[^/?#]+\/?$/.test(u), 'an origin: http(s)://host[:port], no path')
    .transform((u) => u.replace(/\/$/, ''))
    .optional(),
});

export type Env = z.infer<typeof envSchema>;
export type Config = Omit<Env, 'LOG_FORMAT'> & {
  LOG_FORMAT: LogFormat;
  OPERATOR_TOKEN: string;
  /** True when the environment set no token (it is printed at start). */
  operatorTokenGenerated: boolean;
  /** The file the token was read from or written to, when `keepOperatorToken` kept it in one. */
  operatorTokenFile?: string;
};

export { ConfigError };

type RawEnv = Record<string, string | undefined>;

/**
 * The settings of `schema` from `env`: unset and empty variables take their defaults. Each problem is one
 * line naming the variable, never echoing its value (it may be a secret).
 */
function parseEnv<T extends z.ZodType>(schema: T, env: RawEnv): z.infer<T> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) => `Invalid environment variable ${i.path.join('.')}: ${i.message}`,
    );
    throw new ConfigError(lines.join('\n'));
  }
  return parsed.data;
}

/**
 * Parses the environment once, at start. A wrong value stops the process with a message that names it.
 * In production OPERATOR_TOKEN is required; elsewhere a random one is generated (and flagged so it is printed):
 * `keepOperatorToken` then keeps it in a file, so that every start uses the same one.
 */
export function loadConfig(env: RawEnv = process.env): Config {
  const parsed = parseEnv(envSchema, env);
  if (parsed.DATABASE_POOLER === 'transaction' && !parsed.DATABASE_DIRECT_URL) {
    throw new ConfigError(
      'Invalid environment variable DATABASE_DIRECT_URL: required with DATABASE_POOLER=transaction (migrations and partition maintenance need PostgreSQL itself)',
    );
  }
  // NODE_ENV's own default is development: only an environment that says so asks for pretty logs.
  const cfg = { ...parsed, LOG_FORMAT: parsed.LOG_FORMAT ?? logFormatFor(env.NODE_ENV) };
  if (cfg.NODE_ENV === 'production' && cfg.LOG_FORMAT === 'pretty') {
    throw new ConfigError(
      'Invalid environment variable LOG_FORMAT: pretty is for development; production logs are JSON (LOG_FORMAT=json)',
    );
  }
  if (cfg.OPERATOR_TOKEN)
    return { ...cfg, OPERATOR_TOKEN: cfg.OPERATOR_TOKEN, operatorTokenGenerated: false };
  if (cfg.NODE_ENV === 'production') {
    throw new ConfigError(
      'Invalid environment variable OPERATOR_TOKEN: required in production (16 or more characters)',
    );
  }
  return { ...cfg, OPERATOR_TOKEN: `op_${randomBytes(24).toString('hex')}`, operatorTokenGenerated: true };
}

const logFormatFor = (nodeEnv: string | undefined): LogFormat =>
  nodeEnv === 'development' ? 'pretty' : 'json';

export * from './logger';
export { keepOperatorToken } from './operator-token';

/** What a migration needs and nothing else: `npm run db:migrate` runs without the service's secrets. */
export function loadDatabaseConfig(
  env: RawEnv = process.env,
): Pick<Env, 'DATABASE_URL' | 'DATABASE_DIRECT_URL'> {
  return parseEnv(envSchema.pick({ DATABASE_URL: true, DATABASE_DIRECT_URL: true }), env);
}

/** Where what needs PostgreSQL itself connects: `DATABASE_DIRECT_URL`, or `DATABASE_URL` without a pooler. */
export const directDatabaseUrl = (config: {
  DATABASE_URL: string;
  DATABASE_DIRECT_URL?: string | undefined;
}) => config.DATABASE_DIRECT_URL ?? config.DATABASE_URL;
