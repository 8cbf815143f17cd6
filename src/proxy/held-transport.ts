/**
 * A server transport whose messages are held from the moment it starts until
 * a protocol connects to it. The proxy must read the client's `initialize`
 * (its capabilities) and connect the upstream with them before it can build
 * the server it answers with: that server then receives the held messages in
 * order, the `initialize` first, as if it had been connected all along.
 *
 * `tap`, when set, sees each message just before the protocol does.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

export class HeldTransport implements Transport {
  readonly #inner: Transport;
  readonly #held: Array<[JSONRPCMessage, MessageExtraInfo | undefined]> = [];
  #connected = false;
  #first: PromiseWithResolvers<JSONRPCMessage> = Promise.withResolvers();
  tap?: ((message: JSONRPCMessage) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;

  constructor(inner: Transport) {
    this.#inner = inner;
    inner.onmessage = (message, extra) => {
      if (this.#connected && this.onmessage) return this.#deliver(message, extra);
      this.#held.push([message, extra]);
      this.#first.resolve(message);
    };
    inner.onclose = () => {
      this.#first.reject(new Error('the client closed the connection before it sent anything'));
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
    this.#first.promise.catch(() => undefined);
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** Starts the inner transport and resolves with the first message it receives. */
  async firstMessage(): Promise<JSONRPCMessage> {
    await this.#inner.start();
    return this.#first.promise;
  }

  /** Called by the protocol as it connects: the inner transport runs already; the held messages go to it now. */
  async start(): Promise<void> {
    this.#connected = true;
    for (const [message, extra] of this.#held.splice(0)) this.#deliver(message, extra);
  }

  #deliver(message: JSONRPCMessage, extra: MessageExtraInfo | undefined): void {
    this.tap?.(message);
    this.onmessage?.(message, extra);
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.#inner.send(message, options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }
}
