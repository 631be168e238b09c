import {
  checkDestination,
  DELIVERY_HEADERS,
  DestinationRefusedError,
  publicOnlyLookup,
} from '@stampcard/webhooks';
import { Agent, buildConnector } from 'undici';
import { AnswerReader, EXCERPT_WAIT_MS, type SendResult } from './answer';
import { rememberAtMost } from './throttle';

export { MAX_ANSWER_BYTES, type SendResult } from './answer';

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

  // Each endpoint URL's check, once (it depends on the URL and the guard alone): where its requests go, or the
  // refusal.
  const checked = new Map<string, { origin: string; path: string } | Error>();
  const target = (url: string) => {
    let verdict = checked.get(url);
    if (verdict === undefined) {
      try {
        checkDestination(url, guard);
        const { origin, pathname, search } = new URL(url);
        verdict = { origin, path: pathname + search };
      } catch (err) {
        verdict = err instanceof Error ? err : new Error(String(err));
      }
      rememberAtMost(checked, url, verdict, CHECKED_URLS_MAX);
    }
    if (verdict instanceof Error) throw verdict;
    return verdict;
  };
  const excerptWaitMs = Math.min(EXCERPT_WAIT_MS, opts.timeoutMs / 2);

  /**
   * POSTs `body` to `url` with `headers`, an object of the request's own, to which it adds `DELIVERY_HEADERS`
   * (which no caller's header overrides). Never rejects: a request that failed says why (`errorClass`).
   */
  function send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    return new Promise<SendResult>((resolve) => {
      const reader = new AnswerReader(resolve, opts.timeoutMs, excerptWaitMs, classify);
      try {
        const { origin, path } = target(url);
        agent.dispatch(
          { origin, path, method: 'POST', headers: Object.assign(headers, DELIVERY_HEADERS), body },
          reader,
        );
      } catch (err) {
        reader.failed(err);
      }
    });
  }

  return { send, close: () => agent.close() };
}

export type Sender = ReturnType<typeof createSender>;
