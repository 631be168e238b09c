import {
  checkDestination,
  DELIVERY_HEADERS,
  DestinationRefusedError,
  publicOnlyLookup,
} from '@stampcard/webhooks';
import { Agent, buildConnector, request } from 'undici';
import { EXCERPT_WAIT_MS, readExcerpt } from './excerpt';
import { rememberAtMost } from './throttle';

export { MAX_ANSWER_BYTES } from './excerpt';

export type SenderOptions = {
  /** Longest a delivery may take, connection to last byte read, in ms (`WEBHOOK_TIMEOUT_MS`). */
  timeoutMs: number;
  /** Allow non-public destinations (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`). */
  allowPrivateNetworks: boolean;
  /**
   * DNS servers for destination look-ups (`WEBHOOK_DNS_SERVERS`).
   * @defaultValue the system's, from /etc/resolv.conf
   */
  dnsServers?: readonly string[];
  /**
   * Longest one destination look-up may take, in ms (`WEBHOOK_DNS_TIMEOUT_MS`).
   * @defaultValue 5000
   */
  dnsTimeoutMs?: number;
  /**
   * Idle keep-alive connections kept per origin, in ms before they close.
   * @defaultValue 30000
   */
  keepAliveMs?: number;
};

/** What came back from one POST, or why nothing did. */
export type SendResult = {
  statusCode: number | null;
  retryAfter: string | null;
  /** The first 4 KiB of the answer, as text; null when no answer came. */
  responseExcerpt: string | null;
  latencyMs: number;
  /** Null when an answer came; else `TIMEOUT`, `REFUSED_ADDRESS`, `DNS`, `TLS` or `CONNECTION`. */
  errorClass: string | null;
};

function classify(err: unknown): string {
  for (
    let e = err as { code?: string; name?: string; cause?: unknown } | undefined;
    e;
    e = e.cause as typeof e
  ) {
    if (e instanceof DestinationRefusedError || e.code === 'EDESTINATIONREFUSED') return 'REFUSED_ADDRESS';
    if (
      e.name === 'TimeoutError' ||
      e.name === 'AbortError' ||
      e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
      e.code === 'UND_ERR_BODY_TIMEOUT' ||
      e.code === 'UND_ERR_CONNECT_TIMEOUT' ||
      e.code === 'ETIMEDOUT'
    )
      return 'TIMEOUT';
    if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return 'DNS';
    if (e.code?.startsWith('ERR_TLS') || e.code?.includes('CERT') || e.code === 'EPROTO') return 'TLS';
  }
  return 'CONNECTION';
}

/** Endpoint URLs whose destination check a sender remembers; past this it forgets them all and starts again. */
const CHECKED_URLS_MAX = 10_000;

/**
 * POSTs deliveries. One undici agent keeps connections alive per origin and reuses them. Every connection
 * resolves its host through `publicOnlyLookup`, which refuses non-public addresses and hands the socket the
 * very address it checked (resolving with c-ares, bounded, so names whose DNS never answers cannot take
 * libuv's thread pool from every other delivery: a failed look-up is a `DNS` attempt); a host written as an IP literal is checked before sending (no lookup runs for it).
 * Redirects are not followed: a 3xx is an answer like any other non-2xx.
 */
export function createSender(opts: SenderOptions) {
  const guard = {
    allowPrivateNetworks: opts.allowPrivateNetworks,
    dnsServers: opts.dnsServers,
    dnsTimeoutMs: opts.dnsTimeoutMs,
  };
  const agent = new Agent({
    connect: buildConnector({ lookup: publicOnlyLookup(guard), timeout: opts.timeoutMs }),
    keepAliveTimeout: opts.keepAliveMs ?? 30_000,
    keepAliveMaxTimeout: opts.keepAliveMs ?? 30_000,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
  });

  // Each endpoint URL's check, once (it depends on the URL and the guard alone): the refusal, or null.
  const checked = new Map<string, unknown>();
  const check = (url: string) => {
    let verdict = checked.get(url);
    if (verdict === undefined) {
      try {
        checkDestination(url, guard);
        verdict = null;
      } catch (err) {
        verdict = err;
      }
      rememberAtMost(checked, url, verdict, CHECKED_URLS_MAX);
    }
    if (verdict !== null) throw verdict;
  };

  /**
   * POSTs `body` to `url` with `headers`, an object of the request's own, to which it adds `DELIVERY_HEADERS`
   * (which no caller's header overrides).
   */
  async function send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    // The whole delivery's deadline: a timer of its own, cleared as it ends (`AbortSignal.timeout` keeps its
    // timer and signal until they are collected, and cost more than the rest of the request's set-up).
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('delivery timed out', 'TimeoutError')),
      opts.timeoutMs,
    );
    try {
      check(url);
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        headers: Object.assign(headers, DELIVERY_HEADERS),
        body,
        signal: deadline.signal,
      });
      const retryAfter = res.headers['retry-after'];
      // The status decides; an answer body that stalls or breaks off only loses its excerpt.
      const excerpt = await readExcerpt(res.body, Math.min(EXCERPT_WAIT_MS, opts.timeoutMs / 2)).catch(
        () => null,
      );
      return {
        statusCode: res.statusCode,
        retryAfter: Array.isArray(retryAfter) ? (retryAfter[0] ?? null) : (retryAfter ?? null),
        responseExcerpt: excerpt,
        latencyMs: elapsed(),
        errorClass: null,
      };
    } catch (err) {
      return {
        statusCode: null,
        retryAfter: null,
        responseExcerpt: null,
        latencyMs: elapsed(),
        errorClass: classify(err),
      };
    } finally {
      clearTimeout(timer);
    }
  }

  return { send, close: () => agent.close() };
}

export type Sender = ReturnType<typeof createSender>;
