import { createReadStream, createWriteStream, mkdirSync, type ReadStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';

/** An upload larger than the cap: the partial file is removed. */
export class BlobTooLargeError extends Error {}

/**
 * Uploaded bytes, one file per id in a folder (beside the SQLite database by default). Writes go
 * to a temporary name and are renamed into place when complete, so a reader never sees half a file.
 */
export class BlobStore {
  private made = false;

  constructor(readonly dir: string) {}

  private path(id: string): string {
    // ids are minted by the gateway (`file-` + hex), never taken from a client as a path
    if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`invalid blob id ${JSON.stringify(id)}`);
    return join(this.dir, id);
  }

  /** Streams `source` to disk, at most `maxBytes`; returns the size written. */
  async write(id: string, source: Readable, maxBytes: number): Promise<number> {
    const final = this.path(id);
    const partial = `${final}.partial`;
    // made on the first upload, so a gateway that never stores a file leaves no folder behind
    if (!this.made) {
      mkdirSync(this.dir, { recursive: true });
      this.made = true;
    }
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > maxBytes) done(new BlobTooLargeError(`the file exceeds the limit of ${maxBytes} bytes`));
        else done(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, createWriteStream(partial));
      await rename(partial, final);
      return size;
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  read(id: string): ReadStream {
    return createReadStream(this.path(id));
  }

  async readAll(id: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of this.read(id)) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  async size(id: string): Promise<number | undefined> {
    try {
      return (await stat(this.path(id))).size;
    } catch {
      return undefined;
    }
  }

  async delete(id: string): Promise<void> {
    await rm(this.path(id), { force: true });
  }
}
