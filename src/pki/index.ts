/**
 * X.509 primitives and the intermediate-CA signing contract shared by the relay (transport and relay
 * PKI), the mesh CA (certificate authority) and the agent (cacerts): neither side depends on the other.
 */
export {
  forge,
  forgePublicKeyOf,
  generateRsaKeyPem,
  NAME_CONSTRAINTS_OID,
  NOT_BEFORE_BACKDATE_MS,
  randomSerial,
  signNatively,
  STAMPED_SERIAL_MARKER,
  subjectKeyIdBytes,
  uriNameConstraintsExtension,
} from "./x509.js";
export type {
  IntermediateCsr,
  IntermediateRefusal,
  IntermediateSigner,
  IntermediateSigningRequest,
  IntermediateSigningResult,
  SignedIntermediate,
  SignIntermediateFn,
} from "./signing.js";
