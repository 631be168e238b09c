import { randomBytes } from 'node:crypto';
import { unavailable } from '@stampcard/core';
import type { Redis } from 'ioredis';
import { sameSecret } from '../lib/same-secret';
import { derivedKey, mac } from '../lib/signed';

/** The console's session cookie: only `/console` reads it. */
export const SESSION_COOKIE = 'stampcard_console';

/** How long a console session lasts after sign-in. */
export const SESSION_TTL_SECONDS = 8 * 60 * 60;

/** A signed-in operator's session, as the cookie carries it (signed, never the operator token). */
export type ConsoleSession = {
  /** Random per sign-in: what the session's CSRF token is derived from. */
  id: string;
  expiresAt: number;
};

const VERSION = 'v1';

/** The key sessions and CSRF tokens are signed with (`derivedKey`). */
const keyOf = (operatorToken: string) => derivedKey(operatorToken, 'console session');
const sign = mac;

/** A new session's cookie value: `v1.<expires ms>.<id>.<HMAC of the rest>`. */
export function newSession(operatorToken: string, now: Date): { value: string; session: ConsoleSession } {
  const session = {
    id: randomBytes(18).toString('base64url'),
    expiresAt: now.getTime() + SESSION_TTL_SECONDS * 1000,
  };
  const body = `${VERSION}.${session.expiresAt}.${session.id}`;
  return { value: `${body}.${sign(keyOf(operatorToken), body)}`, session };
}

/** The session a cookie value carries, or null when it is malformed, tampered with, or expired. */
export function readSession(
  value: string | undefined,
  operatorToken: string,
  now: Date,
): ConsoleSession | null {
  if (!value) return null;
  const parts = value.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return null;
  const [version, expires, id, mac] = parts as [string, string, string, string];
  if (!/^\d{1,15}$/.test(expires) || !/^[\w-]{1,64}$/.test(id)) return null;
  if (!sameSecret(mac, sign(keyOf(operatorToken), `${version}.${expires}.${id}`))) return null;
  const expiresAt = Number(expires);
  return expiresAt > now.getTime() ? { id, expiresAt } : null;
}

/** The CSRF token of a session (synchronizer token): every state-changing console request carries it. */
export function csrfToken(session: ConsoleSession, operatorToken: string): string {
  return sign(keyOf(operatorToken), `csrf.${session.id}`);
}

/** Whether `given` is the session's CSRF token (constant time). */
export function csrfMatches(
  given: string | undefined,
  session: ConsoleSession,
  operatorToken: string,
): boolean {
  return given !== undefined && sameSecret(given, csrfToken(session, operatorToken));
}

/** The Redis key that marks a session signed out, until it would have expired anyway. */
const signedOutKey = (prefix: string, session: ConsoleSession) =>
  `${prefix}:console:signed-out:${session.id}`;

const redisDown = (err: unknown) =>
  unavailable('Redis does not answer: console sessions cannot be checked, retry later', err);

/** Ends a session on the server: its cookie, wherever a copy of it is, is refused from now on. */
export async function signOut(
  redis: Redis,
  prefix: string,
  session: ConsoleSession,
  now: Date,
): Promise<void> {
  const ms = Math.max(1, session.expiresAt - now.getTime());
  await redis.set(signedOutKey(prefix, session), '1', 'PX', ms).catch((err: unknown) => {
    throw redisDown(err);
  });
}

/** Whether a session was signed out (one Redis read per console request). */
export async function isSignedOut(redis: Redis, prefix: string, session: ConsoleSession): Promise<boolean> {
  const found = await redis.exists(signedOutKey(prefix, session)).catch((err: unknown) => {
    throw redisDown(err);
  });
  return found === 1;
}
