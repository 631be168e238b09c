import { createHash } from 'node:crypto';

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/** Identifies "the same request": same API key, method, path and (parsed, key-order-free) body. */
export function requestHash(apiKeyId: string, method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${apiKeyId}\n${method}\n${path}\n${JSON.stringify(canonical(body))}`)
    .digest('hex');
}
