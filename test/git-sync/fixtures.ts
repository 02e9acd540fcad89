/** Small valid Gloo v2 configuration files and a loader that records what it was handed. */
import type { DesiredState } from "../../src/config/index.js";
import { createConfigLoader, type DesiredStateLoader, type GitSourceFile } from "../../src/git-sync/index.js";

export const workspace = (name: string) => `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata:
  name: ${name}
  namespace: gloo-mesh
spec:
  workloadClusters:
  - name: '*'
    namespaces:
    - name: ${name}
`;

export const routeTable = (ns: string, name: string, host: string) => `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata:
  name: ${name}
  namespace: ${ns}
spec:
  hosts:
  - ${host}
  http:
  - name: main
    forwardTo:
      destinations:
      - ref:
          name: svc
          namespace: ${ns}
        port:
          number: 80
`;

/** Schema error on line 6 (`hosts` must be a list). */
export const brokenRouteTable = (ns: string, name: string) => `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata:
  name: ${name}
  namespace: ${ns}
spec:
  hosts: 5
  http: []
`;

export interface RecordingLoader extends DesiredStateLoader<DesiredState> {
  /** One entry per call: which paths were handed in as changed/loaded, and which as removed. */
  readonly calls: { kind: "load" | "update"; paths: string[]; removed: string[] }[];
}

export function recordingLoader(): RecordingLoader {
  const calls: RecordingLoader["calls"] = [];
  const real = createConfigLoader();
  const paths = (files: readonly GitSourceFile[]) => files.map((f) => f.path).sort();
  return {
    calls,
    load(files) {
      calls.push({ kind: "load", paths: paths(files), removed: [] });
      return real.load(files);
    },
    update(prev, changed, removed) {
      calls.push({ kind: "update", paths: paths(changed), removed: [...removed].sort() });
      return real.update(prev, changed, removed);
    },
  };
}
