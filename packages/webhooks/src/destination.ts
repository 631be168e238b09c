import { Resolver } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Why a webhook destination was refused: the scheme, or the kind of address its host is or resolves to. */
export class DestinationRefusedError extends Error {
  override name = 'DestinationRefusedError';
  /** Node's HTTP stack reports a lookup failure by this code. */
  readonly code = 'EDESTINATIONREFUSED';
  constructor(
    readonly reason: 'SCHEME' | 'NOT_PUBLIC' | 'UNRESOLVED',
    message: string,
  ) {
    super(message);
  }
}

export type DestinationOptions = {
  /**
   * Allow private, loopback, link-local and other non-public addresses (local development and tests; the
   * dispatcher reads `WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
   * @defaultValue false
   */
  allowPrivateNetworks?: boolean;
  /**
   * The DNS servers host names are resolved with (`WEBHOOK_DNS_SERVERS`), as `ip` or `ip:port`; tests point
   * it at a server of their own.
   * @defaultValue the system's, from /etc/resolv.conf
   */
  dnsServers?: readonly string[];
  /**
   * Longest the resolution of one host name may take, in ms (`WEBHOOK_DNS_TIMEOUT_MS`); past it the
   * connection fails as a DNS error.
   * @defaultValue 5000
   */
  dnsTimeoutMs?: number;
};

/** One address a host name resolved to, as `dns.lookup` gives it with `all: true`. */
export type ResolvedAddress = { address: string; family: 4 | 6 };

/**
 * The kind of an IP address, by the IANA special-purpose registries as ipaddr.js knows them; IPv4-mapped
 * IPv6 addresses are judged as the IPv4 address they carry. Only `unicast` is a public address.
 */
export function addressRange(ip: string): string {
  const range = ipaddr.process(ip).range();
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291) is "unicast" to ipaddr.js, and the URL parser
  // writes [::127.0.0.1] as [::7f00:1]: the whole of ::/96 is refused (:: and ::1 keep their own names).
  if (range === 'unicast' && isIP(ip) === 6 && IPV4_COMPATIBLE.check(ip, 'ipv6')) return 'ipv4Compatible';
  return range;
}

const IPV4_COMPATIBLE = new BlockList();
IPV4_COMPATIBLE.addSubnet('::', 96, 'ipv6');

function refuseUnlessPublic(ip: string, opts: DestinationOptions): void {
  if (opts.allowPrivateNetworks) return;
  const range = ipaddr.isValid(ip) ? addressRange(ip) : 'invalid';
  if (range !== 'unicast') {
    throw new DestinationRefusedError('NOT_PUBLIC', `${ip} is not a public address (${range})`);
  }
}

/**
 * Checks an endpoint URL when it is registered: http or https only, and a host given as an IP literal must be
 * public. (The WHATWG URL parser has already turned `0x7f000001` or `2130706433` into `127.0.0.1`.) A host
 * name is checked again at every connection, by `publicOnlyLookup`, since what it resolves to can change.
 */
export function checkDestination(url: string, opts: DestinationOptions = {}): URL {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new DestinationRefusedError('SCHEME', 'Only http and https URLs can receive webhooks');
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) refuseUnlessPublic(host, opts);
  return parsed;
}

/** A host name that did not resolve: `ENOTFOUND` (no such name, no address), `EAI_AGAIN` (no answer in time). */
export class DnsLookupError extends Error {
  override name = 'DnsLookupError';
  constructor(
    readonly code: 'ENOTFOUND' | 'EAI_AGAIN',
    readonly hostname: string,
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_DNS_TIMEOUT_MS = 5000;
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'EBADNAME', 'EFORMERR', 'ENOTIMP', 'EREFUSED']);

/**
 * Resolves host names without `dns.lookup`: that runs getaddrinfo on libuv's thread pool (four threads), so
 * four names whose DNS never answers would hold every later look-up of the process, every tenant's, for as
 * long as the system resolver waits. c-ares (`dns.Resolver`) queries on the event loop instead, each look-up
 * bounded by `dnsTimeoutMs`. It reads no /etc/hosts: `localhost` and `*.localhost` are loopback (RFC 6761),
 * IP literals are themselves, and any other name must be in DNS.
 */
export function createHostResolver(opts: Pick<DestinationOptions, 'dnsServers' | 'dnsTimeoutMs'> = {}) {
  const timeoutMs = opts.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  // c-ares waits `timeout` for a try, then twice that for the next: two tries fit in the bound below; the
  // bound itself is kept by a timer, whatever c-ares does.
  const resolver = new Resolver({ timeout: Math.max(50, Math.floor(timeoutMs / 3)), tries: 2 });
  if (opts.dnsServers && opts.dnsServers.length > 0) resolver.setServers([...opts.dnsServers]);

  async function query(hostname: string, family: 4 | 6): Promise<ResolvedAddress[]> {
    const list = family === 4 ? await resolver.resolve4(hostname) : await resolver.resolve6(hostname);
    return list.map((address) => ({ address, family }));
  }

  /** Every address of `hostname` (of one family when `family` is 4 or 6); throws `DnsLookupError`. */
  return async function resolveHost(hostname: string, family: number = 0): Promise<ResolvedAddress[]> {
    const host = hostname.replace(/^\[|\]$/g, '');
    const literal = isIP(host);
    if (literal !== 0) return [{ address: host, family: literal as 4 | 6 }];
    const lower = host.toLowerCase().replace(/\.$/, '');
    const families: (4 | 6)[] = family === 4 ? [4] : family === 6 ? [6] : [4, 6];
    if (lower === 'localhost' || lower.endsWith('.localhost')) {
      const loopback: ResolvedAddress[] = [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
      return loopback.filter((a) => families.includes(a.family));
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const settled = await Promise.race([Promise.allSettled(families.map((f) => query(host, f))), deadline]);
      if (settled === 'timeout') {
        throw new DnsLookupError('EAI_AGAIN', host, `${host}: no DNS answer within ${timeoutMs} ms`);
      }
      const addresses = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
      if (addresses.length > 0) return addresses;
      const codes = settled.map((r) =>
        r.status === 'rejected' ? (r.reason as { code?: string }).code : 'ENODATA',
      );
      if (codes.every((c) => c !== undefined && NOT_FOUND.has(c))) {
        throw new DnsLookupError('ENOTFOUND', host, `${host} has no address`);
      }
      throw new DnsLookupError('EAI_AGAIN', host, `${host}: DNS did not answer (${codes.join(', ')})`);
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * A `lookup` for the HTTP agent that delivers webhooks: it resolves the host (`createHostResolver`: off the
 * thread pool, bounded) and refuses the connection when any address it resolves to is not public. The
 * socket connects to the very address that was checked, so a DNS answer that changes between a check and
 * the connection (rebinding) cannot slip through. Node calls no lookup for an IP literal: run
 * `checkDestination` on the URL at every delivery as well.
 */
export function publicOnlyLookup(opts: DestinationOptions = {}): LookupFunction {
  const resolveHost = createHostResolver(opts);
  return (hostname, options, callback) => {
    resolveHost(
      hostname,
      options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0),
    )
      .then((addresses) => {
        for (const a of addresses) refuseUnlessPublic(a.address, opts);
        return addresses;
      })
      .then(
        (addresses) => {
          if (options.all) {
            return (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, addresses);
          }
          const first = addresses[0]!;
          return callback(null, first.address, first.family);
        },
        (err: NodeJS.ErrnoException) => callback(err, '', 0),
      );
  };
}

let registrationResolver: ReturnType<typeof createHostResolver> | undefined;

/**
 * `checkDestination`, and a host name must resolve, now, only to public addresses: what an operator registers
 * is refused at once rather than at its first delivery. (Every connection checks again: see
 * `publicOnlyLookup`.) A name that does not resolve yet, or whose DNS does not answer within 2 s, is
 * accepted: registration is not held by DNS, and its deliveries fail until it resolves.
 */
export async function checkResolvedDestination(url: string, opts: DestinationOptions = {}): Promise<URL> {
  const parsed = checkDestination(url, opts);
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (opts.allowPrivateNetworks || ipaddr.isValid(host)) return parsed;
  // At most 2 s: registration is not held by a slow resolver.
  let resolveHost = registrationResolver;
  if (opts.dnsServers) resolveHost = createHostResolver({ dnsServers: opts.dnsServers, dnsTimeoutMs: 2000 });
  else if (!resolveHost) resolveHost = registrationResolver = createHostResolver({ dnsTimeoutMs: 2000 });
  const addresses = await resolveHost(host).catch((err: unknown) => {
    if (err instanceof DnsLookupError) return [];
    throw err;
  });
  for (const a of addresses) refuseUnlessPublic(a.address, opts);
  return parsed;
}
