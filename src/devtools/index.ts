/**
 * Development tools shipped with gitmesh for the demo and benchmarks (not used by the server or the
 * agent): a real Git smart-HTTP server over `git http-backend`, a TCP balancer for replicas, and the
 * deterministic fleet generator (configuration + discovery) of the benchmarks and `gitmesh simulate`.
 */
export { createBareRepo, runGit, runHttpBackend, startGitHttpServer, type GitHttpServer, type GitHttpServerOptions, type HttpBackendHooks } from "./git-http-server.js";
export { createInProcessAgent, type InProcessAgentOptions } from "./agent.js";
export { startTcpBalancer, type TcpBackend, type TcpBalancer, type TcpBalancerOptions } from "./tcp-balancer.js";
export {
  ADMIN_NAMESPACE,
  clusterName,
  createRandom,
  generateFleet,
  namespaceName,
  serviceName,
  workspaceName,
  type Fleet,
  type FleetFile,
  type FleetOptions,
  type FleetSnapshot,
} from "./fleet.js";
export { SIMULATION_POLICY_PATH, simulationFleet, simulationFleetOptions, type SimulationFleet, type SimulationFleetOptions } from "./simulation-fleet.js";
export { freePort, redisUnreachable, removeRedisKeys, startPrivateRedis, type PrivateRedis } from "./redis-server.js";
export { createProcessSampler, readProcessStats, type ProcessSampler, type ProcessStats } from "./process-stats.js";
export { createSimulatedAgent, type SimulatedAgent, type SimulatedAgentOptions, type SimulatedAgentTotals, type SimulatedApply } from "./simulated-agent.js";
export {
  runSimulation,
  SimulationAbortedError,
  SimulationError,
  type CommitFigures,
  type Distribution,
  type ProcessFigures,
  type SimulationOptions,
  type SimulationReport,
} from "./simulator.js";
