/**
 * The limiter's Redis side: each request is decided in ONE round trip, atomically for every API process.
 *
 * Rate windows are sliding logs: each policy keeps the times of the requests it admitted in the last window
 * (a list, newest first, trimmed from the old end as entries leave it), so "30 per 5 seconds" holds for every
 * 5-second span, not only for spans that start on a clock boundary. A request at `t` is in the window at
 * `now` while `t > now - window`: 30 requests at 0 ms refuse the 31st until 5,000 ms, and admit it then.
 * Refused requests are not logged, so hammering does not extend a block. Memory is one number per admitted
 * request per window (at most the window's limit while the limits hold).
 *
 * Concurrency is a sorted set of leases per (account, client IP), scored by when each lease expires: a
 * request releases its lease when it ends, and the lease of a process that died expires by itself.
 *
 * Time is Redis's own clock, so API processes whose clocks differ still agree; tests pass their own.
 *
 * The windows are core's (`RATE_POLICIES`, `SLOWDOWN_WINDOW_MS`), written into the script's text as it is
 * built: the script is the one place the rules run, and `apps/api/test/limiter.test.ts` walks its edges.
 */
import { RATE_POLICIES, SLOWDOWN_WINDOW_MS } from '@stampcard/core';

const NOW = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/** Expired leases go; a free slot takes the lease. Answers 1 when taken, 0 when the scope is full. */
const LEASE = `
local function lease(key, limit, id, ms)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= limit then return 0 end
  redis.call('ZADD', key, now + ms, id)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
  return 1
end
`;

/**
 * KEYS: second log, minute log, hour log, writes log, leases.
 * ARGV: now ('' for Redis's clock), second, minute and hour limits, 1 for a write, slowdown threshold (0: off),
 * slowdown step ms, concurrency limit, lease id, lease ms (before the slowdown is added).
 * Answers { verdict, delay ms, used × 3, retry-after ms × 3, reset ms × 3 }; verdict 0 admitted, 1 to 3 the
 * rate policy that refused, 4 the concurrency limit.
 */
export const ADMIT = `${NOW}${LEASE}
local windows = { ${RATE_POLICIES.map((p) => p.windowMs).join(', ')} }
local limits = { tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) }

-- Drops what left the window from the old end of a log (newest first). Answers how many requests it still
-- holds and when the oldest of them came. A log idle for a whole window has expired already (PEXPIRE).
local function trim(key, window)
  local horizon = now - window
  local oldest = redis.call('LINDEX', key, -1)
  while oldest and tonumber(oldest) <= horizon do
    redis.call('RPOP', key)
    oldest = redis.call('LINDEX', key, -1)
  end
  if not oldest then return 0, nil end
  return redis.call('LLEN', key), tonumber(oldest)
end

local used, oldest, retry = {}, {}, {}
local verdict, longest = 0, -1
for i = 1, 3 do
  used[i], oldest[i] = trim(KEYS[i], windows[i])
  retry[i] = 0
  if used[i] >= limits[i] then
    -- Room comes back when the request that fills the window leaves it.
    retry[i] = tonumber(redis.call('LINDEX', KEYS[i], limits[i] - 1)) + windows[i] - now
    if retry[i] > longest then
      longest = retry[i]
      verdict = i
    end
  end
end

local delay = 0
if verdict == 0 then
  local after = tonumber(ARGV[6])
  local writes = 0
  if ARGV[5] == '1' and after > 0 then writes = trim(KEYS[4], ${SLOWDOWN_WINDOW_MS}) + 1 end
  if writes > after then delay = (writes - after) * tonumber(ARGV[7]) end
  if lease(KEYS[5], tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10]) + delay) == 0 then
    verdict = 4
    delay = 0
  else
    for i = 1, 3 do
      redis.call('LPUSH', KEYS[i], now)
      redis.call('PEXPIRE', KEYS[i], windows[i])
      used[i] = used[i] + 1
      oldest[i] = oldest[i] or now
      -- This request took the last place: the oldest leaves first.
      if used[i] >= limits[i] then retry[i] = oldest[i] + windows[i] - now end
    end
    if writes > 0 then
      redis.call('LPUSH', KEYS[4], now)
      redis.call('PEXPIRE', KEYS[4], ${SLOWDOWN_WINDOW_MS})
    end
  end
end

local out = { verdict, delay, used[1], used[2], used[3], retry[1], retry[2], retry[3] }
for i = 1, 3 do out[8 + i] = oldest[i] and (oldest[i] + windows[i] - now) or 0 end
return out
`;

/** KEYS: leases. ARGV: now, limit, lease id, lease ms. Answers 1 when the lease was taken. */
export const LEASE_ONLY = `${NOW}${LEASE}
return lease(KEYS[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]))
`;
