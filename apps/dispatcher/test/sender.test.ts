import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSender, MAX_ANSWER_BYTES } from '../src/http';

/** What the receiver of a path does with the request, after reading it whole. */
type Answer = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base: string;
const answers = new Map<string, Answer>();
const received: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
const sockets = new Set<Socket>();
let closedSockets = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      answers.get(req.url!)!(req, res);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closedSockets += 1;
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  server.close();
});

/**
 * A loopback listener with a backlog of 0 that accepts nothing until told (`accept` on its stdin): it prints its
 * port, then, once told, takes every connection waiting and prints what came on each within 2.5 s (JSON), long
 * enough for the SYN a client sends again 3 s after its first.
 */
const UNACCEPTING_LISTENER = `
import json, socket, sys, time
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(0)
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
s.settimeout(2.5)
got = []
deadline = time.time() + 2.5
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(max(0.05, deadline - time.time()))
    data = b''
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    got.append(data.decode('latin-1'))
    c.close()
print(json.dumps(got), flush=True)
`;

const sender = createSender({ timeoutMs: 1000, allowPrivateNetworks: true });
afterAll(() => sender.close());

const at = (path: string, answer: Answer) => {
  answers.set(path, answer);
  return `${base}${path}`;
};

describe("the sender's answers", () => {
  it('POSTs the body with the caller’s headers and the delivery headers, and reads the status, Retry-After and the body', async () => {
    const url = at('/whole?x=1', (_req, res) => {
      res.writeHead(429, { 'Retry-After': '7', 'content-type': 'text/plain' });
      res.write('ok ');
      res.end(Buffer.from([0x61, 0x00, 0xff, 0x62]));
    });
    const result = await sender.send(url, { 'webhook-id': 'msg_1' }, '{"a":1}');
    expect(result).toMatchObject({
      statusCode: 429,
      retryAfter: '7',
      // NUL and invalid UTF-8 become U+FFFD: PostgreSQL's text holds neither.
      responseExcerpt: 'ok a\uFFFD\uFFFDb',
      errorClass: null,
    });
    const last = received.at(-1)!;
    expect(last).toMatchObject({ path: '/whole?x=1', body: '{"a":1}' });
    expect(last.headers).toMatchObject({
      'webhook-id': 'msg_1',
      'content-type': 'application/json',
      'user-agent': 'Stampcard-Webhooks/1',
    });
  });

  it('takes the answer after an informational one (103 Early Hints), and an empty body as an empty excerpt', async () => {
    const url = at('/early', (_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(204).end();
    });
    expect(await sender.send(url, {}, '{}')).toMatchObject({
      statusCode: 204,
      retryAfter: null,
      responseExcerpt: '',
      errorClass: null,
    });
  });

  it('keeps at most MAX_ANSWER_BYTES of a body and drops the rest, with its connection; the next request connects again', async () => {
    const url = at('/big', (_req, res) => {
      res.writeHead(500);
      res.write('x'.repeat(MAX_ANSWER_BYTES - 1));
      res.write('yz and more');
      // The rest would take its time: the sender does not wait for it.
      setTimeout(() => res.end('z'.repeat(100_000)), 300).unref();
    });
    const closedBefore = closedSockets;
    const result = await sender.send(url, {}, '{}');
    expect(result.statusCode).toBe(500);
    expect(result.responseExcerpt).toHaveLength(MAX_ANSWER_BYTES);
    expect(result.responseExcerpt!.endsWith('xy')).toBe(true);
    await expect.poll(() => closedSockets).toBeGreaterThan(closedBefore);
    const next = await sender.send(
      at('/after-big', (_req, res) => res.end('fine')),
      {},
      '{}',
    );
    expect(next).toMatchObject({ statusCode: 200, responseExcerpt: 'fine' });
  });

  it('takes the status of a body that trickles on, with what came of it by the excerpt’s wait (half the timeout here)', async () => {
    const url = at('/trickle', (_req, res) => {
      res.writeHead(200);
      res.write('first ');
      // Long after the excerpt's wait and the delivery's deadline.
      setTimeout(() => res.end('too late'), 3000).unref();
    });
    // Were the deadline to end it instead, the excerpt would be lost (the next test).
    expect(await sender.send(url, {}, '{}')).toMatchObject({
      statusCode: 200,
      responseExcerpt: 'first ',
      errorClass: null,
    });
  });

  it('loses only the excerpt when the deadline comes first, with the status in (it came late, less than the wait left)', async () => {
    const url = at('/late-and-slow', (_req, res) => {
      setTimeout(() => {
        res.writeHead(200);
        res.write('late ');
      }, 700).unref();
      setTimeout(() => res.end('later'), 3000).unref();
    });
    expect(await sender.send(url, {}, '{}')).toMatchObject({
      statusCode: 200,
      responseExcerpt: null,
      errorClass: null,
    });
  });

  it('loses only the excerpt when the body breaks off', async () => {
    const url = at('/broken', (req, res) => {
      res.writeHead(502, { 'content-length': '100' });
      res.write('part');
      setTimeout(() => req.socket.destroy(), 50).unref();
    });
    expect(await sender.send(url, {}, '{}')).toMatchObject({
      statusCode: 502,
      responseExcerpt: null,
      errorClass: null,
    });
  });

  it('is a TIMEOUT when no answer comes by the deadline, and the request is dropped', async () => {
    const url = at('/silent', () => {});
    const closedBefore = closedSockets;
    const result = await sender.send(url, {}, '{}');
    expect(result).toMatchObject({ statusCode: null, responseExcerpt: null, errorClass: 'TIMEOUT' });
    expect(result.latencyMs).toBeGreaterThanOrEqual(900);
    await expect.poll(() => closedSockets).toBeGreaterThan(closedBefore);
  });

  it('is a TIMEOUT when the connection is not made by the deadline, and the request is never sent late', async () => {
    // A listener that takes no connection (a `python3` socket with a backlog of 0, never accepted while the
    // delivery runs): once one connection fills its queue, the kernel drops the next one's SYN, and that connect
    // hangs. After the deadline the listener takes every connection and counts what each sent.
    const listener = spawn('python3', ['-c', UNACCEPTING_LISTENER], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: listener.stdout! })[Symbol.asyncIterator]();
    try {
      const port = Number((await lines.next()).value);
      const filler = connect(port, '127.0.0.1');
      await once(filler, 'connect');
      const result = await sender.send(`http://127.0.0.1:${port}/hook`, {}, '{"late":true}');
      expect(result).toMatchObject({ statusCode: null, responseExcerpt: null, errorClass: 'TIMEOUT' });
      expect(result.latencyMs).toBeGreaterThanOrEqual(900);
      filler.destroy();
      listener.stdin!.end('accept\n');
      // Every connection it took, and what came on each: none carries the delivery.
      const taken = JSON.parse((await lines.next()).value as string) as string[];
      expect(taken.join('')).not.toContain('late');
    } finally {
      listener.kill();
    }
  });

  it('is a CONNECTION failure when nothing listens', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    await once(closed, 'close');
    expect(await sender.send(`http://127.0.0.1:${port}/`, {}, '{}')).toMatchObject({
      statusCode: null,
      errorClass: 'CONNECTION',
    });
  });

  it('is REFUSED_ADDRESS for a private destination when they are not allowed, and nothing is sent', async () => {
    const guarded = createSender({ timeoutMs: 1000, allowPrivateNetworks: false });
    const before = received.length;
    const url = at('/private', (_req, res) => res.end());
    // Twice: the second answer comes from what the sender remembers of the URL.
    for (let i = 0; i < 2; i += 1) {
      expect(await guarded.send(url, {}, '{}')).toMatchObject({
        statusCode: null,
        errorClass: 'REFUSED_ADDRESS',
      });
    }
    expect(received.length).toBe(before);
    await guarded.close();
  });
});
