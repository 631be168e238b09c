import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './openapi';
import { type RetryOptions, retryingFetch } from './retry';

/** The receiver's side: checks a delivery's signature and answers its parsed body. */
/** How the client reads a `Retry-After` header (the dispatcher reads a receiver's the same way). */
export {
  type HeaderSource,
  retryAfterMs,
  type VerifyInput,
  verify,
  WebhookVerificationError,
} from '@stampcard/webhooks';
export type { components, operations, paths, webhooks } from './openapi';
export { IDEMPOTENCY_KEY_HEADER, type Retry, type RetryOptions } from './retry';

/** A schema of the API by name: `Schema<'Participant'>`, `Schema<'LoyaltyActionAnswer'>`, … */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export type StampcardClientOptions = {
  /** Where the API is, without `/v1`: `https://stampcard.example.com`. */
  baseUrl: string;
  /**
   * Sent as `Authorization: Bearer …`: an API key for `/v1`, or the operator token for `/admin/v1`.
   */
  apiKey: string;
  /**
   * How 429 and 503 answers are retried; `false` answers them at once.
   * @defaultValue `{}`: each option's own default
   */
  retry?: RetryOptions | false;
  /**
   * Headers sent with every request.
   * @defaultValue none
   */
  headers?: Record<string, string>;
  /**
   * The `fetch` requests go through (a proxy agent, a test's recorder).
   * @defaultValue `globalThis.fetch`
   */
  fetch?: (request: Request) => Promise<Response>;
};

export type StampcardClient = Client<paths>;

/**
 * A typed client of the Stampcard API (openapi-fetch over the generated `paths`): `client.POST(path,
 * { params, body })` answers `{ data }` on a 2xx or `{ error }` (the API's error body), with `response`.
 * Every POST carries an `Idempotency-Key` (pass `params.header['Idempotency-Key']` to choose it), and 429 and
 * 503 answers are retried with that same key (see `RetryOptions`).
 */
export function createStampcardClient(options: StampcardClientOptions): StampcardClient {
  const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
    fetch: options.retry === false ? base : retryingFetch(base, options.retry),
  });
}
