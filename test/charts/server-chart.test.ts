/**
 * charts/gitmesh-server rendered like `helm template`: Kubernetes schema validity, hardening,
 * probes, ports, Redis (bundled/external/none), secrets created once or brought in (relay token,
 * webhook secret, API tokens), HTTPS on the HTTP port, exact RBAC, values checks and golden renders.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { helmBinary, notes, render, renderOk, type Manifest } from "./helm.js";
import { envOf, expectGolden, expectHardened, find, grantsOf, ofKind, podSpec, RELAY, serverCalls, validateAll } from "./checks.js";

const CHART = "gitmesh-server";
const BASE = ["--name", "gitmesh-server", "--namespace", "gitmesh", "--set", "git.url=https://git.example.com/acme/mesh-config.git"];

/** Generated secret values differ on every render (lookup is empty under `helm template`): mask them for goldens. */
function maskGenerated(text: string): string {
  return text.replace(/^( {2}(?:token|secret|read|admin): )[A-Za-z0-9+/=]{64}$/gm, "$1<generated>");
}

function secretData(manifests: readonly Manifest[], name: string): Record<string, string> {
  const data = find(manifests, "Secret", name).data as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
}


// The real helm (tools/helm): missing, every test here fails with the command that builds it.
beforeAll(() => {
  helmBinary();
});

describe("gitmesh-server chart", () => {
  it("renders valid, hardened manifests with defaults (golden)", async () => {
    const { text, manifests } = await renderOk(CHART, BASE);
    validateAll(manifests);
    expect(manifests.map((m) => `${m.object.kind}/${m.object.metadata.name}`).sort()).toEqual([
      "Deployment/gitmesh-server", "Deployment/gitmesh-server-redis", "Role/gitmesh-server", "RoleBinding/gitmesh-server",
      "Secret/gitmesh-api-tokens", "Secret/gitmesh-server-webhook", "Secret/relay-identity-token-secret",
      "Service/gitmesh-server", "Service/gitmesh-server-http", "Service/gitmesh-server-redis", "ServiceAccount/gitmesh-server",
    ]);
    const dep = find(manifests, "Deployment", "gitmesh-server");
    expectHardened(dep);
    expectHardened(find(manifests, "Deployment", "gitmesh-server-redis"));
    const [c] = podSpec(dep).containers;
    expect(c?.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c?.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(c?.ports?.map((p) => [p.name, p.containerPort])).toEqual([["grpc-relay", 9900], ["http", 9091]]);
    expect(envOf(c!)).toMatchObject({
      REDIS_URL: "redis://gitmesh-server-redis:6379",
      GITMESH_REDIS_PREFIX: "gitmesh",
      GITMESH_GIT_URL: "https://git.example.com/acme/mesh-config.git",
      GITMESH_GIT_BRANCH: "main",
      GITMESH_RELAY_GENERATE_CA: "true",
      GITMESH_WEBHOOK_SECRET: { secretKeyRef: { name: "gitmesh-server-webhook", key: "secret" } },
      // The API tokens: the chart's Secret, mounted (never in env values).
      GITMESH_API_TOKEN_FILE: "/etc/gitmesh/api-tokens/read",
      GITMESH_API_ADMIN_TOKEN_FILE: "/etc/gitmesh/api-tokens/admin",
      GITMESH_API_TOKEN_SECRET: "gitmesh-api-tokens",
    });
    expect(envOf(c!)).not.toHaveProperty("GITMESH_GIT_PASSWORD");
    expect(envOf(c!)).not.toHaveProperty("GITMESH_API_AUTH");
    expect(envOf(c!)).not.toHaveProperty("GITMESH_HTTP_TLS_CERT_FILE");
    expect(c?.volumeMounts).toContainEqual({ name: "api-tokens", mountPath: "/etc/gitmesh/api-tokens", readOnly: true });
    expect(podSpec(dep).volumes).toContainEqual({ name: "api-tokens", secret: { secretName: "gitmesh-api-tokens", defaultMode: 0o440 } });
    expect(find(manifests, "Service", "gitmesh-server").spec).toMatchObject({ type: "LoadBalancer", ports: [{ name: "grpc-relay", port: 9900 }] });
    expect(find(manifests, "Service", "gitmesh-server-http").spec).toMatchObject({ type: "ClusterIP", ports: [{ name: "http", port: 9091 }] });
    expectGolden("server-defaults", maskGenerated(text));
  });

  it("generates the token and webhook secret once: kept on uninstall, fresh only when nothing exists", async () => {
    const a = await renderOk(CHART, BASE);
    const b = await renderOk(CHART, BASE);
    const tokenA = secretData(a.manifests, RELAY.token).token;
    expect(tokenA).toMatch(/^[A-Za-z0-9]{48}$/);
    // `helm template` has no cluster, so lookup is empty and each render generates anew; a real
    // upgrade finds the secret and keeps its value (the template's first branch).
    expect(secretData(b.manifests, RELAY.token).token).not.toBe(tokenA);
    const apiA = secretData(a.manifests, "gitmesh-api-tokens");
    expect(apiA.read).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(apiA.admin).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(apiA.read).not.toBe(apiA.admin);
    expect(secretData(b.manifests, "gitmesh-api-tokens").read).not.toBe(apiA.read);
    for (const name of [RELAY.token, "gitmesh-server-webhook", "gitmesh-api-tokens"]) {
      expect((find(a.manifests, "Secret", name).metadata as { annotations: Record<string, string> }).annotations["helm.sh/resource-policy"]).toBe("keep");
    }
    const given = await renderOk(CHART, [...BASE, "--set", "relay.token.value=0123456789abcdefXYZ", "--set", "webhook.secret=hook-secret", "--set", `api.tokens.read=${"r".repeat(32)},api.tokens.admin=${"a".repeat(40)}`]);
    expect(secretData(given.manifests, "gitmesh-api-tokens")).toEqual({ read: "r".repeat(32), admin: "a".repeat(40) });
    expect(secretData(given.manifests, RELAY.token).token).toBe("0123456789abcdefXYZ");
    expect(secretData(given.manifests, "gitmesh-server-webhook").secret).toBe("hook-secret");
  });

  it("RBAC: only secrets, in its own namespace", async () => {
    const { manifests } = await renderOk(CHART, BASE);
    expect(ofKind(manifests, "ClusterRole")).toEqual([]);
    expect([...grantsOf(manifests, { name: "gitmesh-server", namespace: "gitmesh" })].sort()).toEqual([...serverCalls("gitmesh", true)].sort());
  });

  it("external Redis, existing secrets, several replicas, Git credentials (golden)", async () => {
    const { text, manifests } = await renderOk(CHART, [
      ...BASE,
      "--set", "replicas=3",
      "--set", "redis.bundled.enabled=false,redis.external.existingSecret=redis-conn,redis.external.existingSecretKey=address",
      "--set", "relay.tls.existingSecrets=true,relay.token.existingSecret=true",
      "--set", "api.tokens.existingSecret=true,api.tokens.secretName=ops-api-tokens",
      "--set", "http.tls.secretName=gitmesh-http-tls",
      "--set", "webhook.existingSecret=github-hook",
      "--set", "git.credentials.existingSecret=git-creds,git.branch=prod,git.path=mesh",
      "--set", "relay.service.type=NodePort,relay.additionalSans={relay.example.com,10.0.0.5}",
    ]);
    validateAll(manifests);
    expect(ofKind(manifests, "Secret")).toEqual([]);
    expect(manifests.some((m) => m.object.metadata.name.endsWith("-redis"))).toBe(false);
    const dep = find(manifests, "Deployment", "gitmesh-server");
    expect((dep.spec as { replicas: number }).replicas).toBe(3);
    const env = envOf(podSpec(dep).containers[0]!);
    expect(env).toMatchObject({
      REDIS_URL: { secretKeyRef: { name: "redis-conn", key: "address" } },
      GITMESH_GIT_USERNAME: { secretKeyRef: { name: "git-creds", key: "username" } },
      GITMESH_GIT_PASSWORD: { secretKeyRef: { name: "git-creds", key: "password" } },
      GITMESH_WEBHOOK_SECRET: { secretKeyRef: { name: "github-hook", key: "secret" } },
      GITMESH_RELAY_GENERATE_CA: "false",
      GITMESH_RELAY_ADDITIONAL_SANS: "relay.example.com,10.0.0.5",
      GITMESH_GIT_BRANCH: "prod",
      GITMESH_GIT_PATH: "mesh",
      GITMESH_API_TOKEN_SECRET: "ops-api-tokens",
      GITMESH_HTTP_TLS_CERT_FILE: "/etc/gitmesh/http-tls/tls.crt",
      GITMESH_HTTP_TLS_KEY_FILE: "/etc/gitmesh/http-tls/tls.key",
    });
    // HTTPS on the HTTP port: probes and the Prometheus scrape follow it.
    const [c] = podSpec(dep).containers;
    for (const probe of [c?.startupProbe, c?.livenessProbe, c?.readinessProbe]) expect(probe?.httpGet?.scheme).toBe("HTTPS");
    expect((dep.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations["prometheus.io/scheme"]).toBe("https");
    expect(podSpec(dep).volumes).toContainEqual({ name: "api-tokens", secret: { secretName: "ops-api-tokens", defaultMode: 0o440 } });
    expect(podSpec(dep).volumes).toContainEqual({ name: "http-tls", secret: { secretName: "gitmesh-http-tls", defaultMode: 0o440 } });
    expect([...grantsOf(manifests, { name: "gitmesh-server", namespace: "gitmesh" })].sort()).toEqual([...serverCalls("gitmesh", false)].sort());
    expectGolden("server-representative", text);
  });

  it("api.auth.enabled=false: no token Secret, no mount, the server is told and the NOTES warn", async () => {
    const { manifests } = await renderOk(CHART, [...BASE, "--set", "api.auth.enabled=false"]);
    validateAll(manifests);
    expect(manifests.some((m) => m.object.kind === "Secret" && m.object.metadata.name === "gitmesh-api-tokens")).toBe(false);
    const dep = find(manifests, "Deployment", "gitmesh-server");
    const env = envOf(podSpec(dep).containers[0]!);
    expect(env.GITMESH_API_AUTH).toBe("false");
    expect(env).not.toHaveProperty("GITMESH_API_TOKEN_FILE");
    expect(podSpec(dep).volumes?.map((v) => v.name)).toEqual(["tmp"]);
    const shown = await notes(CHART, [...BASE, "--set", "api.auth.enabled=false"]);
    expect(shown.stdout).toContain("is OPEN (api.auth.enabled=false)");
  });

  it("commitStatus: the host, repository and a token file from the Secret (never an environment value); off by default", async () => {
    const off = await renderOk(CHART, BASE);
    expect(envOf(podSpec(find(off.manifests, "Deployment", "gitmesh-server")).containers[0]!)).not.toHaveProperty("GITMESH_COMMIT_STATUS");
    const { manifests } = await renderOk(CHART, [...BASE, "--set", "commitStatus.platform=github", "--set", "commitStatus.repository=acme/mesh-config", "--set", "commitStatus.tokenSecret=gh-status-token"]);
    validateAll(manifests);
    const dep = find(manifests, "Deployment", "gitmesh-server");
    const container = podSpec(dep).containers[0]!;
    const env = envOf(container);
    expect(env).toMatchObject({ GITMESH_COMMIT_STATUS: "github", GITMESH_COMMIT_STATUS_REPOSITORY: "acme/mesh-config", GITMESH_COMMIT_STATUS_TOKEN_FILE: "/etc/gitmesh/commit-status/token" });
    expect(env).not.toHaveProperty("GITMESH_COMMIT_STATUS_API_URL");
    expect(container.volumeMounts).toContainEqual({ name: "commit-status-token", mountPath: "/etc/gitmesh/commit-status", readOnly: true });
    expect(podSpec(dep).volumes).toContainEqual({ name: "commit-status-token", secret: { secretName: "gh-status-token", items: [{ key: "token", path: "token" }], defaultMode: 288 } });
    // Opting in without a repository or token Secret is refused by the values schema.
    const incomplete = await render(CHART, [...BASE, "--set", "commitStatus.platform=gitlab"]);
    expect(incomplete.code).toBe(1);
    expect(incomplete.stderr).toContain("at '/commitStatus/repository': minLength: got 0, want 1");
    expect(incomplete.stderr).toContain("at '/commitStatus/tokenSecret': minLength: got 0, want 1");
  });

  it("external Redis by URL and inline Git credentials become chart-owned secrets", async () => {
    const { manifests } = await renderOk(CHART, [
      ...BASE,
      "--set", "redis.bundled.enabled=false,redis.external.url=rediss://:pw@redis.internal:6380/0,redis.prefix=team-a",
      "--set", "git.credentials.username=bot,git.credentials.password=s3cret-token",
    ]);
    validateAll(manifests);
    expect(secretData(manifests, "gitmesh-server-redis")).toEqual({ url: "rediss://:pw@redis.internal:6380/0" });
    expect(secretData(manifests, "gitmesh-server-git-credentials")).toEqual({ username: "bot", password: "s3cret-token" });
    const env = envOf(podSpec(find(manifests, "Deployment", "gitmesh-server")).containers[0]!);
    expect(env.REDIS_URL).toEqual({ secretKeyRef: { name: "gitmesh-server-redis", key: "url" } });
    expect(env.GITMESH_REDIS_PREFIX).toBe("team-a");
    expect(env.GITMESH_RETENTION_COMMITS).toBe("100");
    // Credentials never appear in plain env values.
    expect(JSON.stringify(env)).not.toContain("s3cret-token");
    expect(JSON.stringify(env)).not.toContain(":pw@");
  });

  it("no Redis at all is fine for one replica (in-memory) and refused for several", async () => {
    const one = await renderOk(CHART, [...BASE, "--set", "redis.bundled.enabled=false"]);
    const env = envOf(podSpec(find(one.manifests, "Deployment", "gitmesh-server")).containers[0]!);
    expect(env).not.toHaveProperty("REDIS_URL");
    expect(env).not.toHaveProperty("GITMESH_REDIS_PREFIX");
    const shown = await notes(CHART, [...BASE, "--set", "redis.bundled.enabled=false"]);
    expect(shown.stdout).toContain("keeps its state in memory");
    const three = await render(CHART, [...BASE, "--set", "redis.bundled.enabled=false,replicas=3"]);
    expect(three.code).toBe(1);
    expect(three.stderr).toContain("replicas > 1 needs a shared Redis");
  });

  it("NOTES explain how agents register (per-cluster credentials; the root CA and fleet token with the opt-in)", async () => {
    const r = await notes(CHART, BASE);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("gitmesh cluster register <name> --mgmt-context");
    expect(r.stdout).toContain("gitmesh cluster reissue <name>");
    expect(r.stdout).not.toContain("jsonpath='{.data.token}'");
    const fleet = await notes(CHART, [...BASE, "--set", "relay.bootstrap=fleet-token"]);
    expect(fleet.stdout).toContain("kubectl -n gitmesh get secret relay-root-tls-secret -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.crt");
    expect(fleet.stdout).toContain("kubectl -n gitmesh get secret relay-identity-token-secret -o jsonpath='{.data.token}' | base64 -d > token");
    expect(fleet.stdout).toContain("gitmesh cluster register <name> --fleet-token");
    expect(r.stdout).toContain("kubectl -n gitmesh get secret gitmesh-api-tokens -o jsonpath='{.data.read}' | base64 -d > api-token");
    expect(r.stdout).toContain("gitmesh check --server http://localhost:9091 --token-file api-token");
    const tls = await notes(CHART, [...BASE, "--set", "http.tls.secretName=gitmesh-http-tls"]);
    expect(tls.stdout).toContain("gitmesh check --server https://localhost:9091 --token-file api-token --ca-file");
  });

  it("an SSH git.url: the key Secret mounted read-only, the passphrase optional, known_hosts from a value or the Secret (#38)", async () => {
    const SSH = ["--name", "gitmesh-server", "--namespace", "gitmesh", "--set", "git.url=git@github.com:acme/mesh-config.git"];
    const known = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const { manifests } = await renderOk(CHART, [...SSH, "--set", "git.ssh.secretName=gitmesh-git-ssh", "--set-string", `git.ssh.knownHosts=${known}`]);
    validateAll(manifests);
    const dep = find(manifests, "Deployment", "gitmesh-server");
    const container = podSpec(dep).containers[0]!;
    expect(envOf(container)).toMatchObject({
      GITMESH_GIT_URL: "git@github.com:acme/mesh-config.git",
      GITMESH_GIT_SSH_KEY_FILE: "/etc/gitmesh/git-ssh/identity",
      GITMESH_GIT_SSH_KEY_PASSPHRASE: { secretKeyRef: { name: "gitmesh-git-ssh", key: "passphrase", optional: true } },
      GITMESH_GIT_SSH_KNOWN_HOSTS_FILE: "/etc/gitmesh/git-known-hosts/known_hosts",
    });
    expect(envOf(container)).not.toHaveProperty("GITMESH_GIT_SSH_ACCEPT_NEW_HOST_KEYS");
    expect(container.volumeMounts).toContainEqual({ name: "git-ssh", mountPath: "/etc/gitmesh/git-ssh", readOnly: true });
    expect(podSpec(dep).volumes).toContainEqual({ name: "git-ssh", secret: { secretName: "gitmesh-git-ssh", defaultMode: 288 } });
    expect(podSpec(dep).volumes).toContainEqual({ name: "git-known-hosts", configMap: { name: "gitmesh-server-git-known-hosts" } });
    expect(find(manifests, "ConfigMap", "gitmesh-server-git-known-hosts").data).toEqual({ known_hosts: known });

    // known_hosts from the Secret when no value is given; trust on first use only when asked for
    const fromSecret = envOf(podSpec(find((await renderOk(CHART, [...SSH, "--set", "git.ssh.secretName=gitmesh-git-ssh"])).manifests, "Deployment", "gitmesh-server")).containers[0]!);
    expect(fromSecret.GITMESH_GIT_SSH_KNOWN_HOSTS_FILE).toBe("/etc/gitmesh/git-ssh/known_hosts");
    const tofu = envOf(podSpec(find((await renderOk(CHART, [...SSH, "--set", "git.ssh.secretName=gitmesh-git-ssh,git.ssh.acceptNewHostKeys=true"])).manifests, "Deployment", "gitmesh-server")).containers[0]!);
    expect(tofu).not.toHaveProperty("GITMESH_GIT_SSH_KNOWN_HOSTS_FILE");
    expect(tofu.GITMESH_GIT_SSH_ACCEPT_NEW_HOST_KEYS).toBe("true");

    // an SSH URL without a key Secret is refused, saying which values to set
    const keyless = await render(CHART, SSH);
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toContain("set git.ssh.secretName");
    // http(s) URLs get none of it
    const https = envOf(podSpec(find((await renderOk(CHART, BASE)).manifests, "Deployment", "gitmesh-server")).containers[0]!);
    expect(https).not.toHaveProperty("GITMESH_GIT_SSH_KEY_FILE");
  });

  it("rejects a missing git.url with a message naming the value", async () => {
    const r = await render(CHART, ["--name", "gitmesh-server"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("git.url is required");
    expect(r.stderr).toContain("gitmesh-server/templates/deployment.yaml");
  });

  it.each([
    [["--set", "git.url=github.com/acme/x.git"], "at '/git/url': 'github.com/acme/x.git' does not match pattern"],
    [["--set", "redis.external.url=localhost:6379"], "at '/redis/external/url': 'localhost:6379' does not match pattern"],
    [["--set", "relay.service.type=Ingress"], "at '/relay/service/type': value must be one of 'ClusterIP', 'NodePort', 'LoadBalancer'"],
    [["--set", "relay.token.value=short"], "at '/relay/token/value': 'short' does not match pattern"],
    [["--set", "redis.enabled=false"], "at '/redis': additional properties 'enabled' not allowed"],
    // A colon would make the BullMQ keys (<prefix>:bull:<queue>:wait) ambiguous.
    [["--set", "redis.prefix=team:a"], "at '/redis/prefix': 'team:a' does not match pattern"],
    [["--set", "api.tokens.read=short-token"], "at '/api/tokens/read': 'short-token' does not match pattern"],
    [["--set", "http.tls.secretName=Not_A_Name"], "at '/http/tls/secretName': 'Not_A_Name' does not match pattern"],
  ])("rejects values failing values.schema.json: %j", async (args, message) => {
    const r = await render(CHART, [...BASE, ...args]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("gitmesh-server:");
    expect(r.stderr).toContain(message);
  });
});
