/** A mail server on loopback that speaks as little SMTP as a client needs, for tests of MAIL_URL. */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface Received {
  auth: string;
  from: string;
  to: string;
  data: string;
}

/** The SMTP a mail server speaks, as little of it as a client needs: every message received is kept, and awaited as it comes. */
export function smtpServer(): Promise<{ server: Server; port: number; mail: Received[]; arrived(count: number): Promise<void> }> {
  const mail: Received[] = [];
  const waiting = new Set<() => void>();
  const arrived = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => mail.length >= count && (waiting.delete(check), resolve());
      waiting.add(check);
      check();
    });
  const server = createServer((socket: Socket) => {
    const m: Received = { auth: '', from: '', to: '', data: '' };
    let inData = false;
    let buffer = '';
    socket.write('220 test.example ESMTP\r\n');
    socket.on('data', (d) => {
      buffer += d.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          m.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          mail.push(m);
          waiting.forEach((w) => w());
          socket.write('250 queued\r\n');
          continue;
        }
        const i = buffer.indexOf('\r\n');
        if (i < 0) return;
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (/^EHLO /i.test(line)) socket.write('250-test.example\r\n250 AUTH PLAIN\r\n');
        else if (/^AUTH PLAIN /i.test(line))
          ((m.auth = Buffer.from(line.slice(11), 'base64').toString('utf8')), socket.write('235 ok\r\n'));
        else if (/^MAIL FROM:/i.test(line)) ((m.from = line.slice(10)), socket.write('250 ok\r\n'));
        else if (/^RCPT TO:/i.test(line)) ((m.to = line.slice(8)), socket.write('250 ok\r\n'));
        else if (/^DATA$/i.test(line)) ((inData = true), socket.write('354 go ahead\r\n'));
        else if (/^QUIT$/i.test(line)) socket.end('221 bye\r\n');
        else socket.write('502 not here\r\n');
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port, mail, arrived })),
  );
}
