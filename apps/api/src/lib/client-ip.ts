import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Context } from 'hono';

/** Stands for the address of a request that came with no socket (an in-process `app.request`). */
export const UNKNOWN_IP = 'unknown';

function socketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/** `::ffff:1.2.3.4` is the IPv4 address 1.2.3.4 seen on an IPv6 socket: one client, one name. */
function canonical(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4
    ? address.slice(7)
    : address.toLowerCase();
}

/**
 * The client's address, as the concurrency limit counts it. With `trustedProxyHops` 0 (the default) it is
 * the socket's peer and `X-Forwarded-For` is ignored, since any client can write that header. Behind n
 * proxies that each append the address they received from, it is the n-th address from the right of
 * `X-Forwarded-For`: the one the outermost trusted proxy saw. A malformed entry falls back to the socket's
 * peer.
 */
export function clientIp(c: Context, trustedProxyHops = 0): string {
  const peer = socketAddress(c);
  if (trustedProxyHops > 0) {
    const forwarded = (c.req.header('x-forwarded-for') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const chain = peer ? [...forwarded, peer] : forwarded;
    const candidate = chain[chain.length - 1 - trustedProxyHops];
    if (candidate && isIP(candidate)) return canonical(candidate);
  }
  return peer && isIP(peer) ? canonical(peer) : UNKNOWN_IP;
}
