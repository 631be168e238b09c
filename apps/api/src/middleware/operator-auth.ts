import { notAuthorized } from '@stampcard/core';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import { sameSecret } from '../lib/same-secret';
import { bearerToken } from './auth';

/**
 * The operator API and dashboard: `Authorization: Bearer <OPERATOR_TOKEN>`. With `basic: true` (pages a
 * browser opens) HTTP Basic with the token as password is accepted too, and a 401 asks the browser for it.
 */
export function operatorAuth(opts: { basic?: boolean } = {}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = c.get('deps').operatorToken;
    const header = c.req.header('authorization');
    let given = bearerToken(header);
    if (!given && opts.basic && header?.startsWith('Basic ')) {
      const decoded = Buffer.from(header.slice(6), 'base64').toString();
      given = decoded.slice(decoded.indexOf(':') + 1);
    }
    if (given && sameSecret(given, token)) return next();
    if (opts.basic) {
      return errorResponse(
        c,
        'AUTHENTICATION_REQUIRED',
        'Operator token required: sign in with any user name and the token as password, or send Authorization: Bearer <OPERATOR_TOKEN>',
        {},
        { 'WWW-Authenticate': 'Basic realm="Stampcard operators"' },
      );
    }
    throw notAuthorized('Operator token missing or wrong: send Authorization: Bearer <OPERATOR_TOKEN>');
  };
}
