import { createHash, randomBytes, randomFillSync } from 'node:crypto';

const LOWER = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MIXED = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Random bytes for ids, drawn from the operating system 4 KiB at a time (as Node's own `randomUUID` buffers
 * its entropy): one call for some 150 ids, where a call for each id cost the accept path about 3 % of its CPU.
 * Each byte is used once.
 */
const pool = Buffer.alloc(4096);
let pooled = 0;
function pooledByte(): number {
  if (pooled === 0) {
    randomFillSync(pool);
    pooled = pool.length;
  }
  pooled -= 1;
  return pool[pooled]!;
}

/** Bytes straight from the operating system, for a secret: none of them sits in the pool beforehand. */
function freshBytes(length: number): () => number {
  const bytes = randomBytes(length * 2);
  let at = 0;
  return () => {
    if (at === bytes.length) {
      randomFillSync(bytes);
      at = 0;
    }
    return bytes[at++]!;
  };
}

function randomString(length: number, alphabet: string, nextByte: () => number = pooledByte): string {
  // 248 is the largest multiple of 62 and of 36 below 256: rejecting above it keeps every symbol equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    if (byte < limit) out += alphabet[byte % alphabet.length];
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
  participantImport: 'imp_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A prefixed random id, e.g. `crew_3kQ9…` (20 random characters). */
export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + randomString(20, MIXED);
}

/** Width of the time an event's or a message's id starts with: base62 milliseconds, until the year 8900. */
export const TIME_WIDTH = 8;
/** Length after the prefix of an id that carries its time: an event's (time and 14 random characters). */
export const TIMED_EVENT_LENGTH = TIME_WIDTH + 14;
/** A message's: its event's time and 18 hex characters of the hash of (event, endpoint). */
export const TIMED_MESSAGE_LENGTH = TIME_WIDTH + 18;

/** `at` in base62 (`0-9A-Z a-z`, ASCII order, so ids sort by time), `TIME_WIDTH` characters. */
export function encodeTime(at: Date): string {
  return sortableBase62(at.getTime(), TIME_WIDTH);
}

/** `n` in base62 in ASCII order, `width` characters (leading zeros): strings that sort as the numbers do. */
function sortableBase62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++, n = Math.floor(n / 62)) out = MIXED_SORTED[n % 62] + out;
  return out;
}
const MIXED_SORTED = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A new event's id, `evt_` and the time it is recorded at (to the millisecond, as its `created_at`) before 14
 * random characters: the time says which partition holds it, so a look-up by id reads one week of events, and
 * an id past retention is known as such. Ids made before the partitioning (20 random characters) carry none.
 */
export function newEventId(at: Date): string {
  return ID_PREFIXES.event + encodeTime(at) + randomString(TIMED_EVENT_LENGTH - TIME_WIDTH, MIXED);
}

/** Length after `act_` of an action's id: its time, `ACTION_SEQ_WIDTH` characters of order, 9 random ones. */
const ACTION_SEQ_WIDTH = 3;
let lastActionMs = -1;
let actionSeq = 0;

/**
 * A new loyalty action's id: `act_`, the time it is accepted at (base62 milliseconds), then a count of the
 * ids this process made in that millisecond, then 9 random characters: 20 characters, as before. The ids a
 * process makes only grow (a clock that steps back keeps the last time), so that, of two actions accepted
 * in the same millisecond, the id says which came first: the worker applies a participant's actions in the
 * order (`created_at`, `id`). Ids made before this carry 20 random characters and no time.
 */
export function newActionId(at: Date): string {
  const ms = at.getTime();
  if (ms > lastActionMs) {
    lastActionMs = ms;
    actionSeq = 0;
  } else if (++actionSeq >= 62 ** ACTION_SEQ_WIDTH) {
    lastActionMs += 1;
    actionSeq = 0;
  }
  return (
    ID_PREFIXES.action +
    sortableBase62(lastActionMs, TIME_WIDTH) +
    sortableBase62(actionSeq, ACTION_SEQ_WIDTH) +
    randomString(20 - TIME_WIDTH - ACTION_SEQ_WIDTH, MIXED)
  );
}

/** Orders ids by their characters' codes (`collate "C"`), not by locale as `localeCompare` does. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A test message's id (it has no event): `msg_`, the time it is made at (its `event_at`), 18 random hex
 * characters, the shape of a message id derived from an event (see `fanOutEvents`).
 */
export function newTestMessageId(at: Date): string {
  return (
    ID_PREFIXES.webhookMessage +
    encodeTime(at) +
    randomString(TIMED_MESSAGE_LENGTH - TIME_WIDTH, '0123456789abcdef')
  );
}

/**
 * The time an event's or a webhook message's id carries (its event's `created_at`, a message's `event_at`), or
 * null for an id made before ids carried one, or that is not such an id at all.
 */
export function idTime(id: string): Date | null {
  const at = id.indexOf('_');
  const body = id.slice(at + 1);
  const prefix = id.slice(0, at + 1);
  const timed =
    (prefix === ID_PREFIXES.event && body.length === TIMED_EVENT_LENGTH) ||
    (prefix === ID_PREFIXES.webhookMessage && body.length === TIMED_MESSAGE_LENGTH);
  if (!timed) return null;
  let n = 0;
  for (const ch of body.slice(0, TIME_WIDTH)) {
    const digit = MIXED_SORTED.indexOf(ch);
    if (digit < 0) return null;
    n = n * 62 + digit;
  }
  return new Date(n);
}

/**
 * The distinct times `ids` carry (`idTime`), or null when one carries none: a statement that looks rows up by
 * these ids adds `partition key = any(times)`, and PostgreSQL reads only their partitions.
 */
export function timesOf(ids: readonly string[]): Date[] | null {
  const times = new Map<number, Date>();
  for (const id of ids) {
    const at = idTime(id);
    if (at === null) return null;
    times.set(at.getTime(), at);
  }
  return [...times.values()];
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
  const key = `sk_${randomString(40, MIXED, freshBytes(40))}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 9) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
