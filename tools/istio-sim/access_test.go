package sim

import (
	"errors"
	"testing"

	"istio.io/istio/pilot/pkg/simulation"
	"istio.io/istio/pilot/test/xdstest"
)

// Gloo API reference, AccessPolicy: `authn.tlsMode: STRICT` admits mTLS only; `authzList` entries
// are OR'ed and the fields inside one entry AND'ed; `allowedClients[].serviceAccountSelector`
// names the clients' service accounts; `allowedPaths` are exact, `prefix*` or `*suffix`;
// `allowedMethods`; `match.request.headers{name: {values, notValues}}`; `allowedIpBlocks` (the
// connection's peer) and `allowedRemoteIpBlocks` (the original client); anything no entry allows is
// denied. Istio: the policy becomes an RBAC filter on the selected workload's inbound HTTP chain,
// service accounts becoming SPIFFE principals `spiffe://<trust domain>/ns/<ns>/sa/<sa>`.
// Case test/fixtures/translate/dest-access-destinations, cluster1: the policy applies to the
// destination `reviews`.
func TestAccessPolicy(t *testing.T) {
	sc := load(t, "dest-access-destinations", "cluster1")
	x := sc.xds("reviews-v1")
	ip := x.proxy.IPAddresses[0]
	inbound := simulation.Call{Address: ip, Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound}

	check(t, "STRICT: the inbound port refuses plaintext", func(t *testing.T) {
		r := x.call(simulation.Call{Address: ip, Port: 9080, Protocol: simulation.HTTP, CallMode: simulation.CallModeInbound})
		if !errors.Is(r.Error, simulation.ErrNoFilterChain) && !errors.Is(r.Error, simulation.ErrMTLSError) {
			t.Errorf("plaintext to reviews:9080 got filter chain %q (error %v), want it refused", r.FilterChainMatched, r.Error)
		}
	})
	h := x.hcmOf(inbound)
	rules := rbacFilter(t, h)
	check(t, "an RBAC filter on the inbound HTTP chain, before the router", func(t *testing.T) {
		names := httpFilterNames(h)
		if rules == nil || indexOf(names, "envoy.filters.http.rbac") > indexOf(names, "envoy.filters.http.router") {
			t.Fatalf("inbound HTTP filters %v, want envoy.filters.http.rbac before the router", names)
		}
	})
	if rules == nil {
		t.Log(xdstest.DumpList(t, x.sim.Listeners))
		return
	}
	const productpage = "spiffe://cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage"
	const ratings = "spiffe://cluster1.local/ns/bookinfo-backends/sa/bookinfo-ratings"
	canary := map[string]string{"x-canary": "true"}
	for _, tc := range []struct {
		name string
		req  request
		want bool
	}{
		{"allows the named client, method, path prefix and header", request{principal: productpage, sourceIP: "10.244.0.9", remoteIP: "10.244.0.9", method: "GET", path: "/reviews/1", headers: canary}, true},
		{"allows a *suffix path", request{principal: productpage, sourceIP: "10.244.0.9", remoteIP: "10.244.0.9", method: "GET", path: "/api/health", headers: canary}, true},
		{"denies another service account", request{principal: ratings, sourceIP: "192.168.0.9", remoteIP: "192.168.0.9", method: "GET", path: "/reviews/1", headers: canary}, false},
		{"denies another method", request{principal: productpage, sourceIP: "192.168.0.9", remoteIP: "192.168.0.9", method: "POST", path: "/reviews/1", headers: canary}, false},
		{"denies a path outside the list", request{principal: productpage, sourceIP: "192.168.0.9", remoteIP: "192.168.0.9", method: "GET", path: "/admin", headers: canary}, false},
		{"denies without the required header value", request{principal: productpage, sourceIP: "192.168.0.9", remoteIP: "192.168.0.9", method: "GET", path: "/reviews/1", headers: map[string]string{}}, false},
		{"denies with a notValues header value", request{principal: productpage, sourceIP: "192.168.0.9", remoteIP: "192.168.0.9", method: "GET", path: "/reviews/1", headers: map[string]string{"x-canary": "true", "x-debug": "1"}}, false},
		{"allows any client from the allowed peer and remote blocks", request{principal: ratings, sourceIP: "10.1.2.3", remoteIP: "203.0.113.7", method: "DELETE", path: "/x", headers: map[string]string{}}, true},
		{"denies the peer block with another remote address", request{principal: ratings, sourceIP: "10.1.2.3", remoteIP: "198.51.100.7", method: "DELETE", path: "/x", headers: map[string]string{}}, false},
	} {
		check(t, tc.name, func(t *testing.T) {
			if got := allowed(t, rules, tc.req); got != tc.want {
				t.Errorf("allowed(%+v) = %v, want %v", tc.req, got, tc.want)
			}
		})
	}
	check(t, "a workload the policy does not select has no ALLOW rules", func(t *testing.T) {
		p := sc.xds("productpage-v1")
		ph := p.hcmOf(simulation.Call{Address: p.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound})
		if r := rbacFilter(t, ph); r != nil && len(r.GetPolicies()) > 0 {
			t.Errorf("productpage's inbound chain carries RBAC policies %v", r.GetPolicies())
		}
	})
}

// Gloo API reference, WorkspaceSettings `options.serviceIsolation`: the workspace's services accept
// only mTLS and only from workloads of the workspace and of the workspaces that import them
// (a service reaches an importer only when it is exported to it). Case
// test/fixtures/translate/dest-settings-isolation, cluster1: bookinfo isolates its services and
// exports only `tier: frontend` Services (productpage) to the gateways workspace; the ops
// workspace imports nothing.
func TestServiceIsolation(t *testing.T) {
	sc := load(t, "dest-settings-isolation", "cluster1")
	const (
		productpageSA = "spiffe://cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage"
		gatewaySA     = "spiffe://cluster1.local/ns/istio-gateways/sa/istio-ingressgateway"
		opsSA         = "spiffe://cluster1.local/ns/ops/sa/tools"
	)
	inbound := func(x *xdsOf) simulation.Call {
		return simulation.Call{Address: x.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound}
	}
	from := func(principal string) request {
		return request{principal: principal, sourceIP: "10.244.0.9", remoteIP: "10.244.0.9", method: "GET", path: "/"}
	}
	reviews := sc.xds("reviews-v1")
	productpage := sc.xds("productpage-v1")
	reviewsRules := rbacFilter(t, reviews.hcmOf(inbound(reviews)))
	productpageRules := rbacFilter(t, productpage.hcmOf(inbound(productpage)))
	if reviewsRules == nil || productpageRules == nil {
		t.Fatal("isolated services have no RBAC filter on their inbound chain")
	}

	check(t, "isolated services refuse plaintext", func(t *testing.T) {
		c := inbound(reviews)
		c.TLS = simulation.Plaintext
		r := reviews.call(c)
		if !errors.Is(r.Error, simulation.ErrNoFilterChain) && !errors.Is(r.Error, simulation.ErrMTLSError) {
			t.Errorf("plaintext to reviews:9080 got filter chain %q (error %v), want it refused", r.FilterChainMatched, r.Error)
		}
	})
	for _, tc := range []struct {
		name  string
		rules func() bool
		want  bool
	}{
		{"a workload of the same workspace reaches reviews", func() bool { return allowed(t, reviewsRules, from(productpageSA)) }, true},
		{"the importing gateways workspace reaches the exported productpage", func() bool { return allowed(t, productpageRules, from(gatewaySA)) }, true},
		{"the importing gateways workspace does not reach reviews, which is not exported", func() bool { return allowed(t, reviewsRules, from(gatewaySA)) }, false},
		{"a workspace that imports nothing reaches neither", func() bool {
			return allowed(t, reviewsRules, from(opsSA)) || allowed(t, productpageRules, from(opsSA))
		}, false},
	} {
		check(t, tc.name, func(t *testing.T) {
			if got := tc.rules(); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// Gloo API reference, WorkspaceSettings `options.serviceIsolation`: "Applying AccessPolicies to
// destinations in this workspace will override the default service isolation behavior." Istio ORs
// the ALLOW policies of a workload, so the AccessPolicy restricts only if the isolation ALLOW is
// not also on its pods. Case test/fixtures/translate/dest-settings-isolation-access, cluster1:
// bookinfo isolates its services; an AccessPolicy allows only productpage to call reviews; ratings
// has no enforceable AccessPolicy (one selects only its v2 pods and is reported as not enforced);
// productpage's AccessPolicy is dry-run only.
func TestServiceIsolationWithAccessPolicy(t *testing.T) {
	sc := load(t, "dest-settings-isolation-access", "cluster1")
	const (
		productpageSA = "spiffe://cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage"
		ratingsSA     = "spiffe://cluster1.local/ns/bookinfo-backends/sa/bookinfo-ratings"
		reviewsSA     = "spiffe://cluster1.local/ns/bookinfo-backends/sa/bookinfo-reviews"
		gatewaySA     = "spiffe://cluster1.local/ns/istio-gateways/sa/istio-ingressgateway"
		opsSA         = "spiffe://cluster1.local/ns/ops/sa/tools"
	)
	from := func(principal string) request {
		return request{principal: principal, sourceIP: "10.244.0.9", remoteIP: "10.244.0.9", method: "GET", path: "/"}
	}
	rulesOf := func(workload string) *xdsOf {
		return sc.xds(workload)
	}
	inboundRules := func(x *xdsOf) func(t *testing.T, r request) bool {
		c := simulation.Call{Address: x.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound}
		rules := rbacFilter(t, x.hcmOf(c))
		return func(t *testing.T, r request) bool {
			t.Helper()
			if rules == nil {
				t.Fatal("no RBAC filter on the inbound chain: every client is allowed")
			}
			return allowed(t, rules, r)
		}
	}
	reviews := inboundRules(rulesOf("reviews-v1"))
	ratingsV1 := inboundRules(rulesOf("ratings-v1"))
	ratingsV2 := inboundRules(rulesOf("ratings-v2"))
	productpage := inboundRules(rulesOf("productpage-v1"))
	for _, tc := range []struct {
		name string
		call func(t *testing.T) bool
		want bool
	}{
		{"the client the AccessPolicy allows reaches reviews", func(t *testing.T) bool { return reviews(t, from(productpageSA)) }, true},
		{"a workload of the same workspace that the AccessPolicy does not allow is denied on reviews", func(t *testing.T) bool { return reviews(t, from(ratingsSA)) }, false},
		{"another workspace's workload is denied on reviews", func(t *testing.T) bool { return reviews(t, from(opsSA)) || reviews(t, from(gatewaySA)) }, false},
		{"ratings without an enforced AccessPolicy keeps isolation: the workspace's workloads reach it", func(t *testing.T) bool { return ratingsV1(t, from(reviewsSA)) && ratingsV2(t, from(reviewsSA)) }, true},
		{"ratings keeps isolation: another workspace's workload is denied", func(t *testing.T) bool { return ratingsV1(t, from(opsSA)) || ratingsV2(t, from(opsSA)) }, false},
		{"a dry-run AccessPolicy leaves isolation in force on productpage: the importing gateway passes", func(t *testing.T) bool { return productpage(t, from(gatewaySA)) }, true},
		{"a dry-run AccessPolicy opens nothing: the client it names is still denied on productpage", func(t *testing.T) bool { return productpage(t, from(opsSA)) }, false},
	} {
		check(t, tc.name, func(t *testing.T) {
			if got := tc.call(t); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}
