import { timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors';
import { secretKey } from './secret';
import { type Body, signature } from './sign';

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type VerifyInput = {
  headers: HeaderSource;
  /** The raw body as received: a re-serialized JSON object would not match the signature. */
  body: Body;
  /** The endpoint's secret (`whsec_…`). */
  secret: string;
  /**
   * How far `webhook-timestamp` may be from now, either way, in seconds (replayed old messages fail).
   * @defaultValue 300
   */
  toleranceSeconds?: number;
  /**
   * The current time in ms, for tests.
   * @defaultValue `Date.now()`
   */
  now?: number;
};

/** A header by name, case-insensitively, reading a plain record only through its own keys. */
function header(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== name) continue;
    const value = Object.hasOwn(headers, key) ? headers[key] : undefined;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Checks a delivery as Standard Webhooks defines it and returns its parsed JSON body. Throws
 * `WebhookVerificationError` with a `reason` when a header is missing, the timestamp is malformed or outside
 * the tolerance, no `v1` signature matches (any one of several does, as during a secret rotation), or the
 * body is not JSON.
 */
export function verify(input: VerifyInput): unknown {
  // A misconfigured secret is the receiver's fault, so it is reported as such whatever the request carries.
  secretKey(input.secret);
  const id = header(input.headers, 'webhook-id');
  const ts = header(input.headers, 'webhook-timestamp');
  const signatures = header(input.headers, 'webhook-signature');
  if (!id || !ts || !signatures) {
    throw new WebhookVerificationError(
      'MISSING_HEADERS',
      'webhook-id, webhook-timestamp and webhook-signature are required',
    );
  }
  if (!/^\d{1,12}$/.test(ts))
    throw new WebhookVerificationError('INVALID_TIMESTAMP', 'webhook-timestamp is not whole seconds');
  const timestamp = Number(ts);
  const tolerance = input.toleranceSeconds ?? 300;
  const now = Math.floor((input.now ?? Date.now()) / 1000);
  if (timestamp < now - tolerance)
    throw new WebhookVerificationError('TIMESTAMP_TOO_OLD', 'The message is too old');
  if (timestamp > now + tolerance)
    throw new WebhookVerificationError('TIMESTAMP_TOO_NEW', 'The message is from the future');

  const expected = signature(input.secret, id, timestamp, input.body);
  const matched = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .some((s) => same(s, expected));
  if (!matched)
    throw new WebhookVerificationError('NO_MATCHING_SIGNATURE', 'No signature matches this secret');

  const text = typeof input.body === 'string' ? input.body : Buffer.from(input.body).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new WebhookVerificationError('INVALID_BODY', 'The body is not JSON');
  }
}
