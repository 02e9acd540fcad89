/**
 * A MeshRootStorage in a directory (the server's `--pki-dir` style): ca-cert.pem and ca-key.pem,
 * mode 0600, written exclusively so that two processes starting together cannot both generate a root
 * and silently overwrite each other (the second save fails; it restarts and loads the first one's).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MESH_ROOT_KEYS, type MeshRootStorage } from "./root.js";

export function createFileMeshRootStorage(dir: string): MeshRootStorage {
  const read = async (name: string): Promise<string | undefined> => {
    try {
      return await readFile(join(dir, name), "utf8");
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  };
  return {
    describe: `directory ${dir}`,
    async load() {
      const [certPem, keyPem] = await Promise.all([read(MESH_ROOT_KEYS.cert), read(MESH_ROOT_KEYS.key)]);
      return certPem && keyPem ? { certPem, keyPem } : undefined;
    },
    async save(root) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await writeFile(join(dir, MESH_ROOT_KEYS.key), root.keyPem, { mode: 0o600, flag: "wx" });
      await writeFile(join(dir, MESH_ROOT_KEYS.cert), root.certPem, { mode: 0o600, flag: "wx" });
    },
  };
}
