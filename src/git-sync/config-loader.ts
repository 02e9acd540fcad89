/** The real loader (src/config) behind git-sync's `DesiredStateLoader` seam. */
import { loadDesiredState, updateDesiredState, type DesiredState, type LoadOptions } from "../config/index.js";
import type { DesiredStateLoader } from "./source.js";

export function createConfigLoader(options: LoadOptions = {}): DesiredStateLoader<DesiredState> {
  return {
    load: (files) => loadDesiredState(files, options),
    update: (prev, changed, removed) => updateDesiredState(prev, changed, removed),
  };
}
