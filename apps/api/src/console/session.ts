import { randomBytes } from 'node:crypto';
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
