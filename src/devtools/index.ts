/**
 * Development tools shipped with gitmesh for the demo and benchmarks (not used by the server or the
 * agent): a real Git smart-HTTP server over `git http-backend`.
 */
export { createBareRepo, runGit, startGitHttpServer, type GitHttpServer, type GitHttpServerOptions } from "./git-http-server.js";
export { createInProcessMeshCa } from "./mesh-ca.js";
