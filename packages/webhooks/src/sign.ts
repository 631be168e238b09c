import { createHmac } from 'node:crypto';
import { secretKey } from './secret';

export type Body = string | Uint8Array;

/** Decoded HMAC keys, by secret, so that each delivery does not decode its endpoint's again; at most `KEYS_MAX`. */
const keys = new Map<string, Buffer>();
const KEYS_MAX = 1000;

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = secretKey(secret);
    if (keys.size >= KEYS_MAX) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/**
 * One `v1,<base64 HMAC-SHA256>` signature of `id.timestamp.body`, over the body's exact bytes (a string's UTF-8),
 * fed to the HMAC in pieces rather than copied into one buffer first.
 */
export function signature(secret: string, id: string, timestamp: number, body: Body): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

export type SignInput = {
  /** The message id, stable across retries (`msg_…`). */
  id: string;
  /** Seconds since the epoch, as sent in `webhook-timestamp`. */
  timestamp: number;
  /** The body exactly as it is sent. */
  body: Body;
  /**
   * Every secret that signs: one, or two while a rotation overlaps (receivers holding either verify).
   */
  secrets: readonly string[];
};

/** The `webhook-signature` value: one signature per secret, space-separated. */
export function sign(input: SignInput): string {
  return input.secrets.map((s) => signature(s, input.id, input.timestamp, input.body)).join(' ');
}

/** The headers every delivery carries beside its signature headers (the console shows them with each attempt). */
export const DELIVERY_HEADERS = {
  'content-type': 'application/json',
  'user-agent': 'Stampcard-Webhooks/1',
} as const;

/** The three Standard Webhooks headers of a delivery. */
export function signatureHeaders(
  input: SignInput,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': sign(input),
  };
}
