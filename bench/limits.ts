/**
 * `npm run bench:limits -- [--admits N]`: what one request's limits cost, apart from the rest of the service.
 *
 * Runs N admissions (default 20,000), 32 at a time, through the API's own limiter (`createRateLimiter` on a
 * `limiterConnection`) against the local Redis, each followed by the release of its concurrency slot, with the
 * bench account's raised limits (`BENCH_RATE_LIMITS`: nothing refused, every check run) and as a write.
 * Prints Redis's own CPU per admission and per release (`INFO commandstats`, reset first: run it on a Redis
 * nothing else uses) and this process's CPU per admission and release (ioredis and the limiter's code).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createRateLimiter, limiterConnection } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { effectiveLimits } from '@stampcard/core';
import { Redis } from 'ioredis';
import { BENCH_RATE_LIMITS } from './seed';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { admits: { type: 'string' } },
  strict: true,
});
const N = Number(values.admits ?? 20_000);
if (!Number.isInteger(N) || N < 100 || N > 10_000_000) {
  console.error('usage: npm run bench:limits -- [--admits N (100..10000000, default 20000)]');
  process.exit(2);
}
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function main() {
  const redis = limiterConnection(url, 1000);
  await new Promise((resolve) => redis.once('ready', resolve));
  const prefix = `stampcard_limits_bench_${randomBytes(4).toString('hex')}`;
  const limiter = createRateLimiter({
    redis,
    prefix,
    logger: createLogger({ level: 'silent', name: 'bench' }),
  });
  const limits = effectiveLimits(BENCH_RATE_LIMITS);
  const admin = new Redis(url);
  try {
    await admin.config('RESETSTAT');
    const started = performance.now();
    const cpu = process.cpuUsage();
    let sent = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (sent < N) {
          sent++;
          const input = {
            apiKeyId: 'key',
            accountId: 'account',
            clientIp: '192.0.2.1',
            write: true,
            limits,
            budgetMs: 5000,
          };
          const admission = await limiter.admit(input);
          if (!admission?.admitted) throw new Error('an admission was refused or not answered');
          if (admission.lease) await limiter.release(admission.lease);
        }
      }),
    );
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const stats = await admin.info('commandstats');
    const stat = (name: string) => {
      const line = stats.split('\n').find((l) => l.startsWith(`cmdstat_${name}:`)) ?? '';
      return Number(/usec_per_call=([\d.]+)/.exec(line)?.[1] ?? Number.NaN);
    };
    console.log(
      `${N} admissions and releases, 32 at a time, in ${Math.round(ms)} ms (${Math.round((N / ms) * 1000)}/s)`,
    );
    console.log(
      `Redis CPU: ${stat('evalsha')} µs per admission (one script), ${stat('zrem')} µs per release`,
    );
    console.log(`client CPU: ${Math.round((used.user + used.system) / N)} µs per admission and release`);
    await admin.del(...(await admin.keys(`${prefix}:*`)));
  } finally {
    admin.disconnect();
    redis.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
