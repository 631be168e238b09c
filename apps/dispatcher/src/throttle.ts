import type { RedisClient } from '@stampcard/jobs';

/**
 * One round trip decides whether an endpoint may be called now, for every dispatcher process at once:
 * - a pause the endpoint asked for (429/503 with Retry-After) answers its remaining ms;
 * - with a rate limit, calls are spaced by 1000 / rate ms (a GCRA with no burst, so no window of one second
 *   ever holds more than `rate` calls): the answer is the ms until the next free slot, or 0 when this call
 *   took the slot.
 * Redis's own clock is used, so processes on hosts whose clocks differ still agree.
 */
const GATE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then return paused end
local interval = tonumber(ARGV[1])
if interval <= 0 then return 0 end
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat > now then return tat - now end
redis.call('SET', KEYS[1], now + interval, 'PX', interval + 1000)
return 0
`;

/**
 * Holds an endpoint for at least ARGV[1] ms: a pause already longer is kept (answers of one burst arrive in any
 * order, and a short one must not cut a long one). Answers the pause now in force, in ms.
 */
const PAUSE = `
local ms = tonumber(ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left >= ms then return left end
redis.call('SET', KEYS[1], '1', 'PX', ms)
return ms
`;

type GateRedis = RedisClient & {
  stampcardGate(rateKey: string, pauseKey: string, intervalMs: number): Promise<number>;
  stampcardPause(pauseKey: string, ms: number): Promise<number>;
};

export type EndpointGate = {
  /** Ms to wait before calling the endpoint (0: go now, and the slot is taken). */
  wait(endpointId: string, rateLimit: number | null): Promise<number>;
  /**
   * The endpoint asked to be left alone (Retry-After, at least the throttle floor): every dispatcher holds off
   * for `ms`, or longer if a longer pause is already in force.
   */
  pause(endpointId: string, ms: number): Promise<void>;
};

/**
 * Endpoints whose pause, lane pace or booked turn a dispatcher process remembers, each; past it, that memory
 * starts over, and the process treats every endpoint as one it has just met (its pause read again from Redis,
 * its lane's pace measured again, its turns booked afresh), so that memory stays bounded whatever the number of
 * endpoints.
 */
export const ENDPOINTS_REMEMBERED = 10_000;

/** Sets `key` in `map`, which starts over first when the key is new and `limit` keys are there already. */
export function rememberAtMost<K, V>(map: Map<K, V>, key: K, value: V, limit = ENDPOINTS_REMEMBERED): void {
  if (map.size >= limit && !map.has(key)) map.clear();
  map.set(key, value);
}

/** How long this process trusts what it last read of an endpoint's pause (no rate limit), in ms. */
const PAUSE_CACHE_MS = 250;

/**
 * The shared per-endpoint gate, in Redis under `<prefix>:webhooks:{<endpointId>}:…`. An endpoint without a rate limit only
 * needs its pause, which is read at most every 250 ms per process: a pause set by another dispatcher is seen
 * that much later at most, and the common delivery makes no Redis round trip for it.
 */
export function createEndpointGate(redis: RedisClient, prefix: string): EndpointGate {
  const r = redis as GateRedis;
  if (typeof r.stampcardGate !== 'function') {
    redis.defineCommand('stampcardGate', { numberOfKeys: 2, lua: GATE });
    redis.defineCommand('stampcardPause', { numberOfKeys: 1, lua: PAUSE });
  }
  // An endpoint's keys share a hash tag (its id): one slot on a Redis Cluster, for one script.
  const key = (kind: string, id: string) => `${prefix}:webhooks:{${id}}:${kind}`;
  const pauses = new Map<string, { until: number; readAt: number }>();
  // Pauses only ever grow (see PAUSE): a read that left before a pause was set must not cut what is known.
  const remember = (id: string, ms: number) => {
    const now = Date.now();
    const until = Math.max(now + Math.max(0, ms), pauses.get(id)?.until ?? 0);
    rememberAtMost(pauses, id, { until, readAt: now });
    return until - now;
  };
  return {
    async wait(id, rateLimit) {
      if (rateLimit) {
        return r.stampcardGate(key('rate', id), key('pause', id), Math.max(1, Math.floor(1000 / rateLimit)));
      }
      const now = Date.now();
      const known = pauses.get(id);
      if (known && now - known.readAt < PAUSE_CACHE_MS) return Math.max(0, known.until - now);
      return remember(id, await redis.pttl(key('pause', id)));
    },
    async pause(id, ms) {
      if (ms <= 0) return;
      // This process holds off at once, before Redis has answered.
      remember(id, ms);
      remember(id, await r.stampcardPause(key('pause', id), Math.ceil(ms)));
    },
  };
}

type Window = { inFlight: number; limit: number; waiters: (() => void)[] };

/**
 * Deliveries in flight per endpoint in this process, with a window that adapts: it starts at `max`, is halved
 * (down to 1) by each delivery that times out or cannot connect, drops to 1 when the endpoint throttles, and
 * widens by one with each answer. A
 * healthy endpoint can use up to `max` of the process's slots; one that hangs is soon down to a single
 * connection, and its other messages step aside (delayed) so other endpoints' deliveries flow.
 */
export function createInFlight(max: number) {
  const windows = new Map<string, Window>();
  const windowOf = (id: string) => {
    const known = windows.get(id);
    if (known) return known;
    const w: Window = { inFlight: 0, limit: max, waiters: [] };
    windows.set(id, w);
    return w;
  };
  return {
    /**
     * Takes a slot for the endpoint, waiting up to `waitMs` for one to free (a healthy endpoint frees slots
     * within milliseconds). False when none did: the caller puts its job back for later.
     */
    async acquire(id: string, waitMs: number): Promise<boolean> {
      const w = windowOf(id);
      if (w.inFlight < w.limit) {
        w.inFlight += 1;
        return true;
      }
      const freed = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          w.waiters = w.waiters.filter((x) => x !== wake);
          resolve(false);
        }, waitMs);
        w.waiters.push(wake);
      });
      // A woken waiter takes the slot handed to it by `release`.
      return freed;
    },
    /** Whether timeouts have narrowed the endpoint's window below the maximum (it is slow or unreachable). */
    narrowed(id: string): boolean {
      const w = windows.get(id);
      return w !== undefined && w.limit < max;
    },
    /**
     * The endpoint asked to slow down (a throttled answer): its window drops to one delivery at a time, so that
     * when its pause is over one delivery tries it rather than the whole window at once. Answers widen it again.
     */
    throttled(id: string): void {
      windowOf(id).limit = 1;
    },
    /**
     * Gives the slot back; `answered` false (timeout, no connection) narrows the window, true widens it, null
     * (nothing was sent: the delivery stepped aside, or was throttled) leaves it.
     */
    release(id: string, answered: boolean | null): void {
      const w = windowOf(id);
      if (answered !== null) {
        w.limit = answered ? Math.min(max, w.limit + 1) : Math.max(1, Math.floor(w.limit / 2));
      }
      const next = w.inFlight <= w.limit ? w.waiters.shift() : undefined;
      if (next) next();
      else w.inFlight -= 1;
      if (w.inFlight === 0 && w.waiters.length === 0 && w.limit === max) windows.delete(id);
    },
  };
}

/** A batch job's room in its endpoint's lane: handed back a message at a time, as each one's attempt ends. */
export type LaneRoom = {
  /** One message of the job is done with (sent and recorded, stepped aside, or skipped). */
  free(): void;
  /** The job ends: whatever it still holds is handed back. */
  close(): void;
};

/** The soonest a batch job turned away by its endpoint's lane comes back, in ms. */
const COME_BACK_MIN_MS = 50;
/**
 * The latest a batch job turned away by a lane that has handed nothing back for a while comes back, in ms (a
 * hanging endpoint's), before the jitter that spreads them.
 */
const COME_BACK_MAX_MS = 2000;
/**
 * The latest a batch job is given a turn in its endpoint's lane, in ms from when it is turned away. Turns are
 * booked from the pace measured so far, and a lane that speeds up (a replay's first seconds ran at a fifth of
 * its later pace) would stand idle while its jobs were still away: at 10 s, a 20,000-message replay stalled
 * for 7 s with 178 jobs booked (BENCHMARKS.md). At most this long, whatever the pace said.
 */
const TURN_MAX_MS = 2000;
/** A job turned away is given its turn when this share of the messages ahead of it has gone. */
const EARLY = 0.6;
/** A lane's pace (messages handed back per ms) is measured over stretches of at least this long, in ms. */
const PACE_SPAN_MS = 250;

export type BatchLaneOptions = {
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** Spreads the jobs turned away by a hanging endpoint's lane. @defaultValue `Math.random` */
  random?: () => number;
  /** Jobs of this process that may wait in place at once. @defaultValue 0: none waits */
  maxWaiting?: number;
  /**
   * Endpoints whose lane pace, and whose booked turn, are remembered (see `ENDPOINTS_REMEMBERED`).
   * @defaultValue 10000
   */
  rememberedEndpoints?: number;
};

/**
 * Messages of one endpoint that batch jobs hold at once in this process, at most `max` (a job alone may hold
 * more). A replay or a burst queues many batch jobs of one endpoint together: each would load its 64 messages,
 * find the endpoint's window taken by the others, and put most of them back as jobs of their own (a job, a
 * load and a Redis round trip each, for messages that only waited their turn). A batch job that would pass
 * the bound waits for room in place, in turn with the other jobs of its endpoint (`admit`), or steps aside
 * whole, before loading anything, and comes back at its turn (`comeBackMs`). Jobs of one message (an ordered
 * endpoint's next) count one each.
 *
 * Waiting in place is bounded twice: each job waits at most `admit`'s `maxWaitMs`, and at most `maxWaiting`
 * jobs of the process wait at once, so the job slots left over still take other endpoints' jobs. A job turned
 * away costs the process a fetch and a put-back (two BullMQ scripts, and the job's data read again), so it is
 * put back until its turn is likely to have come, from the pace its endpoint's lane keeps: during a replay of
 * one endpoint, the slots left over fetched and turned away the same jobs every 50-100 ms, 40 times each
 * (BENCHMARKS.md).
 */
export function createBatchLanes(max: number, options: BatchLaneOptions = {}) {
  const { now = Date.now, random = Math.random, maxWaiting = 0, rememberedEndpoints: remembered } = options;
  /** Of each endpoint: the messages its running batch jobs hold, and when one was last handed back. */
  const lanes = new Map<string, { held: number; freedAt: number }>();
  /** Of each endpoint: the jobs waiting in place for room, first come first in. */
  const queued = new Map<string, { messages: number; admit: (room: LaneRoom) => void }[]>();
  /**
   * Of each endpoint whose lane jobs have waited for: messages handed back since `since`, and the pace last
   * measured over a stretch of at least `PACE_SPAN_MS` while jobs waited in place, in messages per ms (0: none
   * measured yet). A stretch starts when a line forms (`admit`).
   */
  const paces = new Map<string, { freed: number; since: number; perMs: number }>();
  /** Of each endpoint: when the last job turned away was told its turn would come (epoch ms). */
  const turns = new Map<string, number>();
  let waiting = 0;

  const measure = (id: string, freed: number) => {
    // Only while jobs wait for the lane is its pace what it can take, not what came to it.
    const pace = queued.has(id) ? paces.get(id) : undefined;
    if (!pace) return;
    pace.freed += freed;
    const t = now();
    const span = t - pace.since;
    if (span < PACE_SPAN_MS) return;
    pace.perMs = pace.freed / span;
    pace.freed = 0;
    pace.since = t;
  };

  const take = (id: string, messages: number): LaneRoom | null => {
    const known = lanes.get(id);
    if (known && known.held + messages > max) return null;
    const lane = known ?? { held: 0, freedAt: now() };
    lanes.set(id, lane);
    lane.held += messages;
    let holding = messages;
    const giveBack = (n: number) => {
      if (n <= 0) return;
      holding -= n;
      lane.held -= n;
      lane.freedAt = now();
      measure(id, n);
      if (lane.held === 0) lanes.delete(id);
      letIn(id);
    };
    return {
      free: () => giveBack(Math.min(1, holding)),
      close: () => giveBack(holding),
    };
  };

  /** Lets in the endpoint's waiting jobs, in turn, as long as there is room for the first. */
  const letIn = (id: string) => {
    const line = queued.get(id);
    if (!line) return;
    while (line.length > 0) {
      const room = take(id, line[0]!.messages);
      if (!room) return;
      line.shift()!.admit(room);
    }
    queued.delete(id);
  };

  const enter = (id: string, messages: number): LaneRoom | null =>
    // A job that comes while others wait goes behind them.
    queued.has(id) ? null : take(id, messages);

  return {
    /** Room for a batch job of `messages` messages of the endpoint, or null when its running jobs leave too little. */
    enter,
    /**
     * Room for a batch job, waiting in place for up to `maxWaitMs` behind the endpoint's other waiting jobs
     * when there is none now; null when it did not come in time, or when `maxWaiting` jobs already wait.
     */
    admit(id: string, messages: number, maxWaitMs: number): Promise<LaneRoom | null> {
      const room = enter(id, messages);
      if (room || waiting >= maxWaiting || maxWaitMs <= 0) return Promise.resolve(room);
      return new Promise((resolve) => {
        waiting += 1;
        let line = queued.get(id);
        if (!line) {
          line = [];
          queued.set(id, line);
          // A stretch of the lane's pace starts; the pace last measured stands until this one is.
          rememberAtMost(paces, id, { freed: 0, since: now(), perMs: paces.get(id)?.perMs ?? 0 }, remembered);
        }
        let timer: NodeJS.Timeout | undefined;
        const me = {
          messages,
          admit: (given: LaneRoom) => {
            clearTimeout(timer);
            waiting -= 1;
            resolve(given);
          },
        };
        line.push(me);
        timer = setTimeout(() => {
          waiting -= 1;
          line.splice(line.indexOf(me), 1);
          if (line.length === 0) queued.delete(id);
          // The first in line leaving may let the next one in (a smaller job).
          else letIn(id);
          resolve(null);
        }, maxWaitMs);
      });
    },
    /** Jobs of this process waiting in place for room, now. */
    waiting: () => waiting,
    /**
     * How long a batch job of `messages` messages turned away should wait, in ms, which books its turn:
     * - once the endpoint's lane has a measured pace, and has handed a message back within 2 s: until
     *   `EARLY` (0.6) of the messages ahead of the job (held, waiting in place, and those of the jobs turned
     *   away before it), and of its own, have gone at that pace. The jobs turned away come back one after
     *   another, a little faster than the lane takes them, at most `TURN_MAX_MS` (2 s) ahead;
     * - otherwise, as long as the lane has gone without handing a message back, between 50 ms and 2 s, spread
     *   by up to as much again: a hanging endpoint's jobs come back every 2-4 s, not in a tight loop.
     */
    comeBackMs(id: string, messages: number): number {
      const t = now();
      const lane = lanes.get(id);
      const still = lane ? t - lane.freedAt : 0;
      const perMs = paces.get(id)?.perMs ?? 0;
      if (perMs <= 0 || still >= COME_BACK_MAX_MS) {
        return Math.min(COME_BACK_MAX_MS, Math.max(COME_BACK_MIN_MS, still)) * (1 + random());
      }
      const line = queued.get(id) ?? [];
      const ahead = (lane?.held ?? 0) + line.reduce((sum, job) => sum + job.messages, 0);
      const booked = turns.get(id) ?? 0;
      // Early, and closer together than the pace: the lane must never wait for jobs that are away (its pace
      // would then measure how fast they come back, and they would come back slower and slower). What comes
      // too early waits in place, or is turned away once more.
      const pace = perMs / EARLY;
      const turn = Math.min(Math.max(t + ahead / pace, booked) + messages / pace, t + TURN_MAX_MS);
      rememberAtMost(turns, id, turn, remembered);
      return Math.max(COME_BACK_MIN_MS, turn - t);
    },
  };
}
