import { createHmac } from 'node:crypto';

/**
 * A key for one purpose, derived from the operator token: the console's sessions and the portal's links are
 * signed with keys of their own, a new operator token ends everything signed with the old one, and the token
 * itself never leaves the server.
 */
export const derivedKey = (operatorToken: string, purpose: string): Buffer =>
  createHmac('sha256', operatorToken).update(`stampcard ${purpose} key`).digest();

/** The HMAC-SHA256 of `what` under `key`, base64url. */
export const mac = (key: Buffer, what: string) => createHmac('sha256', key).update(what).digest('base64url');
