/** A loopback port free when asked: nothing listens on it (until something takes it). */
import { createServer, type AddressInfo } from 'node:net';

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
