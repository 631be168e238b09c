import { authenticate } from '@stampcard/core';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';

export function bearerToken(header: string | undefined): string | undefined {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1];
}

/** `/v1`: the API key (Authorization: Bearer) resolves to a principal; every failure is the seed's 403. */
export const apiKeyAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const principal = await authenticate(c.get('ctx'), bearerToken(c.req.header('authorization')));
  c.set('principal', principal);
  c.set('accountId', principal.accountId);
  await next();
};
