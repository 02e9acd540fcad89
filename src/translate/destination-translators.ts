/**
 * The translate-destinations translators, in the order the workspace stage runs them. Registered in
 * workspace.ts `KIND_TRANSLATORS` with one spread; tests and benchmarks can also pass them as
 * `TranslateOptions.translators`.
 */
import type { WorkspaceContext } from "./context.js";
import { translateAccessPolicies } from "./access-policy.js";
import { translateServiceDestinationPolicies } from "./destination-policies.js";
import { translateExternalServices } from "./external-service.js";
import { translateFederation } from "./federation.js";
import { translateRootTrust } from "./root-trust.js";
import { translateTrimProxyConfigPolicies } from "./trim-proxy-config.js";
import type { TranslatorOutput } from "./types.js";
import { translateVirtualDestinations } from "./virtual-destination.js";
import { translateWorkspaceSettings } from "./workspace-settings.js";

export const DESTINATION_TRANSLATORS: readonly { readonly name: string; readonly translate: (ctx: WorkspaceContext) => TranslatorOutput }[] = [
  { name: "VirtualDestination", translate: translateVirtualDestinations },
  { name: "ExternalService", translate: translateExternalServices },
  { name: "DestinationPolicies", translate: translateServiceDestinationPolicies },
  { name: "AccessPolicy", translate: translateAccessPolicies },
  { name: "WorkspaceSettings", translate: translateWorkspaceSettings },
  { name: "TrimProxyConfigPolicy", translate: translateTrimProxyConfigPolicies },
  { name: "Federation", translate: translateFederation },
  { name: "RootTrustPolicy", translate: translateRootTrust },
];
