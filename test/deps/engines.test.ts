/**
 * `npm ci` on the Node the README names prints no EBADENGINE warning: no package the lock file installs,
 * and none that is installed, declares an `engines.node` range that excludes the running Node, nor the
 * oldest Node 20 release gitmesh supports. (npm warns exactly when a package's `engines.node` does not
 * admit the running Node; it reads that range from the lock file and the package.json of what it installs.)
 */
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const require = createRequire(import.meta.url);
const semver = require("semver") as { satisfies(version: string, range: string): boolean; minVersion(range: string): { version: string } | null };

interface PackageJson {
  readonly name?: string;
  readonly version?: string;
  readonly engines?: { readonly node?: string };
}

const own = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as PackageJson;
const readme = readFileSync(join(ROOT, "README.md"), "utf8");

/** Every package.json under node_modules, nested node_modules included (scoped packages too). */
function installed(dir: string, seen = new Set<string>()): { path: string; pkg: PackageJson }[] {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return [];
  }
  if (seen.has(real)) return [];
  seen.add(real);
  const out: { path: string; pkg: PackageJson }[] = [];
  for (const entry of readdirSync(real, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const path = join(real, entry.name);
    if (entry.name.startsWith("@")) {
      out.push(...installed(path, seen));
      continue;
    }
    if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
    try {
      out.push({ path, pkg: JSON.parse(readFileSync(join(path, "package.json"), "utf8")) as PackageJson });
    } catch {
      continue; // not a package (a .bin directory, a stray folder)
    }
    out.push(...installed(join(path, "node_modules"), seen));
  }
  return out;
}

/** `name@version wants node <range>` for each package whose engines.node excludes `version`. */
function excluding(packages: readonly { path: string; pkg: PackageJson }[], version: string): string[] {
  return packages.filter(({ pkg }) => pkg.engines?.node !== undefined && !semver.satisfies(version, pkg.engines.node)).map(({ path, pkg }) => `${pkg.name ?? path}@${pkg.version ?? "?"} wants node ${pkg.engines?.node ?? ""} (${path})`);
}

describe("no EBADENGINE on the Node gitmesh names", () => {
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, PackageJson> };
  const locked = Object.entries(lock.packages)
    .filter(([path]) => path !== "")
    .map(([path, pkg]) => ({ path, pkg }));
  const oldest = semver.minVersion(own.engines?.node ?? "")?.version ?? "";

  it("package.json and the README name the same Node major", () => {
    expect(oldest).toMatch(/^20\./);
    expect(readme).toContain("Node.js 20 or later");
  });

  it("the lock file installs nothing whose engines.node excludes the running Node", () => {
    expect(locked.length).toBeGreaterThan(100);
    expect(excluding(locked, process.version)).toEqual([]);
  });

  it("nothing installed in node_modules declares an engines.node that excludes the running Node", () => {
    const all = installed(join(ROOT, "node_modules"));
    expect(all.length).toBeGreaterThan(100);
    expect(excluding(all, process.version)).toEqual([]);
  });
});
