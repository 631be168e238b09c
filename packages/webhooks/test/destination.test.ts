import dgram from 'node:dgram';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  checkDestination,
  createHostResolver,
  DestinationRefusedError,
  publicOnlyLookup,
} from '../src/index';

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
      // IPv4-compatible IPv6 (::/96): the URL parser writes the first as [::7f00:1], which ipaddr.js calls unicast.
      'http://[::127.0.0.1]/',
      'http://[::7f00:1]/',
      'http://[::10.0.0.1]/',
      'http://[::8.8.8.8]/',
      'http://[0:0:0:0:0:0:a9fe:a9fe]/',
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

describe('publicOnlyLookup: DNS that never answers', () => {
  // A DNS server of the test's own that reads every query and answers none: the look-ups below never reach
  // the system's resolver.
  const dns = dgram.createSocket('udp4');
  const queried = new Set<string>();
  dns.on('message', (msg, rinfo) => {
    // The question's name: length-prefixed labels from byte 12 of the query.
    const labels: string[] = [];
    for (let i = 12; i < msg.length && msg[i]! > 0; i += msg[i]! + 1) {
      labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString());
    }
    const name = labels.join('.');
    queried.add(name);
    // Names starting `nx-` get NXDOMAIN at once (the query sent back with QR, RD, RA and RCODE 3); the others
    // nothing, ever.
    if (name.startsWith('nx-')) {
      const answer = Buffer.from(msg);
      answer.writeUInt16BE(0x8183, 2);
      dns.send(answer, rinfo.port, rinfo.address);
    }
  });
  let hits = 0;
  const receiver = http.createServer((_req, res) => {
    hits += 1;
    res.writeHead(204).end();
  });
  let dnsPort = 0;
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => dns.bind(0, '127.0.0.1', resolve));
    dnsPort = dns.address().port;
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    dns.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  type Outcome = { status?: number; code?: string; name?: string };
  const get = (host: string, lookup: ReturnType<typeof publicOnlyLookup>) =>
    new Promise<Outcome>((resolve) => {
      const req = http.get(`http://${host}:${port}/`, { lookup, agent: false }, (res) => {
        res.resume();
        resolve({ status: res.statusCode });
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code, name: err.name }));
    });

  it('eight look-ups that never get an answer do not hold a ninth, and each fails on its own bound', async () => {
    const lookup = publicOnlyLookup({
      allowPrivateNetworks: true,
      dnsServers: [`127.0.0.1:${dnsPort}`],
      dnsTimeoutMs: 3000,
    });
    const settled: string[] = [];
    const silent = Array.from({ length: 8 }, (_, i) =>
      get(`silent-${i}.stampcard.test`, lookup).then((o) => {
        settled.push(`silent-${i}`);
        return o;
      }),
    );
    // Every silent name has been asked for before the ninth look-up starts: they hold whatever they hold.
    await vi.waitFor(() => expect(queried.size).toBe(8), { timeout: 5000, interval: 10 });
    const before = hits;
    // With dns.lookup, four of these would hold libuv's four threads, and this one would wait behind them.
    expect(await get('localhost', lookup)).toEqual({ status: 204 });
    expect(hits).toBe(before + 1);
    expect(settled).toEqual([]);
    // Each silent look-up ends at its bound as a DNS error the HTTP stack reports (no connection made).
    for (const outcome of await Promise.all(silent)) {
      expect(outcome).toEqual({ code: 'EAI_AGAIN', name: 'DnsLookupError' });
    }
    expect(hits).toBe(before + 1);
  });

  it('a name with no answer is ENOTFOUND; localhost and IP literals never reach DNS', async () => {
    const resolveHost = createHostResolver({ dnsServers: [`127.0.0.1:${dnsPort}`], dnsTimeoutMs: 3000 });
    const asked = queried.size;
    expect(await resolveHost('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await resolveHost('api.localhost', 4)).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(await resolveHost('192.0.2.7')).toEqual([{ address: '192.0.2.7', family: 4 }]);
    expect(await resolveHost('[2001:db8::1]')).toEqual([{ address: '2001:db8::1', family: 6 }]);
    expect(queried.size).toBe(asked);
    // No such name: ENOTFOUND, which the dispatcher records as a DNS attempt.
    await expect(resolveHost('nx-nowhere.stampcard.test')).rejects.toMatchObject({
      name: 'DnsLookupError',
      code: 'ENOTFOUND',
    });
  });
});
