import type { Context } from 'hono';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import type { Slots } from './slots';

/**
 * A slot of `slots` for the request: its release, or the 429 (`RATE_LIMIT`, `policyName: CONCURRENCY`,
 * `Retry-After: 5`) that says `max` of `what` are running on this server already.
 */
export function takeSlot(c: Context<AppEnv>, slots: Slots, what: string): (() => void) | Response {
  const release = slots.take();
  if (release) return release;
  c.set('refusedBy', 'CONCURRENCY');
  return errorResponse(
    c,
    'RATE_LIMIT',
    `${slots.max} ${what} on this server: retry in a few seconds`,
    { policyName: 'CONCURRENCY' },
    { 'Retry-After': '5' },
  );
}
