import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES, readExcerpt } from '../src/excerpt';

/** A stream that has ended and said so, with its data read, before anyone reads its excerpt. */
async function endedStream(): Promise<Readable> {
  const body = Readable.from([Buffer.from('done')]);
  body.resume();
  await new Promise((resolve) => body.once('end', resolve));
  return body;
}

describe("an answer's excerpt", () => {
  it('is what came, whole, when the body ends in time; NUL and invalid UTF-8 become U+FFFD', async () => {
    const body = new PassThrough();
    const excerpt = readExcerpt(body, 1000);
    body.write('ok ');
    body.end(Buffer.from([0x61, 0x00, 0xff, 0x62]));
    expect(await excerpt).toBe('ok a\uFFFD\uFFFDb');
  });

  it('stops at MAX_ANSWER_BYTES and drops the rest of the body', async () => {
    const body = new PassThrough();
    const excerpt = readExcerpt(body, 1000);
    body.write('x'.repeat(MAX_ANSWER_BYTES - 1));
    body.write('yz and more');
    const text = await excerpt;
    expect(text).toHaveLength(MAX_ANSWER_BYTES);
    expect(text.endsWith('xy')).toBe(true);
    expect(body.destroyed).toBe(true);
  });

  it('is what came by the wait, from a body that trickles, and the body is dropped', async () => {
    const body = new PassThrough();
    const excerpt = readExcerpt(body, 100);
    body.write('first ');
    setTimeout(() => body.write('too late'), 300).unref();
    expect(await excerpt).toBe('first ');
    expect(body.destroyed).toBe(true);
  });

  it('is lost when the body breaks off before it ends', async () => {
    const body = new PassThrough();
    const excerpt = readExcerpt(body, 1000);
    body.write('part');
    body.destroy(new Error('connection reset'));
    await expect(excerpt).rejects.toThrow('connection reset');
  });

  it('is lost, at once, from a body that broke before it was read', async () => {
    const body = new PassThrough();
    body.on('error', () => {});
    body.destroy(new Error('broke early'));
    await new Promise((resolve) => setImmediate(resolve));
    // Without the check of `errored`, this would wait for events that were all sent already: the whole minute,
    // past the test's own timeout.
    await expect(readExcerpt(body, 60_000)).rejects.toThrow('broke early');
  });

  it('is empty, at once, from a body that ended before it was read', async () => {
    const body = await endedStream();
    // Without the check of `readableEnded`, this would wait for an end event already sent: the whole minute.
    await expect(readExcerpt(body, 60_000)).resolves.toBe('');
  });
});
