/**
 * Development tools shipped with gitmesh for the demo and benchmarks (not used by the server or the
 * agent): a real Git smart-HTTP server over `git http-backend`, and a TCP balancer for replicas.
 */
export { createBareRepo, runGit, runHttpBackend, startGitHttpServer, type GitHttpServer, type GitHttpServerOptions, type HttpBackendHooks } from "./git-http-server.js";
export { createInProcessAgent, type InProcessAgentOptions } from "./agent.js";
export { startTcpBalancer, type TcpBackend, type TcpBalancer, type TcpBalancerOptions } from "./tcp-balancer.js";
