import { createHash, randomBytes } from 'node:crypto';

const LOWER = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MIXED = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomString(length: number, alphabet: string): string {
  // 248 is the largest multiple of 62 and of 36 below 256: rejecting above it keeps every symbol equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIXES = {
  reward: 'crew_',
  participantReward: 'prew_',
  formSubmission: 'fsub_',
  action: 'act_',
  event: 'evt_',
  webhookEndpoint: 'ep_',
  webhookMessage: 'msg_',
  delivery: 'dlv_',
  account: 'acct_',
  user: 'user_',
  apiKey: 'key_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A prefixed random id, e.g. `crew_3kQ9…` (20 random characters). */
export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + randomString(20, MIXED);
}

/** Campaign ids are short random lowercase strings, as in the seed's examples. */
export function newCampaignId(): string {
  return randomString(8, LOWER);
}

/** Participant ids are lowercase random strings; they never contain `@`, so a path segment with one is an email. */
export function newParticipantId(): string {
  return randomString(12, LOWER);
}

/** A new secret API key and the hash that is stored in its place. */
export function newApiKey(): { key: string; hash: string; prefix: string } {
  const key = `sk_${randomString(40, MIXED)}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 9) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
