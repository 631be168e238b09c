import { createHash } from 'node:crypto';
import type { AuditActor } from '@stampcard/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';

type C = Context<AppEnv>;

/**
 * Names who the request's changes are made by (`Ctx.actor`): every unit of work it runs records them in the
 * audit log under that actor. Set once the caller is known (after authentication), with the request's id.
 */
export function nameActor(of: (c: C) => Omit<AuditActor, 'requestId'>): MiddlewareHandler<AppEnv> {
  // Returns `next()` rather than awaiting it: nothing follows, and no frame of its own waits out the request.
  return (c, next) => {
    c.get('ctx').actor = { ...of(c), requestId: c.get('requestId') };
    return next();
  };
}

/** `/v1`: the API key, its user and its account. */
export const apiKeyActor = nameActor((c) => {
  const p = c.get('principal');
  return { kind: 'API_KEY', id: p.apiKeyId, userId: p.userId, accountId: p.accountId };
});

/** `/admin/v1`: the operator API (one token, no one more precise to name). */
export const operatorActor = nameActor(() => ({ kind: 'OPERATOR', id: null }));

const hashed = (prefix: string, secretish: string) =>
  `${prefix}_${createHash('sha256').update(secretish).digest('hex').slice(0, 20)}`;

/** The console: its session, named by a hash of its id (which its CSRF token is derived from). */
export const consoleActor = nameActor((c) => {
  const session = c.get('consoleSession');
  return { kind: 'CONSOLE', id: session ? hashed('console', session.id) : null };
});

/**
 * A business's portal: the link, named by a hash of its token (the token itself opens the portal, so it is
 * never stored), and its account.
 */
export const portalActor = nameActor((c) => {
  const portal = c.get('portal');
  return {
    kind: 'PORTAL',
    id: portal ? hashed('portal', portal.token) : null,
    accountId: portal?.accountId ?? null,
  };
});
