// SSHSIG verification against signatures made by the real ssh-keygen (-Y sign), for each key type
// git users sign with, and the attacks a verifier must refuse: a modified payload, another namespace,
// a key that is not allowed; and the allowed-signers parser's errors.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createCommitVerifier, parseAllowedSigners, splitSignedCommit } from "../../src/git-sync/index.js";
import { useTempDirs } from "../helpers/tmp.js";

const tempDir = useTempDirs("gitmesh-sshsig-");

function keyAndSign(type: string[], message: string, namespace = "git"): { pub: string; sig: string } {
  const dir = tempDir();
  execFileSync("ssh-keygen", ["-q", ...type, "-N", "", "-C", "k", "-f", join(dir, "k")]);
  writeFileSync(join(dir, "m"), message);
  execFileSync("ssh-keygen", ["-Y", "sign", "-n", namespace, "-f", join(dir, "k"), join(dir, "m")], { stdio: "pipe" });
  return { pub: readFileSync(join(dir, "k.pub"), "utf8").trim(), sig: readFileSync(join(dir, "m.sig"), "utf8") };
}

describe("SSH commit signatures", () => {
  it.each([
    ["ed25519", ["-t", "ed25519"]],
    ["rsa", ["-t", "rsa", "-b", "2048"]],
    ["ecdsa p-256", ["-t", "ecdsa", "-b", "256"]],
  ])("%s: a signature by an allowed key verifies; a modified payload does not", async (_name, type) => {
    const payload = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@example.test> 1 +0000\ncommitter A <a@example.test> 1 +0000\n\nchange\n";
    const { pub, sig } = keyAndSign(type, payload);
    const v = await createCommitVerifier({ allowedSigners: `a@example.test ${pub}\n` });
    expect(await v.verify(payload, sig)).toMatchObject({ ok: true, signer: expect.stringMatching(/^a@example\.test \(SSH SHA256:/) as string });
    expect(await v.verify(payload.replace("change", "chAnge"), sig)).toMatchObject({ ok: false, reason: expect.stringContaining("does not match") as string });
  });

  it("refuses another namespace, an unknown key, a key limited to other namespaces, and an unsigned commit", async () => {
    const { pub, sig } = keyAndSign(["-t", "ed25519"], "payload", "file");
    const v = await createCommitVerifier({ allowedSigners: `a@example.test ${pub}\n` });
    expect(await v.verify("payload", sig)).toMatchObject({ ok: false, reason: expect.stringContaining('namespace "file"') as string });
    const other = keyAndSign(["-t", "ed25519"], "payload");
    expect(await v.verify("payload", other.sig)).toMatchObject({ ok: false, reason: expect.stringContaining("not in the allowed signers") as string });
    const limited = await createCommitVerifier({ allowedSigners: `a@example.test namespaces="file" ${other.pub}\n` });
    expect((await limited.verify("payload", other.sig)).ok).toBe(false);
    expect(await v.verify("payload", undefined)).toEqual({ ok: false, reason: "the commit is not signed" });
  });

  it("the allowed-signers parser names the line it cannot read", () => {
    expect(() => parseAllowedSigners("# comment\n\nalice@example.test not-a-key\n")).toThrow(/allowed signers line 3/);
    expect(() => parseAllowedSigners('* cert-authority ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ\n')).toThrow(/cert-authority keys are not supported/);
  });

  it("splits a raw commit into the signed payload and its multi-line signature", () => {
    const raw = "tree t\nparent p\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\ngpgsig -----BEGIN SSH SIGNATURE-----\n U1NI\n -----END SSH SIGNATURE-----\n\nmessage\n\nbody\n";
    expect(splitSignedCommit(raw)).toEqual({
      payload: "tree t\nparent p\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nmessage\n\nbody\n",
      signature: "-----BEGIN SSH SIGNATURE-----\nU1NI\n-----END SSH SIGNATURE-----",
    });
  });
});
