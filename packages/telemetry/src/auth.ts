import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Who may read `/metrics`: `allowed` when the request carries `Authorization: Bearer <METRICS_TOKEN>`
 * (compared in constant time), `disabled` when no token is configured (nobody may), else `refused`.
 */
export function metricsAccess(
  authorization: string | undefined,
  token: string | undefined,
): 'allowed' | 'refused' | 'disabled' {
  if (!token) return 'disabled';
  const match = /^Bearer (.+)$/i.exec(authorization ?? '');
  if (!match) return 'refused';
  return timingSafeEqual(digest(match[1]!), digest(token)) ? 'allowed' : 'refused';
}

/** What a refused `/metrics` request is told, by the API's error codes. */
export const METRICS_REFUSALS = {
  refused: {
    code: 'AUTHENTICATION_REQUIRED',
    message: 'Send Authorization: Bearer <METRICS_TOKEN> to read the metrics',
  },
  disabled: {
    code: 'NOT_AUTHORIZED',
    message: 'Metrics are off: set METRICS_TOKEN on the service to read them',
  },
} as const;
