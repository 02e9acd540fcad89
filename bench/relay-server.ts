// Child process for bench/relay.ts: one relay server, so that its memory is measured without the clients.
import { Registry } from "prom-client";
import { silentLogger } from "../src/core/index.js";
import { createRelayServer, type RelayPki } from "../src/relay/index.js";

const [pkiJson, portArg] = process.argv.slice(2);
const pki = JSON.parse(Buffer.from(pkiJson!, "base64").toString()) as RelayPki;
const server = createRelayServer({ pki, token: "bench-token", isClusterRegistered: () => true, logger: silentLogger, registry: new Registry(), host: "127.0.0.1", port: Number(portArg) });
const port = await server.start();
process.send?.({ type: "ready", port });
process.on("message", (m: { type: string }) => {
  if (m.type === "mem") {
    global.gc?.();
    const c = server.connectedClusters();
    process.send?.({ type: "mem", heapUsed: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss, connected: c.length, warmed: c.filter((x) => x.warmed && x.pull).length, cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000 });
  }
});
