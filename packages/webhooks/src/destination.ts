import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
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
};

/**
 * The kind of an IP address, by the IANA special-purpose registries as ipaddr.js knows them; IPv4-mapped
 * IPv6 addresses are judged as the IPv4 address they carry. Only `unicast` is a public address.
 */
export function addressRange(ip: string): string {
  return ipaddr.process(ip).range();
}

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

/**
 * A `lookup` for the HTTP agent that delivers webhooks: it resolves the host and refuses the connection
 * when any address it resolves to is not public. The socket connects to the very address that was checked,
 * so a DNS answer that changes between a check and the connection (rebinding) cannot slip through. Node
 * calls no lookup for an IP literal: run `checkDestination` on the URL at every delivery as well.
 */
export function publicOnlyLookup(opts: DestinationOptions = {}): LookupFunction {
  return (hostname, options, callback) => {
    const all: LookupAllOptions = { ...(options as object), all: true };
    dnsLookup(hostname, all, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      try {
        if (addresses.length === 0)
          throw new DestinationRefusedError('UNRESOLVED', `${hostname} has no address`);
        for (const a of addresses) refuseUnlessPublic(a.address, opts);
      } catch (refused) {
        return callback(refused as NodeJS.ErrnoException, '', 0);
      }
      if ((options as { all?: boolean }).all) {
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      }
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

/**
 * `checkDestination`, and a host name must resolve, now, only to public addresses: what an operator registers
 * is refused at once rather than at its first delivery. (Every connection checks again: see
 * `publicOnlyLookup`.) A name that does not resolve yet is accepted; its deliveries fail until it does.
 */
export async function checkResolvedDestination(url: string, opts: DestinationOptions = {}): Promise<URL> {
  const parsed = checkDestination(url, opts);
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (opts.allowPrivateNetworks || ipaddr.isValid(host)) return parsed;
  // A resolver that does not answer within 2 s counts as "does not resolve yet": registration is not held.
  const addresses = await new Promise<LookupAddress[]>((resolve) => {
    const timer = setTimeout(() => resolve([]), 2000);
    dnsLookup(host, { all: true }, (err, list) => {
      clearTimeout(timer);
      resolve(err ? [] : list);
    });
  });
  for (const a of addresses) refuseUnlessPublic(a.address, opts);
  return parsed;
}
