/**
 * Channel credentials whose connections the relay client owns (#35 item 4). grpc-js keeps a
 * connection that was still handshaking when its channel closed (a stalled server), and nobody closes
 * it when the server later does: the socket sits in CLOSE-WAIT for the life of the process. Wrapping
 * the credentials records every socket the channel opens (TCP and TLS), bounds the TLS handshake, and
 * `destroyAll()` closes whatever grpc-js left open a grace period after the session ended (not at once:
 * destroying the socket under an HTTP/2 session that is still closing can crash Node).
 *
 * It uses grpc-js's credentials extension point (`_createSecureConnector`, the method every
 * ChannelCredentials implements); everything else is delegated to the real credentials.
 */
import * as grpc from "@grpc/grpc-js";
import type { Socket } from "node:net";

/** How long grpc-js gets to close a closed channel's connections itself. */
const SWEEP_GRACE_MS = 2000;

type CreateConnector = grpc.ChannelCredentials["_createSecureConnector"];
type SecureConnector = ReturnType<CreateConnector>;

export class OwnedConnectionCredentials extends grpc.ChannelCredentials {
  readonly #inner: grpc.ChannelCredentials;
  readonly #handshakeTimeoutMs: number;
  readonly #sockets = new Set<Socket>();
  #destroyed = false;
  #sweep: NodeJS.Timeout | undefined;

  /** `handshakeTimeoutMs`: a TLS handshake not done by then fails (its sockets destroyed). */
  constructor(inner: grpc.ChannelCredentials, handshakeTimeoutMs: number) {
    super();
    this.#inner = inner;
    this.#handshakeTimeoutMs = handshakeTimeoutMs;
  }

  /** Sockets open right now (tests, diagnostics). */
  get openSockets(): number {
    return this.#sockets.size;
  }

  override _isSecure(): boolean {
    return this.#inner._isSecure();
  }

  override _equals(other: grpc.ChannelCredentials): boolean {
    return other === this;
  }

  override _createSecureConnector(...args: Parameters<CreateConnector>): SecureConnector {
    const inner = this.#inner._createSecureConnector(...args);
    return {
      connect: (socket) => this.#connect(inner, socket),
      waitForReady: () => inner.waitForReady(),
      getCallCredentials: () => inner.getCallCredentials(),
      destroy: () => inner.destroy(),
    };
  }

  /**
   * Closes, a grace period from now, every socket the channel opened that is still open then (grpc-js
   * closes its own in the meantime); sockets whose handshake ends later are closed at once.
   */
  destroyAll(): void {
    this.#destroyed = true;
    this.#sweepLater();
  }

  #sweepLater(): void {
    if (this.#sweep !== undefined || this.#sockets.size === 0) return;
    this.#sweep = setTimeout(() => {
      this.#sweep = undefined;
      for (const s of this.#sockets) s.destroy();
      this.#sockets.clear();
    }, SWEEP_GRACE_MS);
    this.#sweep.unref();
  }

  #track(socket: Socket): void {
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
    if (this.#destroyed) this.#sweepLater();
  }

  async #connect(inner: SecureConnector, socket: Socket): ReturnType<SecureConnector["connect"]> {
    this.#track(socket);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`TLS handshake with the relay server not done within ${String(this.#handshakeTimeoutMs)} ms`));
      }, this.#handshakeTimeoutMs);
      timer.unref();
    });
    try {
      const result = await Promise.race([inner.connect(socket), timeout]);
      this.#track(result.socket);
      return result;
    } finally {
      clearTimeout(timer);
    }
  }
}
