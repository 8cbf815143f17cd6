/**
 * Outbound mail, for the few messages a person must get (a password-reset
 * link). One transport is chosen by MAIL_URL:
 *   - unset: the mail is written to the server log (`mail` line with to,
 *     subject and text), so a self-hoster reads the link there;
 *   - smtp://[user:pass@]host[:port]: SMTP (RFC 5321), upgraded with STARTTLS
 *     when the server offers it, AUTH PLAIN when credentials are given;
 *   - smtps://…: the same over TLS from the first byte (port 465 by default).
 * The client is small on purpose: one message per connection, plain text,
 * UTF-8, and every reply checked against the code it must have.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export type SendMail = (mail: Mail) => Promise<void>;

export interface MailConfig {
  MAIL_URL?: string | undefined;
  MAIL_FROM?: string | undefined;
  BASE_URL: string;
}

type Log = (level: 'info' | 'error', msg: string, fields?: Record<string, unknown>) => void;

/** The configured transport. */
export function mailTransport(config: MailConfig, log: Log): SendMail {
  const from = config.MAIL_FROM ?? `Fuse Gate <no-reply@${new URL(config.BASE_URL).hostname}>`;
  if (!config.MAIL_URL) {
    return async (m) => log('info', 'mail (no MAIL_URL set: written here instead of sent)', { to: m.to, subject: m.subject, text: m.text });
  }
  const url = new URL(config.MAIL_URL);
  const ehlo = new URL(config.BASE_URL).hostname;
  return (m) => sendSmtp(url, from, m, ehlo);
}

/** The bare address of "Name <a@b>" or "a@b". */
const addressOf = (s: string) => (/<([^>]+)>/.exec(s)?.[1] ?? s).trim();
/** A header value in UTF-8 (RFC 2047) when it is not plain ASCII. */
const header = (v: string) => (/^[\x20-\x7e]*$/.test(v) ? v : `=?UTF-8?B?${Buffer.from(v, 'utf8').toString('base64')}?=`);

/** The message as sent in DATA: headers, a blank line, the body with CRLF line ends and dot-stuffing. */
export function smtpMessage(from: string, m: Mail, now = new Date()): string {
  const clean = (v: string) => v.replace(/[\r\n]+/g, ' ');
  const body = m.text.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
  return [
    `From: ${clean(from)}`,
    `To: ${clean(m.to)}`,
    `Subject: ${header(clean(m.subject))}`,
    `Date: ${now.toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    body,
  ].join('\r\n');
}

/** Reads SMTP replies (possibly multi-line: "250-…" then "250 …") from a socket. */
function replies(socket: Socket | TLSSocket) {
  let buffer = '';
  let waiting: ((r: { code: number; text: string }) => void) | undefined;
  let failed: ((e: Error) => void) | undefined;
  const lines: string[] = [];
  const pump = () => {
    for (let i; (i = buffer.indexOf('\r\n')) >= 0;) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      lines.push(line);
      if (/^\d{3} /.test(line) || /^\d{3}$/.test(line)) {
        const r = { code: Number(line.slice(0, 3)), text: lines.join('\n') };
        lines.length = 0;
        const w = waiting;
        waiting = undefined;
        w?.(r);
      }
    }
  };
  const onData = (d: Buffer) => {
    buffer += d.toString('utf8');
    pump();
  };
  const onError = (e: Error) => failed?.(e);
  socket.on('data', onData);
  socket.on('error', onError);
  return {
    next: () =>
      new Promise<{ code: number; text: string }>((resolve, reject) => {
        waiting = resolve;
        failed = reject;
        pump();
      }),
    detach: () => {
      socket.off('data', onData);
      socket.off('error', onError);
    },
  };
}

/** Sends one message over SMTP; rejects with the server's reply when a step is refused. */
export async function sendSmtp(url: URL, from: string, m: Mail, ehloName: string, timeoutMs = 15_000): Promise<void> {
  const implicitTls = url.protocol === 'smtps:';
  const host = url.hostname;
  const port = Number(url.port || (implicitTls ? 465 : 587));
  let socket: Socket | TLSSocket = implicitTls ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port });
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`the mail server ${host}:${port} did not answer in time`)));
  let r = replies(socket);
  const expect = async (codes: number[], what: string) => {
    const reply = await r.next();
    if (!codes.includes(reply.code)) throw new Error(`the mail server refused ${what}: ${reply.text}`);
    return reply;
  };
  const send = async (line: string, codes: number[], what = line.split(' ')[0]!) => {
    socket.write(line + '\r\n');
    return expect(codes, what);
  };
  try {
    await expect([220], 'the connection');
    const helo = `EHLO ${ehloName}`;
    let ehlo = await send(helo, [250]);
    if (!implicitTls && /^250[ -]STARTTLS/im.test(ehlo.text)) {
      await send('STARTTLS', [220]);
      r.detach();
      socket = tlsConnect({ socket, servername: host });
      await new Promise<void>((resolve, reject) => {
        socket.once('secureConnect', () => resolve());
        socket.once('error', reject);
      });
      r = replies(socket);
      ehlo = await send(helo, [250]);
    }
    if (url.username) {
      const plain = Buffer.from(`\0${decodeURIComponent(url.username)}\0${decodeURIComponent(url.password)}`, 'utf8').toString('base64');
      await send(`AUTH PLAIN ${plain}`, [235], 'AUTH');
    }
    await send(`MAIL FROM:<${addressOf(from)}>`, [250], 'MAIL FROM');
    await send(`RCPT TO:<${addressOf(m.to)}>`, [250, 251], 'RCPT TO');
    await send('DATA', [354]);
    await send(`${smtpMessage(from, m)}\r\n.`, [250], 'the message');
    socket.write('QUIT\r\n');
  } finally {
    r.detach();
    socket.end();
  }
}
