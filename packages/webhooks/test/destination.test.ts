import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDestination, DestinationRefusedError, publicOnlyLookup } from '../src/index';

/**
 * The SSRF guard. No request is ever sent to a private range: refused URLs fail before any connection, and
 * the only server connected to is a local node:http receiver on 127.0.0.1.
 */
function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(DestinationRefusedError);
    return (err as DestinationRefusedError).reason;
  }
  return 'accepted';
}

describe('checkDestination (at registration)', () => {
  it('refuses loopback, private, link-local, CGNAT, unspecified and IPv4-mapped literals, in every spelling', () => {
    for (const url of [
      'http://127.0.0.1/hook',
      'http://10.0.0.1/',
      'http://192.168.1.10/',
      'http://[::1]/',
      'http://169.254.169.254/latest/meta-data',
      'http://0x7f000001/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://[fe80::1]/',
      'http://[fc00::1]/',
      'http://224.0.0.1/',
    ]) {
      expect(
        reasonOf(() => checkDestination(url)),
        url,
      ).toBe('NOT_PUBLIC');
    }
  });

  it('refuses schemes other than http and https', () => {
    for (const url of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'gopher://example.com/',
      'javascript:alert(1)',
    ]) {
      expect(
        reasonOf(() => checkDestination(url)),
        url,
      ).toBe('SCHEME');
    }
  });

  it('accepts public literals and host names (names are checked again at every connection)', () => {
    expect(checkDestination('https://hooks.example.com/stampcard').hostname).toBe('hooks.example.com');
    expect(checkDestination('http://8.8.8.8/').hostname).toBe('8.8.8.8');
    expect(checkDestination('http://[2001:4860:4860::8888]/').hostname).toBe('[2001:4860:4860::8888]');
  });

  it('accepts private addresses only when private networks are allowed', () => {
    expect(checkDestination('http://127.0.0.1:8080/', { allowPrivateNetworks: true }).port).toBe('8080');
  });
});

describe('publicOnlyLookup (at every connection)', () => {
  let hits = 0;
  const receiver = http.createServer((_req, res) => {
    hits += 1;
    res.writeHead(204).end();
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  const get = (opts: { allowPrivateNetworks?: boolean }) =>
    new Promise<{ status?: number; code?: string }>((resolve) => {
      const req = http.get(`http://localhost:${port}/`, { lookup: publicOnlyLookup(opts) }, (res) => {
        res.resume();
        resolve({ status: res.statusCode });
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code }));
    });

  it('a host name that resolves to loopback is refused before any connection', async () => {
    const before = hits;
    expect(await get({})).toEqual({ code: 'EDESTINATIONREFUSED' });
    expect(hits).toBe(before);
  });

  it('the same connection goes through when private networks are allowed', async () => {
    const before = hits;
    expect(await get({ allowPrivateNetworks: true })).toEqual({ status: 204 });
    expect(hits).toBe(before + 1);
  });
});
