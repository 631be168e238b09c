/** What the lookup cache holds: a caller by API key hash, a campaign by id. */
export type CacheKind = 'principal' | 'campaign';

/**
 * A short-lived per-process cache for what every request looks up (its API key's principal, its campaign).
 * `invalidate` drops an entry here and, through the implementation's channel, in every other process: the
 * services that change what is cached call it after their write commits.
 */
export type LookupCache = {
  get<T>(kind: CacheKind, key: string): T | undefined;
  set(kind: CacheKind, key: string, value: unknown): void;
  /** `key` undefined: every entry of that kind. */
  invalidate(kind: CacheKind, key?: string): Promise<void>;
};

export type MemoryCacheOptions = {
  /** How long an entry is trusted, in ms; 0 turns the cache off. */
  ttlMs: number;
  /**
   * Entries kept per kind; past it the oldest go first.
   * @defaultValue 10000
   */
  maxEntries?: number;
  /** @defaultValue Date.now */
  now?: () => number;
};

/** The local half: a bounded map per kind whose entries expire after `ttlMs`. */
export function memoryCache(opts: MemoryCacheOptions) {
  const now = opts.now ?? Date.now;
  const max = opts.maxEntries ?? 10_000;
  const maps: Record<CacheKind, Map<string, { value: unknown; expires: number }>> = {
    principal: new Map(),
    campaign: new Map(),
  };
  return {
    get<T>(kind: CacheKind, key: string): T | undefined {
      const hit = maps[kind].get(key);
      if (!hit) return undefined;
      if (hit.expires <= now()) {
        maps[kind].delete(key);
        return undefined;
      }
      return hit.value as T;
    },
    set(kind: CacheKind, key: string, value: unknown): void {
      if (opts.ttlMs <= 0) return;
      const map = maps[kind];
      if (map.size >= max) map.delete(map.keys().next().value!);
      map.set(key, { value, expires: now() + opts.ttlMs });
    },
    drop(kind: CacheKind, key?: string): void {
      if (key === undefined) maps[kind].clear();
      else maps[kind].delete(key);
    },
    clear(): void {
      maps.principal.clear();
      maps.campaign.clear();
    },
  };
}
