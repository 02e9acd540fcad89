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
/** DER encoding and reading (der.ts): the relay builds and checks its certificates natively with them. */
export { bitString, children, DER_NULL, DER_TRUE, DerError, derToPem, explicit, octetString, oid, oidText, pemToDer, printableString, readTlv, sequence, set, time, tlv, unsignedInteger } from "./der.js";
export type {
  IntermediateCsr,
  IntermediateRefusal,
  IntermediateSigner,
  IntermediateSigningRequest,
  IntermediateSigningResult,
  SignedIntermediate,
  SignIntermediateFn,
} from "./signing.js";
