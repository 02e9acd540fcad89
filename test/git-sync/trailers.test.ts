import { describe, expect, it } from "vitest";
import { allowedDeletions, commitTrailers } from "../../src/git-sync/index.js";

describe("commit trailers", () => {
  it("reads Gitmesh-Allow-Deletion from the trailer block: several lines, commas, `*`, any key case", () => {
    const msg = "drop the apps routes\n\nThey moved.\n\nGitmesh-Allow-Deletion: cluster1, cluster2\nSigned-off-by: A <a@example.com>\ngitmesh-allow-deletion: cluster3\n";
    expect(allowedDeletions(msg)).toEqual({ clusters: ["cluster1", "cluster2", "cluster3"], invalid: [] });
    expect(allowedDeletions("x\n\nGitmesh-Allow-Deletion: *").clusters).toEqual(["*"]);
  });

  it("ignores a trailer quoted in the body, a one-paragraph message, and values that are no cluster name", () => {
    expect(allowedDeletions("Gitmesh-Allow-Deletion: cluster1").clusters).toEqual([]);
    expect(allowedDeletions("subject\n\nGitmesh-Allow-Deletion: cluster1\nis how you would allow it\n\nSigned-off-by: A <a@b>").clusters).toEqual([]);
    expect(allowedDeletions("subject\n\nGitmesh-Allow-Deletion: Cluster_1 ok-2")).toEqual({ clusters: ["ok-2"], invalid: ["Cluster_1"] });
  });

  it("folds continuation lines", () => {
    expect(commitTrailers("s\n\nGitmesh-Allow-Deletion: cluster1,\n  cluster2\n")).toEqual([{ key: "Gitmesh-Allow-Deletion", value: "cluster1, cluster2" }]);
  });
});
