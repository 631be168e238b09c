import { createHmac } from 'node:crypto';
import { secretKey } from './secret';

export type Body = string | Uint8Array;

/** What is signed: `id.timestamp.body`, over the body's exact bytes. */
export function signedContent(id: string, timestamp: number, body: Body): Buffer {
  const bytes =
    typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`), bytes]);
}

/** One `v1,<base64 HMAC-SHA256>` signature. */
export function signature(secret: string, id: string, timestamp: number, body: Body): string {
  return `v1,${createHmac('sha256', secretKey(secret))
    .update(signedContent(id, timestamp, body))
    .digest('base64')}`;
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
