import { randomBytes } from 'node:crypto';
import { WebhookVerificationError } from './errors';

const PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 24 random bytes in base64, as Standard Webhooks senders issue them. */
export function generateSecret(): string {
  return `${PREFIX}${randomBytes(24).toString('base64')}`;
}

/** The HMAC key of a secret: the base64 after `whsec_` (a secret without the prefix is base64 too). */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  // Buffer.from ignores characters outside base64, so a malformed secret must be caught here.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    throw new WebhookVerificationError('INVALID_SECRET', 'The secret is not whsec_ followed by base64');
  }
  const key = Buffer.from(encoded, 'base64');
  // A single base64 character decodes to no bytes; an empty HMAC key would sign with no secret at all.
  if (key.length === 0)
    throw new WebhookVerificationError('INVALID_SECRET', 'The secret decodes to no bytes');
  return key;
}
