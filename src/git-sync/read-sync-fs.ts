/**
 * A file system client for isomorphic-git whose reads are synchronous underneath (promises that are
 * already settled when returned); writes stay asynchronous. isomorphic-git reads the objects of a push
 * one after the other through `fs.promises`, and each asynchronous read of a small loose object is four
 * thread-pool round trips (open, fstat, read, close): the first audit commit of a large fleet (tens of
 * thousands of objects) spent most of its push waiting on them. Reading a local file of a few hundred
 * bytes synchronously takes microseconds. Errors keep their `code` (ENOENT, ENOTDIR), which isomorphic-git
 * tests, and arrive as rejections, never as synchronous throws.
 *
 * For a git directory on local disk only (the audit writer's own repository or cache).
 */
import * as nodeFs from "node:fs";
import type { FsClient } from "isomorphic-git";

type Reader<A extends unknown[], R> = (...args: A) => R;

function settled<A extends unknown[], R>(read: Reader<A, R>): (...args: A) => Promise<R> {
  return (...args: A) => {
    try {
      return Promise.resolve(read(...args));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  };
}

export function createReadSyncFs(): FsClient {
  const p = nodeFs.promises;
  return {
    promises: {
      readFile: settled(nodeFs.readFileSync as (path: string, options?: unknown) => unknown),
      stat: settled(nodeFs.statSync as (path: string, options?: unknown) => unknown),
      lstat: settled(nodeFs.lstatSync as (path: string, options?: unknown) => unknown),
      readdir: settled(nodeFs.readdirSync as (path: string, options?: unknown) => unknown),
      readlink: settled(nodeFs.readlinkSync as (path: string, options?: unknown) => unknown),
      writeFile: p.writeFile,
      mkdir: p.mkdir,
      rmdir: p.rmdir,
      unlink: p.unlink,
      symlink: p.symlink,
      chmod: p.chmod,
    },
  };
}
