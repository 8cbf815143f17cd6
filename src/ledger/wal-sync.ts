/**
 * The WAL made durable off the event loop: group commit of the fsync.
 *
 * With `synchronous=FULL`, SQLite fsyncs the WAL inside every COMMIT, on the
 * thread that commits: under load that blocked the event loop for 0.7-1.6 ms a
 * batch on this machine, time in which no request was parsed or answered. So
 * the writer commits with `synchronous=OFF` (COMMIT only writes its frames to
 * the WAL) and this module syncs the WAL file on the libuv thread pool
 * (`fdatasync`, as SQLite itself does on Linux); the write queue answers a
 * batch only once a sync that began after its COMMIT has ended. One sync is in
 * flight at a time; every commit made meanwhile waits for the next one, so one
 * sync covers as many batches as arrived while the disk was busy.
 *
 * What this keeps from FULL: nothing is acknowledged before it is on disk, and
 * the WAL is append-only, so a later batch durable means every earlier one is
 * (a crash leaves a prefix of the batches, never a gap). What it changes: a
 * committed batch is visible to readers up to one sync before it is durable.
 * Whatever leaves the building signed (a checkpoint served or offered to a
 * witness) waits for `synced()` first, so no one ever holds a checkpoint that
 * a power cut could take back (a split view).
 *
 * Checkpoints (checkpoint-worker.ts) run on their own connection at FULL: it
 * syncs the WAL before it copies pages into the database file and syncs that
 * file before the WAL may be rewound. The writer must not checkpoint at OFF:
 * it never does while serving (wal_autocheckpoint=0) and is switched back to
 * FULL before it closes (the last connection to close checkpoints).
 *
 * A failed sync cannot be retried (the kernel may have dropped the dirty pages
 * it failed to write): every write waiting for it is refused, and so is every
 * later one, until the process is restarted and SQLite recovers from the WAL.
 */
import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export class WalSyncFailed extends Error {
  override name = 'WalSyncFailed';
}

/** How a file is synced (fs.fdatasync; a test passes its own to delay or fail it). */
export type SyncFile = (fd: number, done: (error: Error | null) => void) => void;

export class WalSync {
  readonly #walPath: string;
  readonly #syncFile: SyncFile;
  #fd: number | undefined;
  #failed: WalSyncFailed | undefined;
  /** The sync in flight, if any. */
  #current: Promise<void> | undefined;
  /** The sync that starts when the current one ends (it covers every commit made meanwhile). */
  #next: Promise<void> | undefined;

  constructor(databasePath: string, syncFile: SyncFile = fdatasync) {
    this.#walPath = `${databasePath}-wal`;
    this.#syncFile = syncFile;
  }

  get failed(): WalSyncFailed | undefined {
    return this.#failed;
  }

  /** Resolves once everything written to the WAL before this call is on disk. */
  synced(): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (!this.#current) return (this.#current = this.#sync());
    return (this.#next ??= this.#current.then(
      () => this.#startNext(),
      () => this.#startNext(),
    ));
  }

  #startNext(): Promise<void> {
    this.#next = undefined;
    return (this.#current = this.#sync());
  }

  async #sync(): Promise<void> {
    try {
      if (this.#failed) throw this.#failed;
      this.#fd ??= this.#open();
      await new Promise<void>((resolve, reject) => this.#syncFile(this.#fd!, (e) => (e ? reject(e) : resolve())));
    } catch (e) {
      this.#failed ??= new WalSyncFailed(`the write-ahead log ${this.#walPath} could not be synced to disk: ${(e as Error).message}`);
      throw this.#failed;
    } finally {
      if (!this.#next) this.#current = undefined;
    }
  }

  /**
   * The WAL exists once a transaction has committed. Its directory entry is
   * synced once too: at OFF SQLite never syncs the folder of the WAL it created.
   */
  #open(): number {
    const fd = openSync(this.#walPath, 'r');
    const dir = openSync(dirname(this.#walPath), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    return fd;
  }

  /** Waits for the sync in flight and closes the file. */
  async close(): Promise<void> {
    await Promise.allSettled([this.#current, this.#next]);
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
