import { request } from 'node:http';

export type RawAnswer = { status: number; body: any; headers: Record<string, string | string[] | undefined> };

/**
 * A POST over a real socket, its body written as given: with a stated length, or chunk by chunk. The server may
 * answer and close before it has read everything (the body limit does): that is not an error here.
 */
export function rawPost(
  url: URL,
  headers: Record<string, string>,
  chunks: Buffer[],
  opts: { chunked: boolean },
): Promise<RawAnswer> {
  const length = chunks.reduce((n, c) => n + c.length, 0);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...headers,
          ...(opts.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(length) }),
        },
      },
      (res) => {
        const got: Buffer[] = [];
        res.on('data', (d: Buffer) => got.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(got).toString('utf8')),
            headers: res.headers,
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/** A loyalty-action body padded with a metadata string to `size` bytes, split into 64 KiB chunks. */
export function paddedTriggerBody(participantEmail: string, rewardId: string, size: number): Buffer[] {
  const head = JSON.stringify({ participantEmail, rewardId, metadata: { pad: '' } });
  const pad = 'x'.repeat(Math.max(0, size - head.length));
  const buf = Buffer.from(head.replace('"pad":""', `"pad":"${pad}"`));
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += 64 * 1024) chunks.push(buf.subarray(i, i + 64 * 1024));
  return chunks;
}
