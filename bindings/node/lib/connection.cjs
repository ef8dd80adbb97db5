'use strict';
// connection.cjs — one Unix-socket connection to `fluebox serve`, speaking the
// line-delimited JSON protocol of docs/protocol.md.
//
// Requests are pipelined: each gets an integer id, and its events and final
// response are routed back by id, in whatever order the server sends them.
// The socket is unref'd while nothing is pending, so an idle client never
// keeps the Node.js process alive.

const net = require('node:net');
const { ConnectionError, ProtocolError, TooLargeError, fromWire } = require('./errors.cjs');

const NL = 0x0a;
// The server's default request line limit (server.info limits.maxMessageBytes).
const DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024;

class Connection {
  /** Connects to the socket at `path`. Rejects with a ConnectionError whose
   * `cause` carries the system error (ENOENT, ECONNREFUSED, EACCES). */
  static open(path, { timeoutMs = 10000 } = {}) {
    return new Promise((resolve, reject) => {
      const sock = net.createConnection({ path });
      let done = false;
      const timer = setTimeout(() => {
        if (done) return;
        done = true;
        sock.destroy();
        reject(new ConnectionError(`connecting to ${path} timed out`));
      }, timeoutMs);
      sock.once('connect', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(new Connection(sock, path));
      });
      sock.once('error', (e) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const err = new ConnectionError(`cannot connect to fluebox at ${path}: ${e.code || e.message}`, e);
        err.syscallCode = e.code;
        reject(err);
      });
    });
  }

  constructor(sock, path) {
    this.path = path;
    this._sock = sock;
    this._nextId = 1;
    this._pending = new Map(); // id -> { resolve, reject, onEvent, method }
    this._chunks = [];
    this._closed = false;
    this._closeError = null;
    this._closeListeners = new Set();
    this._paused = false;
    /** Requests longer than this are refused locally (too_large). */
    this.maxMessageBytes = DEFAULT_MAX_MESSAGE;
    sock.setNoDelay?.(true);
    sock.on('data', (buf) => this._onData(buf));
    sock.on('error', (e) => this._shutdown(new ConnectionError(`connection to fluebox lost: ${e.code || e.message}`, e)));
    sock.on('close', () => {
      // A close inside a reply line is a lost connection, not a bad line.
      const part = this._chunks.reduce((n, b) => n + b.length, 0);
      this._shutdown(new ConnectionError(part
        ? `connection to fluebox lost in the middle of a reply (${part} bytes of it received)`
        : 'connection to fluebox closed'));
    });
    this._updateRef();
  }

  get closed() { return this._closed; }
  get pendingCount() { return this._pending.size; }

  /** Calls `fn(err)` once when the connection closes. Returns a remover. */
  onClose(fn) {
    if (this._closed) { queueMicrotask(() => fn(this._closeError)); return () => {}; }
    this._closeListeners.add(fn);
    return () => this._closeListeners.delete(fn);
  }

  /**
   * Sends a request. Returns { id, promise }: the promise resolves with the
   * `result` object, or rejects with the error built from the server's
   * `error` (errors.cjs), or with a ConnectionError if the connection closes
   * first. `onEvent(msg)` receives the request's events. `flow`, for a
   * streamed exec, has wantsPause(): the socket stops being read only while
   * every pending request is a stream whose consumer is behind (so a paused
   * socket never holds back an answer someone waits for).
   */
  send(method, params, onEvent, flow) {
    const id = this._nextId++;
    let entry;
    const promise = new Promise((resolve, reject) => {
      entry = { resolve, reject, onEvent, method, flow };
    });
    if (this._closed) {
      entry.reject(this._closeError || new ConnectionError('connection to fluebox closed'));
      return { id, promise };
    }
    const line = JSON.stringify({ id, method, params: params || {} }) + '\n';
    // Not worth sending a line the server would only skip.
    if (Buffer.byteLength(line) > this.maxMessageBytes) {
      entry.reject(new TooLargeError(`request of ${Buffer.byteLength(line)} bytes is larger than the server's message limit (${this.maxMessageBytes})`));
      return { id, promise };
    }
    this._pending.set(id, entry);
    this._updateRef();
    this.reflow();
    this._sock.write(line);
    return { id, promise };
  }

  request(method, params, onEvent) {
    return this.send(method, params, onEvent).promise;
  }


  /** Pauses or resumes reading the socket (see send()). */
  reflow() {
    if (this._closed) return;
    let pause = this._pending.size > 0;
    if (pause) {
      for (const p of this._pending.values()) {
        if (!p.flow || !p.flow.wantsPause()) { pause = false; break; }
      }
    }
    if (pause && !this._paused) { this._paused = true; this._sock.pause(); }
    else if (!pause && this._paused) { this._paused = false; this._sock.resume(); }
  }

  /** Closes the connection; pending requests reject with ConnectionError. */
  close() {
    if (this._closed) return Promise.resolve();
    return new Promise((resolve) => {
      this._sock.once('close', () => resolve());
      this._sock.end();
      setTimeout(() => this._sock.destroy(), 1000).unref();
      this._shutdown(new ConnectionError('connection closed by the client'));
    });
  }

  _updateRef() {
    if (this._closed) return;
    if (this._pending.size > 0) this._sock.ref();
    else this._sock.unref();
  }

  _shutdown(err) {
    if (this._closed) return;
    this._closed = true;
    this._closeError = err;
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(err);
    for (const fn of this._closeListeners) {
      try { fn(err); } catch { /* a listener's bug must not stop the others */ }
    }
    this._closeListeners.clear();
    if (!this._sock.destroyed) this._sock.destroy();
  }

  _onData(buf) {
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(NL, start);
      if (nl < 0) break;
      let line;
      if (this._chunks.length) {
        this._chunks.push(buf.subarray(start, nl));
        line = Buffer.concat(this._chunks).toString('utf8');
        this._chunks = [];
      } else {
        line = buf.toString('utf8', start, nl);
      }
      start = nl + 1;
      this._onLine(line);
    }
    if (start < buf.length) this._chunks.push(buf.subarray(start));
  }

  _onLine(line) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (!line.trim()) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      this._shutdown(new ProtocolError('parse_error',
        `the server sent a line that is not JSON (${line.length} characters, ${e.message}; ` +
        `it starts ${JSON.stringify(line.slice(0, 40))})`));
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    if (msg.id === null || msg.id === undefined) {
      // Not tied to a request: a refused connection, or a line of ours the
      // server could not read. Nothing can be matched, so fail loudly.
      const e = fromWire(msg.error);
      if (e.code === 'limit_exceeded' || e.code === 'shutting_down') this._shutdown(e);
      else this.lastUnmatchedError = e;
      return;
    }
    const p = this._pending.get(msg.id);
    if (!p) return; // an answer to a request we gave up on
    if (typeof msg.event === 'string') {
      if (p.onEvent) {
        try { p.onEvent(msg); } catch (e) { /* consumer bugs are not ours */ void e; }
      }
      if (p.flow) this.reflow();
      return;
    }
    this._pending.delete(msg.id);
    this._updateRef();
    this.reflow();
    if (msg.error) p.reject(fromWire(msg.error));
    else p.resolve(msg.result && typeof msg.result === 'object' ? msg.result : {});
  }
}

module.exports = { Connection };
