/**
 * Which root signs for an IssuedCertificate's `ca` (and which roots are trusted next to it): the
 * management plane's one generated root (`mgmtServerCa.generated`, created once in shared storage),
 * or the Secret a RootTrustPolicy names (`mgmtServerCa.secretRef`, read through `readSecret` on every
 * request so that a replaced Secret takes effect without a restart).
 */
import type { Logger } from "../core/index.js";
import type { CaRef } from "./issued.js";
import type { ResolveMeshRoot } from "./mesh-ca.js";
import { loadOrCreateMeshRoot, MeshCaConfigError, meshRootFromPem, meshRootPemFromSecretData, type GenerateMeshRootOptions, type MeshRoot, type MeshRootStorage } from "./root.js";

/** Reads a Secret's data (decoded strings), or undefined when it does not exist. */
export type ReadCaSecret = (ref: { readonly name: string; readonly namespace: string }) => Promise<Readonly<Record<string, string>> | undefined>;

export interface MeshRootResolverOptions {
  /** Shared storage of the generated root. */
  readonly generated: MeshRootStorage;
  /** Options of a generated root (default MESH_ROOT_DEFAULTS). */
  readonly generateOptions?: GenerateMeshRootOptions;
  /** Reads `secretRef` Secrets (Kubernetes, or a directory); absent: secretRef is refused with a clear error. */
  readonly readSecret?: ReadCaSecret;
  /** Where secretRef Secrets are read from (logs, errors). */
  readonly describeSecrets?: string;
  readonly logger: Logger;
}

export function createMeshRootResolver(options: MeshRootResolverOptions): ResolveMeshRoot {
  const log = options.logger;
  let generated: Promise<MeshRoot> | undefined;
  const loadGenerated = (): Promise<MeshRoot> =>
    (generated ??= loadOrCreateMeshRoot(options.generated, options.generateOptions).then(
      ({ root, created }) => {
        if (created) log.info("mesh root CA generated", { storage: options.generated.describe });
        else log.info("mesh root CA loaded", { storage: options.generated.describe });
        return root;
      },
      (err: unknown) => {
        generated = undefined;
        throw err;
      },
    ));
  return async (ref: CaRef): Promise<MeshRoot> => {
    if ("generated" in ref) return loadGenerated();
    const { name, namespace } = ref.secretRef;
    const what = `the mgmtServerCa.secretRef Secret ${namespace}/${name}`;
    if (!options.readSecret) {
      throw new MeshCaConfigError(`${what} cannot be read: this server has no Kubernetes access (run it in a cluster or with --kubeconfig) and no --mesh-ca-secret-dir`);
    }
    if (!name) throw new MeshCaConfigError("a RootTrustPolicy's mgmtServerCa.secretRef has no name");
    const data = await options.readSecret({ name, namespace });
    if (!data) throw new MeshCaConfigError(`${what} does not exist (${options.describeSecrets ?? "secret storage"}); create it with ca-cert.pem, ca-key.pem and root-cert.pem (Istio's plug-in CA layout)`);
    const pem = meshRootPemFromSecretData(data);
    if (!pem) throw new MeshCaConfigError(`${what} has no ca-cert.pem and ca-key.pem (or tls.crt and tls.key)`);
    return meshRootFromPem(pem, what);
  };
}
