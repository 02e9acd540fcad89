// The web UI's build: Preact (automatic JSX runtime) bundled by Vite into dist/web, which the
// management server serves at `/` (src/server/web.ts). No CDN, no external font: clusters are often
// air-gapped, and the page must work from the server alone.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/web", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    assetsDir: "assets",
    reportCompressedSize: false,
  },
});
