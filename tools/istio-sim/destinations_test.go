package sim

import (
	"slices"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"istio.io/istio/pilot/pkg/simulation"
)

// upstreamTLS is the TLS context a cluster originates to its endpoints (nil when plaintext).
func upstreamTLS(t *testing.T, c *cluster.Cluster) *tls.UpstreamTlsContext {
	t.Helper()
	ts := c.GetTransportSocket()
	if ts == nil {
		for _, m := range c.GetTransportSocketMatches() {
			if m.Name == "tlsMode-istio" {
				ts = m.TransportSocket
			}
		}
	}
	if ts == nil {
		return nil
	}
	ctx := &tls.UpstreamTlsContext{}
	if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func sanMatches(ctx *tls.UpstreamTlsContext) []string {
	var out []string
	v := ctx.GetCommonTlsContext().GetCombinedValidationContext().GetDefaultValidationContext()
	for _, m := range v.GetMatchTypedSubjectAltNames() {
		out = append(out, m.GetMatcher().GetExact())
	}
	for _, m := range v.GetMatchSubjectAltNames() { //nolint:staticcheck // what Istio sets
		out = append(out, m.GetExact())
	}
	return out
}

// Gloo API reference, VirtualDestination: `hosts` are internal hostnames that route to the backing
// `services` in any cluster; requests from a cluster without a local backing service go to the
// remote cluster's east-west gateway (port `tls`, 15443, SNI passthrough in the default `auto`
// client mode) over Istio mTLS, the backing workloads' identities being the subject alt names.
// Case test/fixtures/translate/dest-vd-remote-only: productpage runs in cluster1 only; its
// east-west gateway is 172.18.1.10:15443.
func TestVirtualDestinationAcrossClusters(t *testing.T) {
	const vdCluster = "outbound|80||productpage.global"
	remote := load(t, "dest-vd-remote-only", "cluster2")
	x := remote.xds("reviews-v2")

	check(t, "the VD host routes to its cluster on a remote client", func(t *testing.T) {
		x.call(httpOut("productpage.global", 80, "/")).Matches(t, simulation.Result{ClusterMatched: vdCluster})
		x.call(httpOut("productpage.mesh.internal", 80, "/")).Matches(t, simulation.Result{ClusterMatched: "outbound|80||productpage.mesh.internal"})
	})
	check(t, "the remote client's endpoint is the backing cluster's east-west gateway", func(t *testing.T) {
		got := x.endpointsByPriority(vdCluster)
		if _, ok := got["172.18.1.10:15443"]; !ok || len(got) != 1 {
			t.Errorf("endpoints of %s = %v, want only cluster1's east-west gateway 172.18.1.10:15443", vdCluster, got)
		}
	})
	check(t, "the remote client originates Istio mTLS with the passthrough SNI and the backing identity", func(t *testing.T) {
		ctx := upstreamTLS(t, x.cluster(vdCluster))
		if ctx == nil {
			t.Fatalf("cluster %s sends plaintext to the east-west gateway", vdCluster)
		}
		if ctx.Sni != "outbound_.80_._.productpage.global" {
			t.Errorf("SNI = %q, want outbound_.80_._.productpage.global (what an AUTO_PASSTHROUGH gateway routes on)", ctx.Sni)
		}
		want := "spiffe://cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage"
		if sans := sanMatches(ctx); !slices.Contains(sans, want) {
			t.Errorf("subject alt names %v, want %s", sans, want)
		}
	})

	local := load(t, "dest-vd-remote-only", "cluster1")
	l := local.xds("reviews-v1")
	check(t, "the VD host resolves to the local backing pods in the backing cluster", func(t *testing.T) {
		l.call(httpOut("productpage.global", 80, "/")).Matches(t, simulation.Result{ClusterMatched: vdCluster})
		got := l.endpointsByPriority(vdCluster)
		pod := ""
		for _, p := range local.spec.Proxies {
			if p.Name == "productpage-v1-0" {
				pod = p.IP + ":9080"
			}
		}
		if _, ok := got[pod]; !ok || len(got) != 1 {
			t.Errorf("endpoints of %s = %v, want the local productpage pod %s (VD port 80 → targetPort 9080)", vdCluster, got, pod)
		}
	})
	// The Gloo reference: the east-west gateway serves "tls" (15443) with AUTO_PASSTHROUGH, routing on
	// the SNI the remote clients send (checked above) to the backing cluster's own endpoints.
	ew := local.xds("istio-eastwestgateway")
	check(t, "the backing cluster's east-west gateway passes the remote clients' SNI through to the VD host", func(t *testing.T) {
		// istiod's AUTO_PASSTHROUGH chains match the cluster-name SNI and Istio's mTLS ALPNs only.
		c := simulation.Call{Port: 15443, Protocol: simulation.TCP, TLS: simulation.TLS, Sni: "outbound_.80_._.productpage.global", Alpn: "istio", CallMode: simulation.CallModeGateway}
		ew.call(c).Matches(t, simulation.Result{ClusterMatched: "outbound_.80_._.productpage.global"})
	})
}

// Gloo API reference: FailoverPolicy `localityMappings` from region us-east-1 to us-west-2 then
// eu-west-1 on the VirtualDestination's traffic; OutlierDetectionPolicy with its defaults
// (consecutiveErrors 5, interval 10s, baseEjectionTime 30s, maxEjectionPercent 100). Istio
// (DestinationRule localityLbSetting.failover): endpoints in the client's own locality are
// preferred, the `to` region is the next priority; failover needs outlier detection.
// Case test/fixtures/translate/dest-policy-failover-outlier, client productpage in cluster1
// (us-east-1/us-east-1a); reviews backs the VD in cluster1 and cluster2 (us-west-2).
func TestFailoverAndOutlierDetection(t *testing.T) {
	const vdCluster = "outbound|9080||reviews.global"
	sc := load(t, "dest-policy-failover-outlier", "cluster1")
	x := sc.xds("productpage-v1")
	c := x.cluster(vdCluster)

	check(t, "outlier detection with Gloo's defaults on the VD's cluster", func(t *testing.T) {
		od := c.GetOutlierDetection()
		if od == nil {
			t.Fatalf("cluster %s has no outlier detection", vdCluster)
		}
		if od.GetConsecutive_5Xx().GetValue() != 5 || od.GetInterval().AsDuration() != 10*time.Second ||
			od.GetBaseEjectionTime().AsDuration() != 30*time.Second || od.GetMaxEjectionPercent().GetValue() != 100 {
			t.Errorf("outlier detection %v, want 5 consecutive 5xx, 10s interval, 30s ejection, 100%%", od)
		}
	})
	check(t, "local endpoints first, the us-west-2 failover target next", func(t *testing.T) {
		got := x.endpointsByPriority(vdCluster)
		localPod := ""
		for _, p := range sc.spec.Proxies {
			if p.Name == "reviews-v1-0" {
				localPod = p.IP + ":9080"
			}
		}
		local, okLocal := got[localPod]
		remote, okRemote := got["172.18.2.10:15443"]
		if !okLocal || !okRemote {
			t.Fatalf("endpoints of %s = %v, want the local reviews pod %s and cluster2's east-west gateway", vdCluster, got, localPod)
		}
		if local != 0 || remote <= local {
			t.Errorf("priorities: local %d, us-west-2 %d; want local 0 and the failover region after it", local, remote)
		}
	})
	check(t, "the client's own Service keeps only its own endpoints", func(t *testing.T) {
		// The VD's remote endpoints are WorkloadEntries carrying the backing pods' labels: Istio lets a
		// Kubernetes Service select WorkloadEntries of its namespace, so the plain Service host must
		// not pick up the east-west gateway address.
		svc := "outbound|9080||reviews.bookinfo-backends.svc.cluster.local"
		got := x.endpointsByPriority(svc)
		for ep := range got {
			if ep == "172.18.2.10:9080" || ep == "172.18.2.10:15443" {
				t.Errorf("endpoints of %s = %v include cluster2's east-west gateway", svc, got)
			}
		}
	})
}
