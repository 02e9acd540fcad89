/**
 * Label selectors as Kubernetes defines them (`matchLabels` + `matchExpressions`): the one label
 * matcher of the project — discovery selectors on namespace labels (Istio `meshConfig.discoverySelectors`
 * semantics), pods to the workloads and gateway Services that select them, and Gloo's label maps in
 * translation (src/translate/selectors.ts).
 */

export type Labels = Readonly<Record<string, string>>;

export interface LabelSelectorRequirement {
  readonly key: string;
  /** `In`, `NotIn`, `Exists` or `DoesNotExist`. */
  readonly operator: string;
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Labels;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** True when every label of `selector` is present with the same value in `labels`. */
export function matchesLabels(selector: Labels, labels: Labels): boolean {
  // A key loop, not Object.entries: translation matches selectors against every Service and workload of a
  // fleet, and the entry arrays were 50 MB of garbage per translation of the 100-cluster fleet (#20).
  for (const k in selector) if (labels[k] !== selector[k]) return false;
  return true;
}

/**
 * True when `labels` satisfy the selector. An empty selector (`{}`) matches everything, as in
 * Kubernetes; an unknown operator matches nothing (fail closed).
 */
export function matchesSelector(selector: LabelSelector, labels: Labels): boolean {
  if (selector.matchLabels && !matchesLabels(selector.matchLabels, labels)) return false;
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key);
    const value = labels[req.key];
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
        if (!has || value === undefined || !values.includes(value)) return false;
        break;
      case "NotIn":
        if (has && value !== undefined && values.includes(value)) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
