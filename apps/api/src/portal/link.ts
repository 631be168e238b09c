import { randomBytes } from 'node:crypto';
import { sameSecret } from '../lib/same-secret';
import { derivedKey, mac } from '../lib/signed';

/** Where the portal is served. */
export const PORTAL_PATH = '/portal';

/** A portal link lives 1 hour unless asked otherwise, at least a minute and at most a day. */
export const PORTAL_LINK_DEFAULT_SECONDS = 3600;
export const PORTAL_LINK_MIN_SECONDS = 60;
export const PORTAL_LINK_MAX_SECONDS = 24 * 3600;

/** What a portal link opens: one account's webhooks (one campaign's, when it names one), until it expires. */
export type PortalGrant = { accountId: string; campaignId?: string; expiresAt: number };

const VERSION = 'p1';
const keyOf = (operatorToken: string) => derivedKey(operatorToken, 'portal link');

/** An id as the service makes them (letters, digits, `_`, `-`), so the token's parts never need escaping. */
const ID = /^[\w-]{1,64}$/;

/**
 * A portal link's token: `p1.<account>.<campaign or empty>.<expires ms>.<nonce>.<HMAC of the rest>`, all
 * URL-safe. The nonce makes two links for the same grant differ (and their CSRF tokens with them).
 */
export function signPortalLink(grant: PortalGrant, operatorToken: string): string {
  const body = [
    VERSION,
    grant.accountId,
    grant.campaignId ?? '',
    String(grant.expiresAt),
    randomBytes(12).toString('base64url'),
  ].join('.');
  return `${body}.${mac(keyOf(operatorToken), body)}`;
}

/**
 * The grant a token carries, `expired` or not, or null when it is malformed, altered or signed with another
 * key. An expired grant opens nothing: it only lets the portal say so where the account's pages frame it.
 */
export function readPortalLink(
  token: string | undefined,
  operatorToken: string,
  now: Date,
): (PortalGrant & { expired: boolean }) | null {
  if (!token || token.length > 400) return null;
  const parts = token.split('.');
  if (parts.length !== 6 || parts[0] !== VERSION) return null;
  const [, accountId, campaignId, expires, nonce, signature] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!ID.test(accountId) || (campaignId !== '' && !ID.test(campaignId))) return null;
  if (!/^\d{1,15}$/.test(expires) || !/^[\w-]{1,32}$/.test(nonce)) return null;
  if (!sameSecret(signature, mac(keyOf(operatorToken), parts.slice(0, 5).join('.')))) return null;
  const expiresAt = Number(expires);
  return { accountId, ...(campaignId ? { campaignId } : {}), expiresAt, expired: expiresAt <= now.getTime() };
}

/** The CSRF token of a link: every form of its pages carries it. */
export const portalCsrf = (token: string, operatorToken: string) =>
  mac(keyOf(operatorToken), `csrf.${token}`);

/** Whether `given` is the link's CSRF token (constant time). */
export const portalCsrfMatches = (given: string | undefined, token: string, operatorToken: string) =>
  given !== undefined && sameSecret(given, portalCsrf(token, operatorToken));
