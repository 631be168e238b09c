import { randomUUID } from 'node:crypto';
import type { Logger } from '@stampcard/config';
import {
  type Clock,
  type EffectiveLimits,
  type PolicyCount,
  RATE_POLICIES,
  type RatePolicyName,
  type RateVerdict,
  SLOWDOWN_STEP_MS,
} from '@stampcard/core';
import { createRedis, type RedisClient, type RedisTarget } from '@stampcard/jobs';
import { ADMIT, LEASE_ONLY } from './scripts';

type LimiterRedis = RedisClient & {
  stampcardAdmit(...args: (string | number)[]): Promise<number[]>;
  stampcardLease(key: string, now: string, limit: number, id: string, ms: number): Promise<number>;
};

/** A slot held by a request in flight; give it back with `release` when the request ends. */
export type Lease = { key: string; id: string };

/** A keyed request, as the limiter needs it. */
export type AdmitInput = {
  apiKeyId: string;
  accountId: string;
  clientIp: string;
  write: boolean;
  limits: EffectiveLimits;
  /** Longest the request may take, so a lease outlives it; the slowdown is added on top. */
  budgetMs: number;
};

/** `null` when Redis could not be asked: the request goes on unlimited (limits fail open). */
export type Admission = (RateVerdict & { lease: Lease | null }) | null;

export type RateLimiter = {
  /** Checks and counts a keyed request: its three rate windows, its write slowdown and its concurrency slot. */
  admit(input: AdmitInput): Promise<Admission>;
  /**
   * A slot for a request whose key is not known valid yet, counted per client IP. `null`: RedisClient could not be
   * asked; `false`: the IP's slots are taken.
   */
  admitAnonymous(clientIp: string, limit: number, budgetMs: number): Promise<Lease | false | null>;
  /**
   * Gives a slot back: written to Redis in the microtask after the first slot given back in this turn, with every
   * other given back by then, in one socket write; resolves once Redis has answered. Never rejects: a slot that
   * could not be given back expires by itself. A request does not wait for it, but its answer is written after
   * it, so a client that sends its next request once it has the answer finds its slot free, on whichever API
   * process.
   */
  release(lease: Lease): Promise<void>;
  /** Since when Redis has not answered the limiter, if it has not; null while it answers. */
  failingSince(): Date | null;
};

export type RateLimiterOptions = {
  /**
   * The limiter's own connection (`limiterConnection`): its `commandTimeout` is the longest a request waits
   * for its limits before it goes through unlimited.
   */
  redis: RedisClient;
  /** Keys live under `<prefix>:limits:`, so stacks sharing a Redis do not count each other's requests. */
  prefix: string;
  logger: Logger;
  /**
   * Where time comes from. Tests pass a manual clock to walk window edges.
   * @defaultValue Redis's own clock, so that API processes on hosts whose clocks differ agree
   */
  clock?: Clock;
  /**
   * A lease outlives its request's time budget by this much, in ms, before it expires by itself.
   * @defaultValue 5000
   */
  leaseMarginMs?: number;
  /**
   * The fail-open warning is logged at most once per this many ms.
   * @defaultValue 60000
   */
  warnEveryMs?: number;
};

/**
 * A connection for the limiter alone. Its commands give up after `timeoutMs` (then the request goes through
 * unlimited), fail at once while it is down (no offline queue), and the admissions are auto-pipelined: those
 * of concurrent requests leave in one socket write, which is most of what a limit costs the API. Releases
 * (`zrem`) are not: auto-pipelining waits for the event loop's next turn, after the answers are written, and
 * a caller whose next request goes to another API process must find its slot free. The limiter writes the
 * slots given back in one turn together, itself, in the microtask after the first of them (`release`).
 */
export function limiterConnection(target: RedisTarget | string, timeoutMs: number): RedisClient {
  const redis = createRedis(
    target,
    {
      enableAutoPipelining: true,
      autoPipeliningIgnoredCommands: ['zrem'],
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: timeoutMs,
    },
    // On a Redis Cluster, a slot whose master is failing over is not waited for: the limit fails open.
    { maxRedirections: 1, retryDelayOnClusterDown: 0, retryDelayOnFailover: 0, retryDelayOnTryAgain: 0 },
  );
  return redis;
}

const VERDICTS: (RatePolicyName | 'CONCURRENCY' | null)[] = [null, 'SECOND', 'MINUTE', 'HOUR', 'CONCURRENCY'];

/**
 * Rate limits, write slowdown and concurrency shared by every API process through Redis (see `./scripts`).
 * When Redis does not answer, requests go through unlimited (PostgreSQL is the record, so actions are still
 * accepted); a warning is logged once a minute while that lasts, and limits resume by themselves.
 */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const r = opts.redis as LimiterRedis;
  if (typeof r.stampcardAdmit !== 'function') {
    r.defineCommand('stampcardAdmit', { numberOfKeys: 5, lua: ADMIT });
    r.defineCommand('stampcardLease', { numberOfKeys: 1, lua: LEASE_ONLY });
  }
  const margin = opts.leaseMarginMs ?? 5000;
  const warnEvery = opts.warnEveryMs ?? 60_000;
  // One call's keys share a hash tag (the account, or the client IP), so on a Redis Cluster they lie in one slot
  // and its script stays one round trip; different accounts spread over the slots.
  const key = (tag: string, ...parts: string[]) => `${opts.prefix}:limits:{${tag}}:${parts.join(':')}`;
  const now = () => (opts.clock ? String(opts.clock.now().getTime()) : '');
  let failing: Date | null = null;
  let warnedAt = 0;

  const ask = async <T>(run: () => Promise<T>): Promise<T | null> => {
    try {
      // Without a connection, fail at once rather than wait for a timeout.
      if (r.status !== 'ready') throw new Error(`Redis connection is ${r.status}`);
      const result = await run();
      if (failing) {
        opts.logger.info(
          { downMs: Date.now() - failing.getTime() },
          'rate limits resumed: RedisClient answers again',
        );
        failing = null;
      }
      return result;
    } catch (err) {
      failing ??= new Date();
      if (Date.now() - warnedAt >= warnEvery) {
        warnedAt = Date.now();
        opts.logger.warn(
          { err },
          'rate limits fail open: RedisClient does not answer, requests go through unlimited',
        );
      }
      return null;
    }
  };

  /** Slots given back in the current turn, by key, and when Redis has answered for them. */
  let releasing: { byKey: Map<string, string[]>; answered: Promise<void> } | null = null;

  /** One `zrem` per key, all in one socket write where the connection allows it. Never rejects. */
  const giveBack = async (byKey: Map<string, string[]>) => {
    if (r.status !== 'ready') return;
    try {
      // A Redis Cluster takes a pipeline only within one slot; its keys' slots differ by account and IP.
      if (byKey.size === 1 || r.isCluster) {
        await Promise.all([...byKey].map(([k, ids]) => r.zrem(k, ...ids)));
      } else {
        const pipeline = r.pipeline();
        for (const [k, ids] of byKey) pipeline.zrem(k, ...ids);
        await pipeline.exec();
      }
    } catch {
      // The leases expire by themselves.
    }
  };

  const release = (lease: Lease): Promise<void> => {
    if (!releasing) {
      const byKey = new Map<string, string[]>();
      let settle!: () => void;
      const answered = new Promise<void>((resolve) => {
        settle = resolve;
      });
      releasing = { byKey, answered };
      // Written in the next microtask: after the slots the same turn gives back (the requests a group commit
      // answered together), before anything their callers do after their next await, such as writing their
      // answers.
      queueMicrotask(() => {
        releasing = null;
        void giveBack(byKey).then(settle);
      });
    }
    const ids = releasing.byKey.get(lease.key);
    if (ids) ids.push(lease.id);
    else releasing.byKey.set(lease.key, [lease.id]);
    return releasing.answered;
  };
  // A script that timed out here may still run once Redis answers again, and take its lease: the release goes
  // after it on the same connection, so no request is left holding a slot it never had.
  const abandon = (lease: Lease) => void release(lease);

  return {
    async admit(input) {
      const id = randomUUID();
      const leases = key(input.accountId, 'inflight', input.clientIp);
      const raw = await ask(() =>
        r.stampcardAdmit(
          key(input.accountId, 'rate', input.apiKeyId, 'second'),
          key(input.accountId, 'rate', input.apiKeyId, 'minute'),
          key(input.accountId, 'rate', input.apiKeyId, 'hour'),
          key(input.accountId, 'rate', input.apiKeyId, 'writes'),
          leases,
          now(),
          input.limits.second,
          input.limits.minute,
          input.limits.hour,
          input.write ? '1' : '0',
          input.limits.slowdownAfter,
          SLOWDOWN_STEP_MS,
          input.limits.concurrency,
          id,
          input.budgetMs + margin,
        ),
      );
      if (!raw) {
        abandon({ key: leases, id });
        return null;
      }
      const counts = {} as Record<RatePolicyName, PolicyCount>;
      RATE_POLICIES.forEach((p, i) => {
        counts[p.name] = {
          used: Number(raw[2 + i]),
          retryAfterMs: Math.max(0, Number(raw[5 + i])),
          resetMs: Math.max(0, Number(raw[8 + i])),
        };
      });
      const policy = VERDICTS[Number(raw[0])] ?? null;
      if (policy) return { admitted: false, policy, counts, lease: null };
      return { admitted: true, counts, slowdownMs: Number(raw[1]), lease: { key: leases, id } };
    },

    async admitAnonymous(clientIp, limit, budgetMs) {
      const id = randomUUID();
      const leases = key(`ip:${clientIp}`, 'inflight');
      const taken = await ask(() => r.stampcardLease(leases, now(), limit, id, budgetMs + margin));
      if (taken === null) {
        abandon({ key: leases, id });
        return null;
      }
      return taken === 1 ? { key: leases, id } : false;
    },

    release,

    failingSince: () => failing,
  };
}
