import { createHash, randomUUID } from 'node:crypto';
import { assertLive, DomainError, participantsShown, validationError } from '@stampcard/core';
import {
  claimIdempotencyKey,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyClaimed,
  type IdempotencyRow,
  recordIdempotentAnswer,
  releaseIdempotencyKey,
} from '@stampcard/db';
import type { Context, MiddlewareHandler, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../env';
import { requestBudgetMs } from './deadline';
import { loggablePath } from './request-log';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** Set on an answer replayed from an earlier request with the same key. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/**
 * Set on a replayed answer whose secrets were withheld: the names of the fields that are `null` in it and
 * held a secret in the first answer (`key`, `secret`). A secret is shown once, in the first answer only.
 */
export const IDEMPOTENT_WITHHELD_HEADER = 'Idempotent-Withheld';
/** 1 to 255 printable ASCII characters, no space. */
export const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/**
 * Headers of an answer that are part of what it says, so a replay carries them too. Never the request id (a
 * replay is another request) nor rate-limit headers (they describe the moment of the answer).
 */
const REPLAYED_HEADERS = ['Stampcard-Loyalty-Action-Ids', 'Stampcard-Loyalty-Action-Id'];
/**
 * How long past a request's own time budget its claim stays `RUNNING`: work abandoned at the deadline ends
 * once its statement returns (`DB_STATEMENT_TIMEOUT_MS`), and its claim is settled then.
 */
const LOCK_MARGIN_MS = 30_000;

export type IdempotencyOptions = {
  /** The namespace of the request's keys: one caller's keys never meet another's. */
  scope: (c: Context<AppEnv>) => string;
  /**
   * Requests that keep their own key: an import upload, whose body is streamed and never held whole (its import
   * stores the key, see `startImport`).
   */
  skip?: (c: Context<AppEnv>) => boolean;
};

/**
 * `Idempotency-Key` on a POST: the first request with a key runs and its answer is kept for 24 h
 * (PostgreSQL, table `idempotency_keys`); a repeat with the same key and the same request (method, path
 * with query, content type, body bytes) gets that answer again, with `Idempotent-Replayed: true`, and does
 * nothing. While the first still runs, a repeat is a 409 DUPLICATE_REQUEST; the same key with another
 * request is a 400. A 5xx or 409 answer is not kept (nothing was done): a repeat runs again. An answer that
 * shows a secret once is kept without it (`withholdSecrets`): its replay has the secret's field `null`.
 *
 * A request without the header costs nothing here: no statement, no await.
 *
 * The one gap: a process that dies after its request's writes committed but before the answer was
 * recorded leaves the claim `RUNNING`; once its `lockedUntil` passes (the request's budget plus 30 s), a
 * repeat runs again.
 */
export function idempotency(opts: IdempotencyOptions): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    if (c.req.method !== 'POST' || opts.skip?.(c)) return next();
    const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
    if (key === undefined) return next();
    return idempotent(c, next, opts.scope(c), key);
  };
}

/**
 * Called by a route whose answer shows a secret once (`POST …/api-keys`, endpoint creation, `rotate-secret`):
 * the Idempotency-Key store keeps its answer with these top-level fields `null`, and a replay says so in
 * `Idempotent-Withheld`. Only a hash of an API key is stored anywhere; a webhook secret only where signing
 * needs it (`webhook_endpoints`), never in a stored answer.
 */
export function withholdSecrets(c: Context<AppEnv>, fields: readonly string[]): void {
  c.set('secretFields', fields);
}

/** The answer's JSON, or undefined when it is not JSON (nothing this service answers). */
function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/**
 * What is stored of an answer that carries secrets: its JSON with those fields `null`, and the header that
 * names them. A body that is not a JSON object (nothing this service answers) is not stored at all.
 */
function withoutSecrets(parsed: unknown, fields: readonly string[]): { body: string; withheld: string[] } {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { body: '', withheld: [] };
  const answer = { ...(parsed as Record<string, unknown>) };
  const withheld = fields.filter((f) => Object.hasOwn(answer, f));
  for (const f of withheld) answer[f] = null;
  return { body: JSON.stringify(answer), withheld };
}

/** "The same request": method, path with query, content type and the body's bytes. */
async function requestHash(c: Context<AppEnv>): Promise<string> {
  const url = new URL(c.req.url);
  // Read once: hono keeps it, so the body guard and the validators read the same bytes later.
  const body = new Uint8Array(await c.req.arrayBuffer());
  return createHash('sha256')
    .update(`${c.req.method}\n${url.pathname}${url.search}\n${c.req.header('content-type') ?? ''}\n`)
    .update(body)
    .digest('hex');
}

async function idempotent(
  c: Context<AppEnv>,
  next: Next,
  scope: string,
  key: string,
): Promise<Response | undefined> {
  if (!KEY_PATTERN.test(key)) {
    throw validationError([
      {
        location: 'headers',
        param: IDEMPOTENCY_KEY_HEADER,
        value: key,
        msg: 'must be 1 to 255 printable ASCII characters, without spaces',
      },
    ]);
  }
  // Work its deadline already answered claims no key (and its body cannot be read any more).
  assertLive(c.get('ctx'));
  const hash = await requestHash(c);
  // The pool itself, not the request's handle: a claim pipelines its statements in a transaction of its own.
  const { db, clock } = c.get('deps');
  const now = clock.now();
  // Where the claim's row lies: its partition (the day it started) and its token.
  const claim = { scope, key, claimToken: randomUUID(), startedAt: now };
  const result = await claimIdempotencyKey(db, {
    ...claim,
    requestHash: hash,
    method: c.req.method,
    // As logged: a participant addressed by email is stored as `:email`, so no key row holds an address.
    path: loggablePath(c.req.path),
    lockedUntil: new Date(now.getTime() + requestBudgetMs(c) + LOCK_MARGIN_MS),
    expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
  });
  if (!result.claimed) return answerHeld(c, result.row, hash, key);

  const release = () => settle(c, releaseIdempotencyKey(db, claim));
  try {
    await next();
  } catch (err) {
    await release();
    throw err;
  }
  // `ctx` as the request deadline left it: its signal says whether the deadline answered already.
  if (c.get('ctx').signal?.aborted) {
    // The deadline answered: with `lateReply` when the work committed in time (that answer is kept), else
    // with a 503. Work that committed after the deadline also sets `lateReply` before it gets here: its
    // answer is kept too, so a repeat learns what happened instead of doing it again.
    const late = c.get('lateReply');
    await (late ? record(c, claim, late()) : release());
    return undefined;
  }
  const res = c.res;
  if (res.status >= 500 || res.status === 409) {
    await release();
    return undefined;
  }
  // The work is done: if recording it outlasts the deadline, the caller still gets this answer, not a 503.
  c.set('lateReply', () => res);
  await record(c, claim, res.clone());
  return undefined;
}

async function record(c: Context<AppEnv>, claim: IdempotencyClaimed, res: Response) {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = res.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  let body = await res.text();
  const parsed = parseJson(body);
  const secretFields = c.get('secretFields');
  if (secretFields) {
    const kept = withoutSecrets(parsed, secretFields);
    body = kept.body;
    if (kept.withheld.length > 0) headers[IDEMPOTENT_WITHHELD_HEADER] = kept.withheld.join(', ');
  }
  await settle(
    c,
    recordIdempotentAnswer(c.get('deps').db, claim, {
      status: res.status,
      contentType: res.headers.get('content-type'),
      headers,
      body,
      // Tagged with the participants it shows, so erasing one of them scrubs this answer too.
      subjects: participantsShown(parsed),
    }),
  );
}

/**
 * A claim is settled after the request's work: a store failing then must not turn an answer into a 503 (the
 * work is done). The claim stays `RUNNING` until its `lockedUntil`, then a repeat runs again. The log line
 * names the request, never the key.
 */
async function settle(c: Context<AppEnv>, step: Promise<unknown>) {
  try {
    await step;
  } catch (err) {
    c.get('deps').logger.warn(
      { err, requestId: c.get('requestId') },
      'Idempotency-Key not settled: a repeat runs again once its claim lapses',
    );
  }
}

/** The key is held by another request (400), one still running (409), or an answer to replay. */
function answerHeld(c: Context<AppEnv>, row: IdempotencyRow, hash: string, key: string) {
  if (row.requestHash !== hash) {
    throw validationError([
      {
        location: 'headers',
        param: IDEMPOTENCY_KEY_HEADER,
        value: key,
        msg: 'was used with another request (method, path or body) in the last 24 hours: use a new key',
      },
    ]);
  }
  if (row.state === 'RUNNING' || row.responseStatus === null) {
    throw new DomainError(
      'DUPLICATE_REQUEST',
      'A request with this Idempotency-Key is still being processed: repeat it once it has finished',
      { startedAt: row.startedAt.getTime(), request: { method: row.method, path: row.path } },
    );
  }
  const headers: Record<string, string> = { ...row.responseHeaders, [IDEMPOTENT_REPLAYED_HEADER]: 'true' };
  if (row.responseContentType) headers['Content-Type'] = row.responseContentType;
  return c.body(row.responseBody ?? '', row.responseStatus as ContentfulStatusCode, headers);
}
