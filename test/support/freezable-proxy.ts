import net from 'node:net';

export type FreezableProxy = {
  port: number;
  /** From now on nothing passes either way: the store looks alive (connections stay open) but silent. */
  freeze(): void;
  /** Everything held back passes again. */
  thaw(): void;
  /** The bytes the server has sent through the proxy so far (what its clients read from it). */
  fromServer(): number;
  close(): Promise<void>;
};

/**
 * A TCP proxy on a free local port in front of a real server, which can be frozen: the way a store that
 * "stops answering on open connections" looks from the client (a hung host, a stalled network).
 */
export async function freezableProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<FreezableProxy> {
  let frozen = false;
  let fromServer = 0;
  const held: [net.Socket, Buffer][] = [];
  const sockets = new Set<net.Socket>();
  const forward = (from: net.Socket, to: net.Socket) =>
    from.on('data', (chunk: Buffer) => {
      if (frozen) held.push([to, chunk]);
      else to.write(chunk);
    });
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
      s.on('error', () => s.destroy());
    }
    forward(client, upstream);
    forward(upstream, client);
    upstream.on('data', (chunk: Buffer) => {
      fromServer += chunk.length;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const [to, chunk] of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    fromServer: () => fromServer,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
