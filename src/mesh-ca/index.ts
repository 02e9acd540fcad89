/**
 * The mesh CA: the management server's root CA for Istio (RootTrustPolicy `mgmtServerCa`) and the
 * signing of per-cluster intermediate CAs requested over the relay (Relay.SignIntermediate). The root
 * is generated once and persisted through a storage callback, or supplied by the user (secretRef).
 * See README.md, "Wiring in the server".
 */
export { createMeshCa, type MeshCa, type MeshCaOptions, type ResolveMeshRoot } from "./mesh-ca.js";
export { createMeshRootResolver, type MeshRootResolverOptions, type ReadCaSecret } from "./resolver.js";
export {
  generateMeshRoot,
  loadOrCreateMeshRoot,
  MESH_ROOT_DEFAULTS,
  MESH_ROOT_KEYS,
  MeshCaConfigError,
  meshRootFromPem,
  meshRootPemFromSecretData,
  meshRootPemToSecretData,
  splitPemCertificates,
  topRootPem,
  type GenerateMeshRootOptions,
  type MeshRoot,
  type MeshRootPem,
  type MeshRootStorage,
} from "./root.js";
export { findIssuedCertificate, issuanceGrantOf, ISSUED_CERTIFICATE, trustDomainOfSpiffeId, type CaRef, type IsIssuanceAllowed, type IssuanceGrant, type IssuanceRequest } from "./issued.js";
export { createFileMeshRootStorage } from "./file-storage.js";
export { NAME_CONSTRAINTS_OID } from "../pki/index.js";
