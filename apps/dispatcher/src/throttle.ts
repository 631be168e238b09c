import type { Redis } from 'ioredis';

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

type GateRedis = Redis & {
  stampcardGate(rateKey: string, pauseKey: string, intervalMs: number): Promise<number>;
};

export type EndpointGate = {
  /** Ms to wait before calling the endpoint (0: go now, and the slot is taken). */
  wait(endpointId: string, rateLimit: number | null): Promise<number>;
  /** The endpoint asked to be left alone for `ms` (Retry-After): every dispatcher holds off. */
  pause(endpointId: string, ms: number): Promise<void>;
};

/** The shared per-endpoint gate, in Redis under `<prefix>:webhooks:…`. */
export function createEndpointGate(redis: Redis, prefix: string): EndpointGate {
  const r = redis as GateRedis;
  if (typeof r.stampcardGate !== 'function') {
    redis.defineCommand('stampcardGate', { numberOfKeys: 2, lua: GATE });
  }
  const key = (kind: string, id: string) => `${prefix}:webhooks:${kind}:${id}`;
  return {
    wait: (id, rateLimit) =>
      r.stampcardGate(
        key('rate', id),
        key('pause', id),
        rateLimit ? Math.max(1, Math.floor(1000 / rateLimit)) : 0,
      ),
    pause: async (id, ms) => {
      if (ms > 0) await redis.set(key('pause', id), '1', 'PX', ms);
    },
  };
}

/**
 * Deliveries in flight per endpoint in this process. A slow or hanging endpoint holds at most `perEndpoint` of
 * the process's slots; its other messages step aside (delayed briefly) so other endpoints' deliveries flow.
 */
export function createInFlight(perEndpoint: number) {
  const counts = new Map<string, number>();
  return {
    tryAcquire(id: string): boolean {
      const n = counts.get(id) ?? 0;
      if (n >= perEndpoint) return false;
      counts.set(id, n + 1);
      return true;
    },
    release(id: string): void {
      const n = (counts.get(id) ?? 1) - 1;
      if (n <= 0) counts.delete(id);
      else counts.set(id, n);
    },
  };
}
