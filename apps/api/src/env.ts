import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from '@stampcard/config';
import type { Clock, Ctx, Principal } from '@stampcard/core';
import type { Database } from '@stampcard/db';
import type { Queues } from '@stampcard/jobs';
import type { MiddlewareHandler } from 'hono';
import type { Redis } from 'ioredis';

/** Everything the API needs, built once at start (tests build their own). */
export type Deps = {
  db: Database;
  redis: Redis;
  queues: Queues;
  clock: Clock;
  logger: Logger;
  operatorToken: string;
  /** `supportUrl` of error bodies. Default: this service's `/docs` page. */
  supportUrl?: string;
  /**
   * Middleware run on every `/v1` request after authentication: the slot for rate limits and
   * slowdowns. Default: none.
   */
  limiters?: MiddlewareHandler<AppEnv>[];
  /** Longest `?wait=true` waits for an action to be applied, in ms. Default 10000. */
  maxWaitMs?: number;
};

export type AppEnv = {
  Variables: {
    deps: Deps;
    ctx: Ctx;
    requestId: string;
    principal: Principal;
    accountId?: string;
  };
};

export type App = OpenAPIHono<AppEnv>;
