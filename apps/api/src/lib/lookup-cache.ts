import type { Logger } from '@stampcard/config';
import { type CacheKind, type LookupCache, memoryCache } from '@stampcard/core';
import { duplicateRedis, type RedisClient } from '@stampcard/jobs';

export type SharedCacheOptions = {
  /** The connection invalidations are published on; a duplicate of it subscribes. */
  redis: RedisClient;
  /** The channel is `<prefix>:lookup-cache`, so stacks sharing a Redis do not drop each other's entries. */
  prefix: string;
  logger: Logger;
  /** How long an entry is trusted, in ms (`LOOKUP_CACHE_MS`); 0 turns the cache off. */
  ttlMs: number;
};

const KINDS = new Set<CacheKind>(['principal', 'campaign']);

/**
 * The API's lookup cache: entries live in this process for `ttlMs`, and every invalidation is published on
 * Redis so that every API process drops the entry at once. While the subscription is down (Redis away, or
 * reconnecting) a missed invalidation is possible, so the whole cache is dropped whenever it comes back; the
 * TTL bounds what a process can miss in between.
 */
export async function sharedLookupCache(opts: SharedCacheOptions): Promise<LookupCache & { close(): void }> {
  const local = memoryCache({ ttlMs: opts.ttlMs });
  const channel = `${opts.prefix}:lookup-cache`;
  const sub = duplicateRedis(opts.redis, { enableOfflineQueue: true, maxRetriesPerRequest: null });
  sub.on('error', (err) => opts.logger.warn({ err }, 'lookup cache subscription error'));
  sub.on('ready', () => local.clear());
  sub.on('message', (_channel: string, raw: string) => {
    const sep = raw.indexOf(':');
    const kind = (sep < 0 ? raw : raw.slice(0, sep)) as CacheKind;
    if (!KINDS.has(kind)) return;
    local.drop(kind, sep < 0 ? undefined : raw.slice(sep + 1));
  });
  if (opts.ttlMs > 0) await sub.subscribe(channel);
  return {
    get: (kind, key) => local.get(kind, key),
    set: (kind, key, value) => local.set(kind, key, value),
    async invalidate(kind, key) {
      local.drop(kind, key);
      if (opts.ttlMs <= 0) return;
      try {
        await opts.redis.publish(channel, key === undefined ? kind : `${kind}:${key}`);
      } catch (err) {
        opts.logger.warn(
          { err, kind },
          `lookup cache invalidation not published; other processes drop it within ${opts.ttlMs} ms`,
        );
      }
    },
    close: () => sub.disconnect(),
  };
}
