import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';

/**
 * At most `max` requests worked on at once in this process, past which a request is answered 503 UNAVAILABLE
 * at once, with `Retry-After: 1`, before it reads its body, a store or a limit: nothing was done. A flood of
 * connections (a thousand callers at once) then costs the process what a refusal costs, and the requests it
 * does work on keep their deadline; without a bound, each waited to be read behind all the others before its
 * deadline even started. One counter for every path it is mounted on.
 */
export function boundRequestsInFlight(max: number): MiddlewareHandler<AppEnv> {
  let inFlight = 0;
  return async (c, next) => {
    if (inFlight >= max) {
      return errorResponse(
        c,
        'UNAVAILABLE',
        `This server is working on ${max} requests already: nothing was done, retry in a second`,
        undefined,
        { 'Retry-After': '1' },
      );
    }
    inFlight += 1;
    try {
      await next();
    } finally {
      inFlight -= 1;
    }
    return undefined;
  };
}
