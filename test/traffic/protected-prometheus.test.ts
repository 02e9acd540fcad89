// The traffic graph's Prometheus client against Debian's Prometheus behind TLS (a CA of the test's own)
// and, for a second instance, HTTP basic authentication as well (Prometheus's --web.config.file): the
// CA bundle is what makes the certificate trusted, without it the answer says to give one; a Prometheus
// that wants other credentials is a refusal that says so, never "unreachable" and never the token.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrometheusClient, PrometheusRefusedError } from "../../src/traffic/index.js";
import { selfSigned } from "../helpers/self-signed.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startPrometheus, type RunningPrometheus } from "../observability/prometheus-tools.js";

const tmp = useTempDirs("gitmesh-protected-prometheus-");
const TOKEN = "prometheus-bearer-token-0123456789";

describe("a Prometheus behind TLS and authentication", () => {
  let tlsOnly: RunningPrometheus;
  let withAuth: RunningPrometheus;
  let caPem: string;

  beforeAll(async () => {
    const dir = tmp();
    const { keyPem, certPem } = await selfSigned("prometheus.test", "127.0.0.1");
    caPem = certPem;
    writeFileSync(join(dir, "tls.key"), keyPem, { mode: 0o600 });
    writeFileSync(join(dir, "tls.crt"), certPem);
    // Prometheus keeps bcrypt hashes of its basic-auth users.
    const hash = execFileSync("/usr/bin/python3", ["-c", "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))", "a-password"], { encoding: "utf8" }).trim();
    const tlsConfig = `tls_server_config:\n  cert_file: ${join(dir, "tls.crt")}\n  key_file: ${join(dir, "tls.key")}\n`;
    writeFileSync(join(dir, "web-tls.yml"), tlsConfig);
    writeFileSync(join(dir, "web-auth.yml"), `${tlsConfig}basic_auth_users:\n  gitmesh: '${hash}'\n`);
    const config = { global: { scrape_interval: "1s" }, scrape_configs: [] };
    const a = tmp();
    const b = tmp();
    tlsOnly = await startPrometheus(a, config, [`--web.config.file=${join(dir, "web-tls.yml")}`]);
    withAuth = await startPrometheus(b, config, [`--web.config.file=${join(dir, "web-auth.yml")}`]);
    for (const p of [tlsOnly, withAuth]) await untilReadyTls(p.url);
  }, 120_000);
  afterAll(async () => {
    await (tlsOnly as RunningPrometheus | undefined)?.stop();
    await (withAuth as RunningPrometheus | undefined)?.stop();
  });

  /** Prometheus answers its readiness probe over TLS (trusting the test's CA through the client itself). */
  async function untilReadyTls(url: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await createPrometheusClient({ url, caPem, timeoutMs: 2000 }).query("vector(1)").then(() => "ok", (e: unknown) => (e instanceof PrometheusRefusedError && /HTTP 401/.test(e.message) ? "ok" : String(e)));
      if (r === "ok") return;
      if (Date.now() > deadline) throw new Error(`Prometheus at ${url} not ready: ${r}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  it("its CA bundle makes the certificate trusted: the query is answered", async () => {
    const rows = await createPrometheusClient({ url: tlsOnly.url, caPem }).query("vector(7)");
    expect(rows).toEqual([{ metric: {}, value: 7 }]);
  });

  it("without the CA bundle the certificate is not trusted, and the answer says to give it", async () => {
    const err = await createPrometheusClient({ url: tlsOnly.url, timeoutMs: 5000 }).query("vector(1)").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PrometheusRefusedError);
    expect((err as Error).message).toMatch(/the TLS certificate of Prometheus at https:\/\/127\.0\.0\.1:\d+ is not trusted \(.+\): give its CA bundle/);
  });

  it("a Prometheus that wants other credentials answers 401: a refusal naming the token's fault, the token never shown", async () => {
    const none = await createPrometheusClient({ url: withAuth.url, caPem }).query("vector(1)").catch((e: unknown) => e);
    expect(none).toBeInstanceOf(PrometheusRefusedError);
    expect((none as Error).message).toContain("refused the request (HTTP 401): it needs a bearer token");
    const wrong = await createPrometheusClient({ url: withAuth.url, caPem, token: TOKEN }).query("vector(1)").catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(PrometheusRefusedError);
    expect((wrong as Error).message).toContain("refused the request (HTTP 401): the bearer token is not accepted");
    expect((wrong as Error).message).not.toContain(TOKEN);
  });
});
