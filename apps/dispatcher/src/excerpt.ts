import type { Readable } from 'node:stream';

/** At most this much of an answer is read, and kept with the attempt. */
export const MAX_ANSWER_BYTES = 4096;

/**
 * Longest the excerpt of an answer whose status is in is read, in ms (or half the delivery's timeout, if less):
 * the status decides, so a receiver that trickles its body holds the delivery's slot this long, not until the
 * timeout.
 */
export const EXCERPT_WAIT_MS = 500;

/**
 * Reads at most `MAX_ANSWER_BYTES` of a body, for at most `waitMs`, then drops the rest (and, if there was
 * more, the connection): what came by then is the excerpt. Invalid UTF-8 becomes U+FFFD, and so does NUL,
 * which PostgreSQL's text refuses. Read from the stream's events (an async iterator over it cost a tenth of a
 * delivery's own time).
 */
export function readExcerpt(body: Readable, waitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    // The error listener stays: an error the stream emits after the excerpt is taken is dropped with it.
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      body.off('data', onData);
      // Cut off at `waitMs` or at the excerpt's size: what came is the excerpt. Any other failure loses it.
      if (err !== undefined) return reject(err);
      // PostgreSQL's text cannot hold NUL: a binary answer is kept with U+FFFD in their place.
      resolve(
        Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8').replaceAll('\0', '\uFFFD'),
      );
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size < MAX_ANSWER_BYTES) return;
      settle();
      body.destroy();
    };
    const timer = setTimeout(() => {
      settle();
      body.destroy();
    }, waitMs);
    body.on('data', onData).once('end', settle).on('error', settle);
    // A body that ended or broke before these listeners came says so no more.
    if (body.errored) settle(body.errored);
    else if (body.readableEnded) settle();
  });
}
