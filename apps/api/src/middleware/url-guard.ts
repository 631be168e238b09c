import { validationError } from '@stampcard/core';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';

/**
 * A path or query that decodes to the NUL character would reach PostgreSQL, which refuses it: 400 here.
 * (Unpaired surrogates cannot arrive this way: invalid UTF-8 escapes are left undecoded.)
 */
export const urlGuard: MiddlewareHandler<AppEnv> = (c, next) => {
  const url = c.req.url;
  const at = url.search(/%00/i);
  if (at >= 0) {
    const queryStart = url.indexOf('?');
    throw validationError([
      {
        location: queryStart >= 0 && at > queryStart ? 'query' : 'params',
        param: '',
        value: null,
        msg: 'must not contain the NUL character (%00)',
      },
    ]);
  }
  return next();
};
