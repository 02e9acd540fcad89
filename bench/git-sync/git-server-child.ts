/**
 * The git-sync benchmark's Git server in a process of its own (not a benchmark): `git http-backend`
 * behind src/devtools' HTTP bridge, serving the bare repositories under the directory given on the
 * command line. Prints its base URL on stdout, then serves until stdin closes (the parent exits or ends it).
 */
import { startGitHttpServer } from "../../src/devtools/index.js";

const root = process.argv[2];
if (root === undefined) throw new Error("usage: git-server-child.ts <root>");
const server = await startGitHttpServer({ root });
process.stdout.write(`${server.baseUrl}\n`);
process.stdin.resume();
process.stdin.on("end", () => void server.stop().then(() => process.exit(0)));
