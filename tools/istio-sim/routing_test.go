package sim

import (
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"istio.io/istio/pilot/pkg/simulation"
	"istio.io/istio/pilot/test/xdstest"
)

// Gloo API reference (route_table.proto, `virtualGateways`): with `workloadSelectors: []` and a
// virtual gateway, the table applies "to the virtual gateway ... and no sidecars"; with
// `workloadSelectors: [{}]`, to the gateway "and sidecars of all the workloads for the workspace";
// with no virtual gateway and `workloadSelectors: []`, to "sidecars of all the workloads".
// Case test/fixtures/translate/gateway-only-route-table, cluster1: ingress Service port 80 →
// container port 8080 (the VirtualGateway listener is port 80 of the gateway Service; Istio's
// Gateway server listens on the pod's port).
func TestRouteTableWorkloadSelectors(t *testing.T) {
	sc := load(t, "gateway-only-route-table", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	sidecar := sc.xds("productpage-v1")
	const (
		productpage = "outbound|9080||productpage.bookinfo-frontends.svc.cluster.local"
		reviews     = "outbound|9080||reviews.bookinfo-backends.svc.cluster.local"
		details     = "outbound|9080||details.bookinfo-backends.svc.cluster.local"
	)

	check(t, "gateway-only table routes on the gateway", func(t *testing.T) {
		gw.call(httpGateway("bookinfo.example.com", 8080, "/productpage")).Matches(t, simulation.Result{ListenerMatched: "0.0.0.0_8080", ClusterMatched: productpage})
	})
	check(t, "gateway-only table is not on sidecars", func(t *testing.T) {
		for _, rc := range sidecar.sim.Routes {
			for _, vh := range rc.VirtualHosts {
				for _, r := range vh.Routes {
					if r.Name == "productpage-productpage" {
						t.Fatalf("sidecar route config %s virtual host %s carries the gateway-only route", rc.Name, vh.Name)
					}
				}
			}
		}
		// The sidecar's request for productpage takes Istio's default route to the Service.
		sidecar.call(httpOut("productpage.bookinfo-frontends.svc.cluster.local", 9080, "/productpage")).Matches(t, simulation.Result{RouteMatched: "default", ClusterMatched: productpage})
	})
	check(t, "workloadSelectors [{}] with a gateway routes on the gateway", func(t *testing.T) {
		gw.call(httpGateway("reviews.bookinfo-backends.svc.cluster.local", 8080, "/")).Matches(t, simulation.Result{RouteMatched: "reviews-reviews", ClusterMatched: reviews})
	})
	check(t, "workloadSelectors [{}] with a gateway routes on sidecars", func(t *testing.T) {
		sidecar.call(httpOut("reviews.bookinfo-backends.svc.cluster.local", 9080, "/")).Matches(t, simulation.Result{RouteMatched: "reviews-reviews", ClusterMatched: reviews})
	})
	check(t, "no gateway and workloadSelectors [] routes on sidecars", func(t *testing.T) {
		sidecar.call(httpOut("details.bookinfo-backends.svc.cluster.local", 9080, "/")).Matches(t, simulation.Result{RouteMatched: "details-details", ClusterMatched: details})
	})
	check(t, "no gateway and workloadSelectors [] is not on the gateway", func(t *testing.T) {
		// Only the gateway-only table's `/productpage` route answers other hosts on the gateway.
		gw.call(httpGateway("details.bookinfo-backends.svc.cluster.local", 8080, "/")).Matches(t, simulation.Result{Error: simulation.ErrNoRoute})
	})
	if t.Failed() {
		t.Log(xdstest.DumpList(t, gw.sim.Routes))
	}
}

// Gloo API reference (route_table.proto, `workloadSelectors`): an east-west table applies to the
// sidecars of the selected workloads only. Case test/fixtures/translate/eastwest-basic, cluster1:
// the reviews table selects `app: productpage`; its first route sends `end-user: jason` to subset
// version v2, the second everything else to version v1.
func TestRouteTableWorkloadSelectorLabels(t *testing.T) {
	sc := load(t, "eastwest-basic", "cluster1")
	const host = "reviews.bookinfo-backends.svc.cluster.local"
	const v1 = "outbound|9080|version-v1|reviews.bookinfo-backends.svc.cluster.local"
	const v2 = "outbound|9080|version-v2|reviews.bookinfo-backends.svc.cluster.local"

	check(t, "the selected workload's sidecar gets the table's routes, in order", func(t *testing.T) {
		x := sc.xds("productpage-v1")
		vh := x.virtualHostOf(x.call(httpOut(host, 9080, "/")))
		var got []string
		for _, r := range vh.Routes {
			got = append(got, r.GetRoute().GetCluster())
		}
		if len(vh.Routes) != 2 || got[0] != v2 || got[1] != v1 {
			t.Fatalf("routes of %s to %v, want [%s %s]", vh.Name, got, v2, v1)
		}
		hm := vh.Routes[0].GetMatch().GetHeaders()
		if len(hm) != 1 || hm[0].Name != "end-user" || hm[0].GetStringMatch().GetExact() != "jason" {
			t.Errorf("first route header matchers %v, want end-user exactly jason", hm)
		}
		if len(vh.Routes[1].GetMatch().GetHeaders()) != 0 {
			t.Errorf("the fallback route matches headers %v", vh.Routes[1].GetMatch().GetHeaders())
		}
	})
	check(t, "another workload's sidecar keeps the Service's default route", func(t *testing.T) {
		x := sc.xds("reviews-v1")
		x.call(httpOut(host, 9080, "/")).Matches(t, simulation.Result{ClusterMatched: "outbound|9080||reviews.bookinfo-backends.svc.cluster.local"})
	})
}

// Gloo API reference, VirtualGateway listeners: `httpsRedirect` answers plain HTTP with a
// redirect to HTTPS; `tls{mode: SIMPLE, secretName}` terminates TLS with that Secret for the hosts
// of `allowedRouteTables`, then routes HTTP. Case test/fixtures/translate/gateway-tls, cluster1
// (Service ports 80 → 8080, 443 → 8443).
func TestGatewayTLSListeners(t *testing.T) {
	sc := load(t, "gateway-tls", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"

	check(t, "httpsRedirect answers plain HTTP with a redirect", func(t *testing.T) {
		gw.call(httpGateway(host, 8080, "/")).Matches(t, simulation.Result{Error: simulation.ErrTLSRedirect})
	})
	check(t, "SIMPLE TLS terminates with the listener's secret and routes the host", func(t *testing.T) {
		httpsWithSecret(t, gw, host, 8443, "outbound|9080||productpage.bookinfo-frontends.svc.cluster.local", "bookinfo-cert")
	})
	check(t, "plain HTTP to the TLS port is refused", func(t *testing.T) {
		r := gw.call(simulation.Call{Port: 8443, Protocol: simulation.HTTP, HostHeader: host, CallMode: simulation.CallModeGateway})
		if r.Error == nil {
			t.Errorf("plaintext on 8443 was routed to %s", r.ClusterMatched)
		}
	})
}

// Gloo API reference, RouteTable matchers `port` (HTTP, TCP and TLS): the port of the virtual
// gateway listener the request arrives on; a VirtualGateway listener's port is the gateway
// Service's port. Istio matches a gateway route's port against the Gateway server's port, which
// is the Service's target port where the gateway pod listens. Case
// test/fixtures/translate/gateway-port-matcher, cluster1: gateway Service ports 80→8080,
// 443→8443 (SIMPLE TLS), 9443→9444 (TLS passthrough); one route per listener port.
func TestGatewayRouteMatcherPorts(t *testing.T) {
	sc := load(t, "gateway-port-matcher", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const (
		host        = "bookinfo.example.com"
		productpage = "outbound|9080||productpage.bookinfo-frontends.svc.cluster.local"
		reviews     = "outbound|9080||reviews.bookinfo-backends.svc.cluster.local"
		details     = "outbound|9080||details.bookinfo-backends.svc.cluster.local"
	)
	check(t, "a port 80 matcher routes plain HTTP arriving on the port 80 listener", func(t *testing.T) {
		gw.call(httpGateway(host, 8080, "/")).Matches(t, simulation.Result{ClusterMatched: reviews})
	})
	check(t, "a port 443 matcher routes HTTPS arriving on the port 443 listener", func(t *testing.T) {
		c := simulation.Call{Port: 8443, Protocol: simulation.HTTP, TLS: simulation.TLS, HostHeader: host, CallMode: simulation.CallModeGateway}
		gw.call(c).Matches(t, simulation.Result{ClusterMatched: productpage})
	})
	check(t, "a port 9443 TLS matcher routes passthrough TLS arriving on the port 9443 listener by SNI", func(t *testing.T) {
		c := simulation.Call{Port: 9444, Protocol: simulation.TCP, TLS: simulation.TLS, Sni: "secure.example.com", CallMode: simulation.CallModeGateway}
		gw.call(c).Matches(t, simulation.Result{ClusterMatched: details})
	})
}

// Gloo API reference, VirtualGateway `listeners[].tls` without `mode`: the enum's zero value is
// PASSTHROUGH, and appProtocol is inferred as HTTPS for an `http` listener with TLS settings and
// TLS for a tcp listener. So the http listener terminates TLS with its secret (never plain HTTP)
// and the tcp listener passes TLS through by SNI. Case test/fixtures/translate/gateway-tls-mode-unset,
// cluster1: 443→8443 http with tls {secretName}, 9443→9444 tcp with tls {secretName}.
func TestGatewayTLSModeUnset(t *testing.T) {
	sc := load(t, "gateway-tls-mode-unset", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	check(t, "the http listener terminates TLS with its secret and routes the host", func(t *testing.T) {
		httpsWithSecret(t, gw, host, 8443, "outbound|9080||productpage.bookinfo-frontends.svc.cluster.local", "bookinfo-cert")
	})
	check(t, "the http listener refuses plain HTTP", func(t *testing.T) {
		r := gw.call(simulation.Call{Port: 8443, Protocol: simulation.HTTP, HostHeader: host, CallMode: simulation.CallModeGateway})
		if r.Error == nil {
			t.Errorf("plaintext on 8443 was routed to %s", r.ClusterMatched)
		}
	})
	check(t, "the tcp listener passes TLS through to the route's destination by SNI", func(t *testing.T) {
		c := simulation.Call{Port: 9444, Protocol: simulation.TCP, TLS: simulation.TLS, Sni: "secure.example.com", CallMode: simulation.CallModeGateway}
		gw.call(c).Matches(t, simulation.Result{ClusterMatched: "outbound|9080||details.bookinfo-backends.svc.cluster.local"})
	})
}

// httpsWithSecret sends an HTTPS request for host to the gateway's pod port and checks that the
// filter chain terminates TLS with the Kubernetes Secret `secret` and routes to `cluster`.
func httpsWithSecret(t *testing.T, gw *xdsOf, host string, port int, cluster, secret string) {
	t.Helper()
	var got string
	c := simulation.Call{Port: port, Protocol: simulation.HTTP, TLS: simulation.TLS, HostHeader: host, CallMode: simulation.CallModeGateway,
		CustomListenerValidations: []simulation.CustomFilterChainValidation{func(fc *listener.FilterChain) error {
			ctx := &tls.DownstreamTlsContext{}
			if err := fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
				return err
			}
			if s := ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs(); len(s) > 0 {
				got = s[0].Name
			}
			return nil
		}}}
	gw.call(c).Matches(t, simulation.Result{ClusterMatched: cluster})
	if want := "kubernetes://" + secret; got != want {
		t.Errorf("TLS certificate from %q, want the Secret %s (%s)", got, secret, want)
	}
}
